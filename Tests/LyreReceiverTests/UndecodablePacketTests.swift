import COpus
import COpusShim
import LyreCodec
import LyreReceiver
import LyreWire
import Testing

/// streaming.md §6.1: an Opus packet that passes RTP's checks and not libopus's is counted `malformed` and
/// concealed for exactly as long as it lasted, so the packets after it play in their place, whole. The
/// reference is a second libopus decoder given the same packets, with its own concealment for the bad one.
struct UndecodablePacketTests {
    /// A table of contents saying "code 3" (a count of frames follows) and a count of 0: libopus refuses it,
    /// and it says nothing of its length.
    static let garbage: [UInt8] = [0xFB, 0x00]

    /// 2.5, 5 and 20 ms packets; the bad one in the middle (its length read from the next packet's timestamp)
    /// or the last (no next packet: the length of the one before).
    @Test(arguments: [120, 240, 960], [false, true])
    func anUndecodablePacketIsConcealedForItsOwnLengthAndTheRestPlaysWhole(frames: Int, last: Bool) throws {
        try Self.check(frames: frames, last: last) { _ in (Self.garbage, frames) }
    }

    /// The last packet, whose table of contents reads (code 2: two frames of the stream's own configuration)
    /// and whose body does not (its first frame's length runs past its end): concealed for the two frames its
    /// table of contents says, not for the packet before it.
    @Test(arguments: [120, 240])
    func anUndecodableLastPacketIsConcealedForTheLengthItsTableOfContentsSays(frames: Int) throws {
        try Self.check(frames: frames, last: true) { good in ([good[0] & 0xFC | 2, 251, 0], 2 * frames) }
    }

