import LyreRTSP
import LyreWire
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// `SessionPulse`, the beat both ends run while a session lasts (streaming.md §4.2, §9.1), on a loop whose time
/// the test moves: a report each second while the peer is heard, the end once it has been silent too long, and
/// nothing more after.
@Suite struct SessionPulseTests {
    final class Record: Sendable {
        let silence = Mutex<UInt64?>(nil)
        let reports = Mutex(0)
        let gone = Mutex(0)
    }

    static func start(_ loop: EmbeddedEventLoop, _ record: Record, initialDelay: TimeAmount = SessionPulse.period) -> RepeatedTask {
        SessionPulse.start(
            on: loop, initialDelay: initialDelay, silence: { record.silence.withLock { $0 } },
            gone: { record.gone.withLock { $0 += 1 } }, report: { record.reports.withLock { $0 += 1 } })
    }

    @Test func itReportsEachSecondAndEndsOnceThePeerIsSilentTooLong() {
        let loop = EmbeddedEventLoop()
        let record = Record()
        _ = Self.start(loop, record, initialDelay: .milliseconds(500))
        loop.advanceTime(by: .milliseconds(499))
        #expect(record.reports.withLock { $0 } == 0)
        loop.advanceTime(by: .milliseconds(1))
        #expect(record.reports.withLock { $0 } == 1, "the first beat after its initial delay")
        loop.advanceTime(by: .seconds(3))
        #expect(record.reports.withLock { $0 } == 4, "then one a second")
        // Heard from just long enough ago: still there.
        record.silence.withLock { $0 = SessionSilence.limit }
        loop.advanceTime(by: .seconds(1))
        #expect(record.reports.withLock { $0 } == 5 && record.gone.withLock { $0 } == 0)
        record.silence.withLock { $0 = SessionSilence.limit + 1 }
        loop.advanceTime(by: .seconds(1))
        #expect(record.gone.withLock { $0 } == 1 && record.reports.withLock { $0 } == 5, "gone: no report to it")
        loop.advanceTime(by: .seconds(30))
        #expect(record.gone.withLock { $0 } == 1 && record.reports.withLock { $0 } == 5, "the beat has stopped")
    }

    @Test func aPeerNotWatchedIsNeverGoneAndACancelledBeatStops() {
        let loop = EmbeddedEventLoop()
        let record = Record()
        let task = Self.start(loop, record)
        loop.advanceTime(by: .seconds(60))
        #expect(record.reports.withLock { $0 } == 60 && record.gone.withLock { $0 } == 0, "silence nil: not watched")
        task.cancel()
        loop.advanceTime(by: .seconds(5))
        #expect(record.reports.withLock { $0 } == 60)
    }
}
