/// Estimates the sender clock's offset from the local clock from NTP-style timing samples
/// (streaming.md §5): of the last 16 samples, the one with the smallest round trip wins, because queueing
/// delay only ever adds to a round trip and skews the offset. Drift is the least-squares slope of the
/// offsets over time.
public struct ClockOffsetEstimator: Sendable {
    public struct Sample: Sendable {
        public var localTime: UInt64
        public var offset: Int64
        public var delay: Int64
    }

    public private(set) var samples: [Sample] = []
    public let capacity: Int
    /// Sender minus local, ns, from the sample with the smallest round trip; nil before the first sample.
    /// Kept up to date by `add`, because the audio thread reads it for every block.
    public private(set) var offset: Int64?
    /// The best sample's round trip, ns.
    public private(set) var delay: Int64?

    public init(capacity: Int = 16) { self.capacity = capacity }

    public mutating func add(localTime: UInt64, offset: Int64, delay: Int64) {
        guard delay >= 0 else { return }  // impossible unless a clock stepped: ignore
        samples.append(Sample(localTime: localTime, offset: offset, delay: delay))
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        let best = samples.min { $0.delay < $1.delay }
        self.offset = best?.offset
        self.delay = best?.delay
    }

    /// Drift in parts per million (sender relative to local), from at least 4 samples; nil before.
    public var driftPPM: Double? {
        guard samples.count >= 4, let first = samples.first else { return nil }
        let xs = samples.map { Double($0.localTime &- first.localTime) }
        let ys = samples.map { Double($0.offset) }
        let mx = xs.reduce(0, +) / Double(xs.count)
        let my = ys.reduce(0, +) / Double(ys.count)
        let sxx = zip(xs, xs).map { ($0 - mx) * ($1 - mx) }.reduce(0, +)
        guard sxx > 0 else { return nil }
        let sxy = zip(xs, ys).map { ($0 - mx) * ($1 - my) }.reduce(0, +)
        return sxy / sxx * 1e6
    }
}
