import LyreCodec
@testable import LyreReceiver
import LyreWire
import Testing

/// streaming.md §6.1: audio a sender stamps long before its time (a sender whose timestamps went wrong),
/// packet after packet, costs a render little more than its own block. Each such packet came after a gap of a
/// second; each gap cost a second of libopus concealment, or a second of staged silence, up to the jitter
/// buffer's 1024 packets in one render while the event loop waited for the playout's lock.
struct StaleAudioTests {
    /// When stale audio comes: after a 400 ms sweep has played out; right behind it in sequence, while the end of
    /// the sweep is still staged for the blocks to come; or before the output's first block.
    enum Arrival: CaseIterable, Sendable { case afterTheSweep, behindTheSweep, beforeTheFirstBlock }

    /// 600 packets stamped a second apart and long before the schedule: after or behind the sweep, each after
    /// one missing number (concealment's path), 700 s before the sweep (behind it: the last 28,900 frames
    /// before it, so that the last is less than a second behind the output when it comes); before the output's first block, ahead of
    /// the sweep in sequence and with none missing (the silence between them staged), ending a second before it.
    /// The whole output is the sweep as libopus decodes the same packets, then silence; the counts are what they
    /// were, with a fraction of the work. Behind the sweep, the first of them restarted staging, which cut the end
    /// of the sweep: they are dropped and counted `late`.
    @Test(arguments: Arrival.allCases) func audioStampedLongBeforeItsTimeCostsARenderLittleMoreThanItsBlock(arrival: Arrival) throws {
        let playing = arrival != .beforeTheFirstBlock
        let frames = 960, good = 20, stale = 600
        let pcm = PlayoutTests.sweep(seconds: Double(good) * 0.02).map { Float($0) / 32768 * 0.5 }
        let encoder = try OpusEncoder(bitrate: 256_000)
        let payloads = try (0..<good).map { index in
            try pcm[(index * frames * 2)..<((index + 1) * frames * 2)].withUnsafeBufferPointer { try encoder.encode($0, frames: frames) }
        }
        let rtpStart: UInt32 = 4_294_960_000
        let sweep = (0..<good).map { index in
            RTPPacket(payloadType: 96, sequenceNumber: 100 &+ UInt16(playing ? index : stale + index),
                      timestamp: rtpStart &+ UInt32(index * frames), ssrc: 1, payload: payloads[index])
        }
        let stamped = (0..<stale).map { index in
            arrival == .behindTheSweep
                // Each a second after the one before, the last 28,900 frames before the sweep: more than a second back
                // from the sweep's end, less than a second behind the output when they come (in the sweep's last block).
                ? RTPPacket(payloadType: 96, sequenceNumber: 100 + UInt16(good + 2 * index + 1),
                            timestamp: rtpStart &- UInt32(28_900 + (stale - 1 - index) * 48000), ssrc: 1, payload: payloads[index % good])
                : playing
                ? RTPPacket(payloadType: 96, sequenceNumber: 100 + UInt16(good + 2 * index + 1),
                            timestamp: rtpStart &- UInt32(700 * 48000) &+ UInt32(index * 48000), ssrc: 1, payload: payloads[index % good])
                : RTPPacket(payloadType: 96, sequenceNumber: 100 + UInt16(index),
                            timestamp: rtpStart &- UInt32((stale - index) * 48000), ssrc: 1, payload: payloads[index % good])
        }
        let reference = try OpusDecoder()
        var expected: [Int16] = []
        if !playing { for packet in stamped { try reference.decode(packet.payload, into: &expected) } }
        expected.removeAll()
        for packet in sweep { try reference.decode(packet.payload, into: &expected) }

        let start: UInt64 = 5_000_000_000
        var playout = try UndecodablePacketTests.recording(from: rtpStart, at: start)
        var presented = start + 100_000_000  // the anchor's position is due at the first block's first frame
        var out: [Int16] = []
        func render(_ blocks: Int) {
            for _ in 0..<blocks {
                out += playout.render(frames: 240, presentation: presented).0
                presented += 5_000_000
            }
        }
        switch arrival {
        case .afterTheSweep:
            for packet in sweep { playout.receive(packet, arrival: start) }
            render(100)  // the sweep, and 100 ms after it
            for packet in stamped { playout.receive(packet, arrival: presented) }
            render(40)
        case .behindTheSweep:
            for packet in sweep + stamped { playout.receive(packet, arrival: start) }
            render(140)
        case .beforeTheFirstBlock:
            for packet in stamped + sweep { playout.receive(packet, arrival: start) }
            render(140)
        }
        let statistics = playout.statistics
        #expect(Array(out[..<expected.count]) == expected, "the output is not the sweep as libopus decodes it, first sample to last")
        #expect(out[expected.count...].allSatisfy { $0 == 0 }, "something played after the sweep: the stale audio")
        switch arrival {
        case .afterTheSweep:
            // Each gap after the first is counted for its time (the first, back from the sweep, has none).
            #expect(statistics.lost == stale && statistics.concealed == (stale - 1) * (48000 - frames) && statistics.late == 0, "\(statistics)")
        case .behindTheSweep:
            // Each packet is stamped back from the sweep's end, so its gap has no time, and it is late.
            #expect(statistics.lost == stale && statistics.concealed == 0 && statistics.late == stale, "\(statistics)")
        case .beforeTheFirstBlock:
            // Every frame before the sweep's first was due before the output's first block: skipped, as concealed.
            #expect(statistics.lost == 0 && statistics.concealed == stale * 48000 && statistics.late == 0, "\(statistics)")
        }
        #expect(playout.work.concealedByLibopus <= 48000,
                "libopus concealed \(playout.work.concealedByLibopus) frames of gaps the output had gone past")
        #expect(playout.work.peakStaged <= 2 * 48000 + 240,
                "\(playout.work.peakStaged) frames staged at once, \(playout.work.peakStaged / 48000) s, all behind the output")
    }
}
