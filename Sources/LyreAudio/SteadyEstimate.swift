/// A sound server's estimate of when the next frame written is heard (`PCMSink.estimatesPresentation`), made
/// steady.
///
/// What the server plays moves at its rate: each block is heard its own length after the one before. Its
/// estimate of that wanders from block to block: through PulseAudio's `pulse` PCM on a null sink, over 10 s
/// of a session, ±55 µs between the 5th and 95th percentiles of block-to-block change, ±180 µs between the 1st
/// and 99th, and single blocks up to 5 ms off and back. Taken as it comes, that is more than the 2 samples
/// (42 µs) the playout stays in tune within (`Playout.tuneRelease`), so it left tune and steered for nothing:
/// a song through PipeWire came out a sample later from near its start.
///
/// So a block's presentation is the timeline the writes make (the first estimate, then each block's length
/// after the last), moved by the median of the last `window` estimates' differences from it: one block's
/// error does not move it, a step in the estimate moves it once it is in half of them. A difference more
/// than `stepNanoseconds` from that median (the server's stream ran dry or was restarted) is taken at the
/// next block that agrees with it, and the window starts again from the two; a single block that far off is
/// passed over, so that it does not make two jumps, there and back.
struct SteadyEstimate {
    static let window = 63
    static let stepNanoseconds: Int64 = 50_000_000
    private static let frameNanoseconds = 1e9 / 48000

    /// The first estimate since the timeline began, and the frames written since.
    private var origin: UInt64?
    private var written: UInt64 = 0
    private var differences: [Int64] = { var window: [Int64] = []; window.reserveCapacity(SteadyEstimate.window); return window }()
    /// The window sorted, kept to sort into: nothing is allocated per block on the audio thread.
    private var sorted: [Int64] = { var window: [Int64] = []; window.reserveCapacity(SteadyEstimate.window); return window }()
    /// Where the oldest difference is, once the window is full.
    private var next = 0
    private var median: Int64 = 0
    /// A difference more than `stepNanoseconds` from the median, waiting for the next block to agree.
    private var pendingStep: Int64?

    /// The steady presentation time of the next frame written, given the server's `estimate` of it.
    mutating func presentation(estimate: UInt64) -> UInt64 {
        guard let origin else {
            origin = estimate
            written = 0
            differences.removeAll(keepingCapacity: true)
            differences.append(0)
            next = 0
            median = 0
            pendingStep = nil
            return estimate
        }
        let timeline = origin &+ UInt64((Double(written) * Self.frameNanoseconds).rounded())
        let difference = Int64(bitPattern: estimate &- timeline)
        if abs(difference - median) > Self.stepNanoseconds {
            guard let pending = pendingStep, abs(difference - pending) <= Self.stepNanoseconds else {
                pendingStep = difference
                return UInt64(bitPattern: Int64(bitPattern: timeline) &+ median)
            }
            differences.removeAll(keepingCapacity: true)
            differences.append(pending)
            next = 0
        }
        pendingStep = nil
        if differences.count < Self.window {
            differences.append(difference)
        } else {
            differences[next] = difference
            next = (next + 1) % Self.window
        }
        sorted.removeAll(keepingCapacity: true)
        sorted.append(contentsOf: differences)
        sorted.sort()
        median = sorted[(sorted.count - 1) / 2]
        return UInt64(bitPattern: Int64(bitPattern: timeline) &+ median)
    }

    /// `frames` were written after the last presentation.
    mutating func advance(frames: Int) { written += UInt64(frames) }

    /// The stream stopped or was restarted: the next estimate begins a new timeline.
    mutating func reset() { origin = nil }
}