    /// `frames`-long packets of a full-band sweep, one of them (the middle one, or the last) replaced by what
    /// `bad` makes of it, with the frames it should be concealed for; the whole output checked against a
    /// reference decoder.
    static func check(frames: Int, last: Bool, bad replace: ([UInt8]) -> (payload: [UInt8], concealed: Int)) throws {
        let pcm = PlayoutTests.sweep(seconds: 0.3).map { Float($0) / 32768 }
        let count = pcm.count / 2 / frames
        let bad = last ? count - 1 : count / 2
        let encoder = try OpusEncoder(bitrate: 256_000)
        let rtpStart: UInt32 = 4_294_960_000  // the stream crosses the timestamp wrap
        var concealed = 0
        let packets = try (0..<count).map { index in
            var payload = try pcm[(index * frames * 2)..<((index + 1) * frames * 2)].withUnsafeBufferPointer { try encoder.encode($0, frames: frames) }
            if index == bad { (payload, concealed) = replace(payload) }
            return RTPPacket(payloadType: 96, sequenceNumber: 100 &+ UInt16(index), timestamp: rtpStart &+ UInt32(index * frames),
                             ssrc: 1, payload: payload)
        }
        let reference = try OpusDecoder()
        var expected: [Int16] = []
        for (index, packet) in packets.enumerated() {
            if index == bad { try reference.conceal(frames: concealed, into: &expected) } else { try reference.decode(packet.payload, into: &expected) }
        }

        let (out, statistics) = try play(packets, rtpStart: rtpStart, frames: expected.count / 2)
        let whole = Array(out[..<expected.count]) == expected
        #expect(whole, "the output is not the stream with the bad packet concealed for its length, first sample to last")
        #expect(out[expected.count...].allSatisfy { $0 == 0 }, "something played after the stream's end")
        #expect(statistics.malformed == 1 && statistics.concealed == concealed && statistics.lost == 0 && statistics.decoderRefusals == 0,
                "\(statistics)")
    }

    /// A packet lost where the next one's timestamp leaves a gap that is no whole number of 2.5 ms (100 frames,
    /// or 330: a long outage's time shared between the packets lost in it), which libopus refuses to conceal
    /// or repair as such: the gap is concealed for exactly its length and the packets after it play whole. The
    /// reference is libopus itself, called here: concealment to the next whole 2.5 ms, cut to the gap. Lyre's
    /// music (CELT, no in-band FEC): no refusal; a speech stream whose next packet carries in-band FEC: one,
    /// the FEC, concealed instead.
    @Test(arguments: [false, true], [100, 330]) func aGapOfAnyLengthIsConcealedForItsLength(speech: Bool, gap: Int) throws {
        let frames = 960, count = 40
        let pcm = PlayoutTests.sweep(seconds: Double(count) * 0.02).map { Float($0) / 32768 * 0.5 }
        var encode: (ArraySlice<Float>) throws -> [UInt8]
        if speech {
            var error: Int32 = 0
            let encoder = try #require(opus_encoder_create(48000, 2, OPUS_APPLICATION_VOIP, &error))
            #expect(lyre_opus_encoder_set_bitrate(encoder, 24000) == 0 && lyre_opus_encoder_set_inband_fec(encoder, 1) == 0
                    && lyre_opus_encoder_set_packet_loss_perc(encoder, 20) == 0)
            encode = { slice in
                var packet = [UInt8](repeating: 0, count: 1275)
                let n = slice.withUnsafeBufferPointer { opus_encode_float(encoder, $0.baseAddress!, Int32(frames), &packet, 1275) }
                return Array(packet.prefix(Int(max(0, n))))
            }
        } else {
            let encoder = try OpusEncoder(bitrate: 256_000)
            encode = { slice in try slice.withUnsafeBufferPointer { try encoder.encode($0, frames: frames) } }
        }
        let payloads = try (0..<count).map { try encode(pcm[($0 * frames * 2)..<(($0 + 1) * frames * 2)]) }
        // The lost one: from the middle on, the first whose next packet carries in-band FEC (speech) or not (music).
        let missing = try #require((count / 2..<count - 1).first { OpusDecoder.hasInBandFEC(payloads[$0 + 1]) == speech })
        let rtpStart: UInt32 = 4_294_960_000
        let packets = payloads.indices.filter { $0 != missing }.map { index in
            RTPPacket(payloadType: 96, sequenceNumber: 100 &+ UInt16(index),
                      timestamp: rtpStart &+ UInt32(index * frames - (index > missing ? frames - gap : 0)), ssrc: 1, payload: payloads[index])
        }
        var error: Int32 = 0
        let reference = try #require(opus_decoder_create(48000, 2, &error))
        defer { opus_decoder_destroy(reference) }
        var expected: [Int16] = []
        var buffer = [Int16](repeating: 0, count: 5760 * 2)
        for index in payloads.indices {
            if index == missing {
                let step = 120  // libopus conceals whole 2.5 ms only
                #expect(opus_decode(reference, nil, 0, &buffer, Int32((gap + step - 1) / step * step), 0) > 0)
                expected += buffer.prefix(gap * 2)
            } else {
                let n = Int(opus_decode(reference, payloads[index], Int32(payloads[index].count), &buffer, 5760, 0))
                #expect(n == frames)
                expected += buffer.prefix(max(0, n) * 2)
            }
        }
        let (out, statistics) = try Self.play(packets, rtpStart: rtpStart, frames: expected.count / 2)
        let whole = Array(out[..<expected.count]) == expected
        #expect(whole, "the output is not the stream with the gap concealed for its length, first sample to last")
        let at = missing * frames * 2
        #expect(out[at..<(at + gap * 2)].contains { $0 != 0 }, "the gap is silence, not concealment")
        #expect(statistics.decoderRefusals == (speech ? 1 : 0) && statistics.recoveredByFEC == 0 && statistics.lost == 1
                && statistics.concealed == gap && statistics.malformed == 0, "\(statistics)")
        #expect(statistics.text.contains("decoder-refusals=1") == speech, "\(statistics.text)")
    }

    /// A sequence number that jumps by 30 000 where the timestamps say `time` frames are missing: 20 ms (one
    /// packet), or 1 s (rtsp-abuse's `absurd_seq`: a random timestamp, the time capped at a second). More packets
    /// missing than their time holds at 2.5 ms each is concealed as one gap, for the time, and every missing
    /// number counted lost. Concealed one number at a time, each number's share (0 or 1 frame here) cost a
    /// libopus concealment of 2.5 ms cut to it: rtsp-abuse's jumps made tens of thousands in one render while
    /// the event loop waited for the playout's lock, and no RTSP answer came for seconds. The whole output is
    /// checked against libopus given the same packets and the time concealed in 20 ms steps.
    @Test(arguments: [960, 48000]) func aSequenceThatJumpsIsOneGapConcealedForItsTime(time: Int) throws {
        let frames = 960, count = 20, jump = 30_000
        let pcm = PlayoutTests.sweep(seconds: Double(count) * 0.02).map { Float($0) / 32768 * 0.5 }
        let encoder = try OpusEncoder(bitrate: 256_000)
        let payloads = try (0..<count).map { index in
            try pcm[(index * frames * 2)..<((index + 1) * frames * 2)].withUnsafeBufferPointer { try encoder.encode($0, frames: frames) }
        }
        let missing = count / 2
        let rtpStart: UInt32 = 4_294_960_000
        let packets = payloads.indices.filter { $0 != missing }.map { index in
            RTPPacket(payloadType: 96, sequenceNumber: 100 &+ UInt16(index + (index > missing ? jump : 0)),
                      timestamp: rtpStart &+ UInt32(index * frames + (index > missing ? time - frames : 0)), ssrc: 1, payload: payloads[index])
        }
        let reference = try OpusDecoder()
        var expected: [Int16] = []
        for index in payloads.indices {
            if index == missing {
                for _ in 0..<(time / frames) { try reference.conceal(frames: frames, into: &expected) }
            } else {
                try reference.decode(payloads[index], into: &expected)
            }
        }
        let (out, statistics) = try Self.play(packets, rtpStart: rtpStart, frames: expected.count / 2)
        let whole = Array(out[..<expected.count]) == expected
        #expect(whole, "the output is not the stream with the jump concealed as one gap of \(time) frames, first sample to last")
        #expect(statistics.lost == jump + 1 && statistics.concealed == time && statistics.decoderRefusals == 0
                && statistics.malformed == 0, "\(statistics)")
    }

    /// A timed Opus `Playout` at 100 ms of latency, its clock settled (the sender's is the local one), recording
    /// from RTP time `rtpStart` at `start` and sequence number 100.
    static func recording(from rtpStart: UInt32, at start: UInt64) throws -> Playout {
        var playout = try Playout(format: AudioFormat(encoding: .opus, payloadType: 96), latency: 100_000_000, timed: true)
        for t in stride(from: start - 3_000_000_000, through: start, by: 1_000_000_000) {
            playout.addTimingSample(localTime: t, offset: 0, delay: 10_000)
        }
        playout.flush(nextSequence: 100)
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start))
        return playout
    }

    /// `packets` of an Opus stream from `rtpStart` played by a timed `Playout` at 100 ms of latency, all
    /// delivered at once; the output rendered in 5 ms blocks until `frames` and 50 ms more have played.
    static func play(_ packets: [RTPPacket], rtpStart: UInt32, frames: Int) throws -> (out: [Int16], statistics: PlayoutStatistics) {
        let start: UInt64 = 5_000_000_000
        var playout = try recording(from: rtpStart, at: start)
        for packet in packets { playout.receive(packet, arrival: start) }
        var out: [Int16] = []
        var presented = start + 100_000_000  // the anchor's position is due at the first block's first frame
        while out.count < frames * 2 + 4800 {
            out += playout.render(frames: 240, presentation: presented).0
            presented += 5_000_000
        }
        return (out, playout.statistics)
    }
}
