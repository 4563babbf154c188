/// The sender's clock as seen from the local clock: offset **and** drift, from NTP-style timing samples
/// (streaming.md §5.1).
///
/// Queueing only ever adds to a round trip, and an exchange whose legs were delayed unequally is off by half
/// the difference, so the samples with the smallest round trips are the truest. The filter keeps the last
/// `capacity` samples, takes the lowest-delay quarter of them (at least the best three), and fits a line
/// `offset(t) = a + b·(t − t̄)` through those by least squares: `a` is the offset at their mean time and `b`
/// the drift. Until the chosen samples span `minimumSpan` the line is flat through the best sample (a slope
/// from a few samples 20 ms apart would be noise). A slope that is not `significance` standard errors away
/// from zero is noise too, and the line stays flat through the chosen samples' mean: a sender whose clock runs
/// at the receiver's rate (the same host, or one disciplined clock) must not seem to drift by the few ppm
/// that a handful of samples' jitter makes, or the output would leave its in-tune passthrough (§6.1) for
/// nothing. A step of the sender's clock (every sample of the last three more than `stepThreshold` off the
/// line, beyond half the line's best round trip) restarts the filter from those samples. A step smaller than
/// that allowance (`stepThreshold` at least, more while the best round trip is long) is not seen as one: it is
/// fitted among the older samples and followed as they age out.
///
/// Pure: no clock of its own; every time is given.
public struct ClockOffsetEstimator: Sendable {
    public struct Sample: Sendable, Equatable {
        public var localTime: UInt64
        /// Sender minus local, ns.
        public var offset: Int64
        /// Round trip, ns.
        public var delay: Int64

        public init(localTime: UInt64, offset: Int64, delay: Int64) {
            self.localTime = localTime
            self.offset = offset
            self.delay = delay
        }
    }

    public private(set) var samples: [Sample] = []
    public let capacity: Int
    /// Below this span of the chosen samples the drift is taken as zero, ns.
    public let minimumSpan: UInt64
    /// Bounds the fitted drift: real crystals are within ±200 ppm; a larger slope is noise or an attack.
    public let maximumDriftPPM: Double
    /// A sample this far off the line, beyond half the line's best round trip, is an outlier; three in a row
    /// are a step of the sender's clock, ns.
    public let stepThreshold: Int64

    /// The fitted line: offset at `referenceTime` (local), and slope (ns of offset per ns of local time).
    private var line: (referenceTime: UInt64, offset: Double, slope: Double)?
    /// The best sample's round trip, ns.
    public private(set) var delay: Int64?
    /// How many samples were dropped as outliers, and how many steps restarted the filter.
    public private(set) var outliers = 0
    public private(set) var steps = 0

    /// The least error a sample's offset is taken to have, as a share of the best round trip.
    public let delayShare: Double
    /// How many standard errors from zero a fitted slope must be to count as drift.
    public let significance: Double

    public init(capacity: Int = 64, minimumSpan: UInt64 = 2_000_000_000, maximumDriftPPM: Double = 500,
                stepThreshold: Int64 = 5_000_000, significance: Double = 5, delayShare: Double = 0.29) {
        self.delayShare = delayShare
        self.capacity = capacity
        self.significance = significance
        self.minimumSpan = minimumSpan
        self.maximumDriftPPM = maximumDriftPPM
        self.stepThreshold = stepThreshold
    }

    /// Sender minus local at local time `time`, ns; nil before the first sample.
    public func offset(at time: UInt64) -> Int64? {
        guard let line else { return nil }
        let since = Double(Int64(bitPattern: time &- line.referenceTime))
        return Int64((line.offset + line.slope * since).rounded())
    }

    /// The offset at the newest sample's time (for statistics).
    public var offset: Int64? { samples.last.flatMap { offset(at: $0.localTime) } }

