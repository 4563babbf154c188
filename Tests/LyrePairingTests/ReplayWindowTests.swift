@testable import LyreSRTP
import Testing

/// The index and replay window of one SRTP stream (RFC 3711 §3.3.1 and Appendix A), as libsrtp2's rdbx decides
/// (SRTPInteropTests runs the two side by side on long streams; these are the cases by name).
struct ReplayWindowTests {
    /// Index `index` arrives: what the window says, and the window after taking it when it is fresh.
    static func arrive(_ window: inout ReplayWindow, _ index: UInt64) -> ReplayWindow.Verdict {
        let (estimated, delta) = window.estimate(UInt16(truncatingIfNeeded: index))
        #expect(estimated == index, "sequence \(index & 0xFFFF) estimated as \(estimated), not \(index)")
        let verdict = window.check(delta)
        if verdict == .fresh { window.take(delta) }
        return verdict
    }

    @Test func aStreamStartsAnywhereWithARolloverCounterOfZero() {
        // libsrtp2 keeps ROC 0 until the highest index passes 2^15, so that a first sequence number above it is
        // not taken as one from ROC 0xFFFFFFFF.
        var window = ReplayWindow(length: 1024)
        #expect(Self.arrive(&window, 40_000) == .fresh)
        #expect(window.highest == 40_000)
        var fromZero = ReplayWindow(length: 1024)
        #expect(Self.arrive(&fromZero, 0) == .fresh)
        #expect(Self.arrive(&fromZero, 0) == .replayed)
    }

    @Test func theRolloverCounterMovesOnAtTheWrapAndBackForALatePacket() {
        var window = ReplayWindow(length: 1024)
        for index: UInt64 in 65_500...65_535 { #expect(Self.arrive(&window, index) == .fresh) }
        // Sequence 3 after 65535: ROC 1.
        #expect(Self.arrive(&window, 65_536 + 3) == .fresh)
        // Sequence 65534, late: ROC 0 again, seen before.
        #expect(Self.arrive(&window, 65_534) == .replayed)
        // Sequence 1 of ROC 1, late but never seen.
        #expect(Self.arrive(&window, 65_536 + 1) == .fresh)
        // Far past the second wrap, one by one.
        for index in UInt64(65_540)...UInt64(2 * 65_536 + 100) { #expect(Self.arrive(&window, index) == .fresh) }
        #expect(window.highest == 2 * 65_536 + 100)
    }

    @Test func theWindowHoldsTheLast1024() {
        var window = ReplayWindow(length: 1024)
        #expect(Self.arrive(&window, 2_000) == .fresh)
        // 1023 behind: inside, never seen.
        #expect(Self.arrive(&window, 2_000 - 1_023) == .fresh)
        #expect(Self.arrive(&window, 2_000 - 1_023) == .replayed)
        // 1024 behind: outside.
        #expect(Self.arrive(&window, 2_000 - 1_024) == .tooOld)
        // A jump of more than the window forgets what was seen.
        #expect(Self.arrive(&window, 2_000 + 5_000) == .fresh)
        #expect(Self.arrive(&window, 2_000 + 5_000 - 1) == .fresh)
        // A jump within it keeps it: the index before the jump is still there, the ones it passed are not.
        var near = ReplayWindow(length: 1024)
        #expect(Self.arrive(&near, 10) == .fresh)
        #expect(Self.arrive(&near, 500) == .fresh)
        #expect(Self.arrive(&near, 10) == .replayed)
        #expect(Self.arrive(&near, 11) == .fresh)
    }

    @Test func anIndexTakenWhole() {
        // SRTCP carries its whole index: it is compared with the highest as it is.
        var window = ReplayWindow(length: 128)
        for index: UInt64 in [1, 2, 3, 5] {
            #expect(window.check(window.delta(of: index)) == .fresh)
            window.take(window.delta(of: index))
        }
        #expect(window.check(window.delta(of: 4)) == .fresh)
        #expect(window.check(window.delta(of: 3)) == .replayed)
        window.take(window.delta(of: 500))
        #expect(window.check(window.delta(of: 500 - 128)) == .tooOld)
        #expect(window.check(window.delta(of: 500 - 127)) == .fresh)
    }
}
