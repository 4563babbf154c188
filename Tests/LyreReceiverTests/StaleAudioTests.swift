import LyreCodec
@testable import LyreReceiver
import LyreWire
import Testing

/// streaming.md §6.1: audio a sender stamps long before its time (a sender whose timestamps went wrong),
/// packet after packet, costs a render no more work than its own block. Each such packet came after a gap of a
/// second; each gap cost a second of libopus concealment, and a second more of staged samples, up to the jitter
/// buffer's 1024 packets in one render while the event loop waited for the playout's lock.
struct StaleAudioTests {
    @Test func audioStampedLongBeforeItsTimeCostsARenderNoMoreThanItsBlock() throws {
        let frames = 960, good = 20, stale = 600
        let pcm = PlayoutTests.sweep(seconds: Double(good) * 0.02).map { Float($0) / 32768 * 0.5 }
        let encoder = try OpusEncoder(bitrate: 256_000)
        let payloads = try (0..<good).map { index in
            try pcm[(index * frames * 2)..<((index + 1) * frames * 2)].withUnsafeBufferPointer { try encoder.encode($0, frames: frames) }
        }
        let rtpStart: UInt32 = 4_294_960_000
        var playout = try Playout(format: AudioFormat(encoding: .opus, payloadType: 96), latency: 100_000_000, timed: true)
        let start: UInt64 = 5_000_000_000
        for t in stride(from: start - 3_000_000_000, through: start, by: 1_000_000_000) {
            playout.addTimingSample(localTime: t, offset: 0, delay: 10_000)
        }
        playout.flush(nextSequence: 100)
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start))
        for index in 0..<good {
            playout.receive(RTPPacket(payloadType: 96, sequenceNumber: 100 + UInt16(index), timestamp: rtpStart &+ UInt32(index * frames),
                                      ssrc: 1, payload: payloads[index]), arrival: start)
        }
        var presented = start + 100_000_000
        var out: [Int16] = []
        func render(_ blocks: Int) -> [Int16] {
            var block: [Int16] = []
            for _ in 0..<blocks {
                block += playout.render(frames: 240, presentation: presented).0
                presented += 5_000_000
            }
            return block
        }
        out += render(40)  // 200 ms of the sweep: audible, and on schedule
        // 600 packets after the sweep in sequence, each after one missing, stamped 700 s before the schedule and a
        // second apart (20 ms of audio and 980 ms of gap).
        let stamp = rtpStart &- UInt32(700 * 48000)
        for index in 0..<stale {
            playout.receive(RTPPacket(payloadType: 96, sequenceNumber: 100 + UInt16(good + 2 * index + 1),
                                      timestamp: stamp &+ UInt32(index * 48000), ssrc: 1, payload: payloads[index % good]), arrival: presented)
        }
        let before = playout.statistics
        out += render(80)  // the rest of the sweep, then 200 ms with nothing due
        #expect(out[(good * frames * 2)...].allSatisfy { $0 == 0 }, "something played after the sweep: the stale audio")
        #expect(out[..<(good * frames * 2)].contains { $0 != 0 }, "the sweep did not play")
        // Every stale packet was taken (the buffer did not hold them back), one missing number before each.
        #expect(playout.statistics.lost - before.lost == stale, "\(playout.statistics)")
        #expect(playout.work.concealedByLibopus <= 48000,
                "libopus concealed \(playout.work.concealedByLibopus) frames of gaps the output had gone past")
        #expect(playout.work.peakStaged <= 2 * 48000 + 240,
                "\(playout.work.peakStaged) frames staged at once, \(playout.work.peakStaged / 48000) s, all behind the output")
    }
}
