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

        var playout = try Playout(format: AudioFormat(encoding: .opus, payloadType: 96), latency: 100_000_000, timed: true)
        let start: UInt64 = 5_000_000_000
        for t in stride(from: start - 3_000_000_000, through: start, by: 1_000_000_000) {
            playout.addTimingSample(localTime: t, offset: 0, delay: 10_000)
        }
        playout.flush(nextSequence: 100)
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start))
        for packet in packets { playout.receive(packet, arrival: start) }
        var out: [Int16] = []
        var presented = start + 100_000_000  // the anchor's position is due at the first block's first frame
        while out.count < expected.count + 4800 {
            out += playout.render(frames: 240, presentation: presented).0
            presented += 5_000_000
        }
        let whole = Array(out[..<expected.count]) == expected
        #expect(whole, "the output is not the stream with the bad packet concealed for its length, first sample to last")
        #expect(out[expected.count...].allSatisfy { $0 == 0 }, "something played after the stream's end")
        #expect(playout.statistics.malformed == 1 && playout.statistics.concealed == concealed && playout.statistics.lost == 0,
                "\(playout.statistics)")
    }
}
