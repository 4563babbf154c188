import FoundationEssentials
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// How much an announcement that ducks (`Lyre-Mix: duck`, streaming.md §7) lowers what plays under it,
/// frame by frame.
///
/// The gain is a function of the announcement's own stream position only (frames from its first sample, and
/// from its last once that is known), never of when a room happens to render a block. Every room of a group
/// presents a given position of the announcement at the same instant, so every room ducks by the same dB at
/// the same sample.
///
/// The music is down by the announcement's first sample: the ramp down (`attackFrames`, 50 ms) ends there,
/// short enough to leave speech's first syllable clear. It comes back over `releaseFrames` (300 ms) from the
/// announcement's last sample. Both ramps are linear in dB, which a listener hears as an even fade; neither is
/// shorter than 10 ms, below which a gain step is heard as a click.
public struct DuckEnvelope: Sendable, Equatable {
    /// How far the music goes down, dB (negative): the announcement's `Lyre-Duck-DB`, else `lyred --duck-db`,
    /// −15 by default.
    public var depthDB: Double
    public var attackFrames: Int
    public var releaseFrames: Int

    public static let defaultDepthDB = -15.0
    /// The depth a receiver's configuration or an announcement may set: from a dip (−3 dB) to almost silence
    /// (−40 dB).
    public static let depthRange = MixRequest.duckDepthRange

    public init(depthDB: Double = Self.defaultDepthDB, attackFrames: Int = 2400, releaseFrames: Int = 14400) {
        precondition(Self.depthRange.contains(depthDB), "duck depth \(depthDB) dB is outside \(Self.depthRange)")
        precondition(attackFrames >= 480 && releaseFrames >= 480, "a ramp under 10 ms clicks")
        self.depthDB = depthDB
        self.attackFrames = attackFrames
        self.releaseFrames = releaseFrames
    }

    /// The level (dB, 0 or below) of what plays under the announcement when the announcement is at `position`
    /// frames from its first sample; `end`: frames from its first sample to just after its last, once known.
    public func decibels(at position: Int64, end: Int64?) -> Double {
        let attack = Int64(attackFrames), release = Int64(releaseFrames)
        // Down: from `attack` before the first sample to the first sample.
        let down: Double = position <= -attack ? 0 : position >= 0 ? depthDB : depthDB * Double(position + attack) / Double(attack)
        // Up: from the end over `release`. The less lowered of the two, so an announcement shorter than the
        // ramp down comes back up from where it got to, without a step.
        guard let end, position > end else { return down }
        let up: Double = position >= end + release ? 0 : depthDB * (1 - Double(position - end) / Double(release))
        return max(down, up)
    }

    /// True once the music is back at full level for good: the announcement's end is known and the ramp up
    /// is over.
    public func isReleased(at position: Int64, end: Int64?) -> Bool {
        guard let end else { return false }
        return position >= end + Int64(releaseFrames)
    }

    /// Lowers `gains` (one per frame, the first at `position`) to this envelope where it is lower: with two
    /// announcements at once the music is as low as the lower of the two asks.
    ///
    /// `level`: the dB this envelope gave the frame before, carried from block to block (nil before the first).
    /// The music never goes down faster than the ramp down: an announcement whose audio ran out and came again
    /// (its packets were late) takes the music back down from where it had come up to, over the ramp, rather
    /// than in one step. Every room that ran out at the same position does the same.
    public func lower(_ gains: inout [Float], from position: Int64, end: Int64?, level: inout Double?) {
        let steepest = -depthDB / Double(attackFrames) * (1 + 1e-9)
        var lastDB = Double.nan, gain: Float = 1
        for frame in gains.indices {
            var db = decibels(at: position + Int64(frame), end: end)
            if let before = level, db < before - steepest { db = before - steepest }
            level = db
            if db != lastDB {
                lastDB = db
                gain = Float(pow(10, db / 20))
            }
            gains[frame] = min(gains[frame], gain)
        }
    }
}

/// Sums the sessions a receiver plays at once (streaming.md §7): the main session at `mainGains` (one gain per
/// frame, the ducking), and each overlay at its own gain (its sender's volume). Clipped to 16 bits, as one
/// session's loudest peaks already are.
public enum SessionMixer {
    public static func mix(main: [Int16]?, mainGains: [Float]?, overlays: [(samples: [Int16], gain: Float)], frames: Int) -> [Int16] {
        var sum = [Float](repeating: 0, count: frames * 2)
        if let main {
            for i in 0..<min(main.count, sum.count) { sum[i] = Float(main[i]) * (mainGains?[i / 2] ?? 1) }
        }
        for (samples, gain) in overlays where gain > 0 {
            for i in 0..<min(samples.count, sum.count) { sum[i] += Float(samples[i]) * gain }
        }
        return sum.map { Int16(max(-32768, min(32767, $0.rounded()))) }
    }
}