    /// Drift of the sender's clock relative to the local one, ppm; nil until the line has a slope.
    public var driftPPM: Double? {
        guard let line, chosenSpan >= minimumSpan else { return nil }
        return line.slope * 1e6
    }

    private var chosenSpan: UInt64 = 0
    private var recentOutliers = 0

    public mutating func add(localTime: UInt64, offset: Int64, delay: Int64) {
        guard delay >= 0 else { return }  // impossible unless a clock stepped: ignore
        let sample = Sample(localTime: localTime, offset: offset, delay: delay)
        // Off the line by more than `stepThreshold` beyond what the line's best round trip allows (a sample is
        // true only to within half its round trip). A line drawn through first answers whose round trips were
        // long is off by up to half of them, and the first answer with a short one corrects it at once, instead
        // of being taken for an outlier, and three such for a step. A long round trip of the sample's own
        // widens nothing: once the line is good, such a sample is an outlier as before. (In doubles, so that
        // no offset given can overflow the difference.)
        let allowed = Double(stepThreshold) + Double(self.delay ?? 0) / 2
        if let predicted = self.offset(at: localTime), abs(Double(offset) - Double(predicted)) > allowed {
            recentOutliers += 1
            outliers += 1
            if recentOutliers < 3 {
                samples.append(sample)
                trim()
                return  // kept, but not fitted until it proves to be a step
            }
            // Three in a row: the sender's clock stepped. Start again from the samples after the step.
            steps += 1
            samples = samples.suffix(recentOutliers - 1) + [sample]
            recentOutliers = 0
        } else {
            // The outliers just before this sample were not a step: forget them.
            samples.removeLast(recentOutliers)
            recentOutliers = 0
            samples.append(sample)
            trim()
        }
        fit()
    }

    private mutating func trim() {
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
    }

    /// Fits the line through the lowest-delay quarter of the samples that agree with it.
    private mutating func fit() {
        let usable = recentOutliers > 0 ? Array(samples.dropLast(recentOutliers)) : samples
        guard !usable.isEmpty else { return }
        // Lowest delay first; of equal delays the newest, which says most about now.
        let chosen = usable.sorted { ($0.delay, $1.localTime) < ($1.delay, $0.localTime) }.prefix(max(3, usable.count / 4))
        let best = chosen[chosen.startIndex]
        delay = best.delay
        let first = chosen.map(\.localTime).min()!
        let last = chosen.map(\.localTime).max()!
        chosenSpan = last - first
        guard chosen.count >= 3, chosenSpan >= minimumSpan else {
            line = (best.localTime, Double(best.offset), 0)
            return
        }
        // Least squares on times relative to the first chosen sample (doubles keep ns exactly for days).
        let xs = chosen.map { Double($0.localTime - first) }
        let ys = chosen.map { Double($0.offset) }
        let n = Double(chosen.count)
        let mx = xs.reduce(0, +) / n
        let my = ys.reduce(0, +) / n
        var sxx = 0.0
        var sxy = 0.0
        for (x, y) in zip(xs, ys) {
            sxx += (x - mx) * (x - mx)
            sxy += (x - mx) * (y - my)
        }
        let bound = maximumDriftPPM * 1e-6
        let fitted = sxx > 0 ? sxy / sxx : 0
        // The slope's standard error, from the residuals' spread, and never less than a share of the best
        // round trip: an exchange's offset is true only to within half its round trip, and with three samples
        // the residuals have one degree of freedom and can be small by chance; the round trip cannot.
        var residuals = 0.0
        for (x, y) in zip(xs, ys) {
            let r = y - (my + fitted * (x - mx))
            residuals += r * r
        }
        let floor = Double(best.delay) * delayShare
        let variance = max(residuals / max(1, n - 2), floor * floor)
        let standardError = sxx > 0 ? (variance / sxx).squareRoot() : .infinity
        let slope = abs(fitted) > significance * standardError ? min(max(fitted, -bound), bound) : 0
        line = (first + UInt64(mx.rounded()), my, slope)
    }
}
