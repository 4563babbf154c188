import Foundation
@testable import LyreAudio
import Testing

/// A sound server's estimate of when a block is heard, made steady (`SteadyEstimate`): the server's timeline
/// moves by each block's length; its estimate of it wanders around that.
struct SteadyEstimateTests {
    /// 10 ms blocks, 1,000 of them, on a timeline that starts at 5 s.
    static let block = 480, blockNanoseconds: UInt64 = 10_000_000, start: UInt64 = 5_000_000_000

    /// A deterministic wander: normal with `sigma` ns (a linear congruential generator, Box-Muller).
    struct Wander {
        var state: UInt64 = 12345
        mutating func uniform() -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Double(state >> 11) + 0.5) / Double(1 << 53)
        }
        mutating func next(sigma: Double) -> Int64 {
            let (u, v) = (uniform(), uniform())
            return Int64((sigma * (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)).rounded())
        }
    }

    /// Steady, given estimates that wander as PulseAudio's did (normal, 26 µs: its block-to-block changes
    /// were ±56 to ±62 µs between the 5th and 95th percentiles), with a block 5 ms off every 97 blocks, the
    /// wrong way each time. The playout stays in tune while the presentation stays within 2 samples (42 µs)
    /// of where it was when it came into tune: the estimate's spread is far more than that, the steady one's,
    /// once its window is full, less.
    @Test func wanderAndSingleBlocksOffDoNotMoveIt() {
        var steady = SteadyEstimate(), wander = Wander()
        var raw: [Int64] = [], steadied: [Int64] = []
        for k in 0..<1000 {
            let truth = Self.start + UInt64(k) * Self.blockNanoseconds
            var error = wander.next(sigma: 26_000)
            if k % 97 == 50 { error += k % 2 == 0 ? 5_000_000 : -5_000_000 }
            let presented = steady.presentation(estimate: UInt64(Int64(truth) + error))
            if k >= SteadyEstimate.window {
                raw.append(error)
                steadied.append(Int64(presented) - Int64(truth))
            }
            steady.advance(frames: Self.block)
        }
        let rawSpread = raw.filter { abs($0) < 1_000_000 }.max()! - raw.filter { abs($0) < 1_000_000 }.min()!
        let spread = steadied.max()! - steadied.min()!
        #expect(rawSpread > 3 * 42_000, "the estimate spread \(rawSpread) ns without its 5 ms blocks: not a hard enough test")
        #expect(spread < 42_000, "the steady estimate spread \(spread) ns")
        print("SteadyEstimateTests: the estimate spread \(rawSpread) ns besides its 5 ms blocks; the steady one \(spread) ns")
    }

    /// A step in the estimate (PulseAudio's of 18 to 20 ms) is followed once it is in half the window, all at
    /// once; one over 50 ms (the stream ran dry) at the second block that shows it.
    @Test(arguments: [(20_000_000, SteadyEstimate.window / 2 + 1), (-20_000_000, SteadyEstimate.window / 2 + 1), (60_000_000, 2), (-60_000_000, 2)] as [(Int64, Int)])
    func aStepIsFollowed(step: Int64, after blocks: Int) {
        var steady = SteadyEstimate()
        var moved: [Int] = []
        for k in 0..<100 {
            let truth = Self.start + UInt64(k) * Self.blockNanoseconds
            let estimate = UInt64(Int64(truth) + (k >= 40 ? step : 0))
            let presented = steady.presentation(estimate: estimate)
            if presented != truth { moved.append(k) }
            if k >= 40 + blocks { #expect(presented == estimate, "block \(k)") }
            steady.advance(frames: Self.block)
        }
        #expect(moved.first == 40 + blocks - 1, "moved from block \(String(describing: moved.first))")
    }

    /// A single block over 50 ms off, late or early, moves nothing: taken at once, it made two jumps, there
    /// and back. Nor do two such blocks that disagree with each other.
    @Test(arguments: [[60_000_000], [-60_000_000], [60_000_000, -60_000_000], [200_000_000, 80_000_000]] as [[Int64]])
    func aSingleBlockFarOffMovesNothing(errors: [Int64]) {
        var steady = SteadyEstimate()
        for k in 0..<100 {
            let truth = Self.start + UInt64(k) * Self.blockNanoseconds
            let error = k >= 40 && k < 40 + errors.count ? errors[k - 40] : 0
            #expect(steady.presentation(estimate: UInt64(Int64(truth) + error)) == truth, "block \(k)")
            steady.advance(frames: Self.block)
        }
    }

    /// The window keeps the last 63 blocks, no older: an estimate 20 ms late for 100 blocks, then on time again,
    /// is followed back from the 32nd block on time, as it was followed there.
    @Test func theWindowForgetsTheOldest() {
        var steady = SteadyEstimate()
        var late: [Int] = []
        for k in 0..<300 {
            let truth = Self.start + UInt64(k) * Self.blockNanoseconds
            let presented = steady.presentation(estimate: truth + (k >= 100 && k < 200 ? 20_000_000 : 0))
            if presented != truth { late.append(k) }
            steady.advance(frames: Self.block)
        }
        #expect(late.first == 100 + SteadyEstimate.window / 2 && late.last == 200 + SteadyEstimate.window / 2 - 1, "late from \(String(describing: late.first)) to \(String(describing: late.last))")
        #expect(late.count == 100, "\(late.count) blocks late")
    }

    /// After a reset (the stream stopped, paused or recovered) the next estimate is the new timeline's start.
    @Test func aResetStartsANewTimeline() {
        var steady = SteadyEstimate()
        _ = steady.presentation(estimate: Self.start)
        steady.advance(frames: Self.block)
        #expect(steady.presentation(estimate: Self.start + Self.blockNanoseconds + 30_000_000) == Self.start + Self.blockNanoseconds)
        steady.reset()
        #expect(steady.presentation(estimate: 9_000_000_000) == 9_000_000_000)
        steady.advance(frames: Self.block)
        #expect(steady.presentation(estimate: 9_010_000_000 + 100_000) == 9_010_000_000)
    }
}
