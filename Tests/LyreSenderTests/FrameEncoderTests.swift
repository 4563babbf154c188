import Foundation
import LyreCodec
@testable import LyreSender
import LyreWire
import Testing

/// The timeline and the encoder together, without sockets: the packets a playback sends, decoded by libopus as
/// a receiver decodes them, hold the input from its first sample to its last, across a pause and a resume.
struct FrameEncoderTests {
    static let frame = TimelineTests.frame
    static let ms = TimelineTests.ms

    /// A logarithmic sweep, 40 Hz to 18 kHz, at half scale: any sample lost, doubled or out of place on it
    /// shows at once.
    static func sweep(seconds: Double) -> [Float] {
        let count = Int(seconds * 48_000)
        let (f0, f1) = (40.0, 18_000.0)
        let k = log(f1 / f0) / seconds
        return (0..<count).flatMap { i -> [Float] in
            let t = Double(i) / 48_000
            let v = Float(0.5 * sin(2 * .pi * f0 * (exp(k * t) - 1) / k))
            return [v, v]
        }
    }

    /// The left channel of `packets` decoded in order by one fresh decoder, as Float.
    static func decode(_ packets: [RTPPacket]) throws -> [Float] {
        let decoder = try OpusDecoder()
        var pcm: [Int16] = []
        for packet in packets { try decoder.decode(packet.payload, into: &pcm) }
        return stride(from: 0, to: pcm.count, by: 2).map { Float(pcm[$0]) / 32768 }
    }

    /// SNR of `output` against `reference`, dB, over their common length.
    static func snr(_ output: ArraySlice<Float>, _ reference: ArraySlice<Float>) -> Double {
        var signal = 0.0, noise = 0.0
        for (o, r) in zip(output, reference) {
            signal += Double(r) * Double(r)
            noise += Double(o - r) * Double(o - r)
        }
        return 10 * log10(signal / max(noise, 1e-12))
    }

    /// The next slot's packet, which must be one.
    static func packet(_ t: inout Timeline, _ encoder: inout FrameEncoder, finishing: Bool = false) throws -> RTPPacket? {
        guard let slot = t.nextSlot(finishing: finishing), let pcm = slot.pcm else { return nil }
        guard let packet = encoder.packet(for: slot, pcm) else { throw EncodeFailed(description: "\(encoder.lastFailure.map { "\($0)" } ?? "")") }
        return packet
    }

    struct EncodeFailed: Error, CustomStringConvertible { let description: String }

    /// A sweep played, paused 333 samples into frame 75 of the decoded stream (at 4 kHz) (as a receiver's FLUSH answer
    /// says), and resumed: what the room plays (the first stream up to the stop, then the second from
    /// `Lyre-Start-At`) is the input delayed by the encoder's look-ahead, nothing lost or doubled. It reads as
    /// high as the stream without a pause does, over the whole and in the 20 ms after the splice; a sample out of
    /// place on this sweep would cost tens of dB there.
    @Test func aPausedAndResumedStreamDecodesToTheInputWhole() throws {
        let input = Self.sweep(seconds: 2)
        let reference = stride(from: 0, to: input.count, by: 2).map { input[$0] }
        var encoder = try FrameEncoder(bitrate: 256_000, frameSamples: Self.frame, ssrc: 0x1234)
        let delay = encoder.lookahead
        var t = TimelineTests.timeline()
        t.encoderDelay = delay
        t.enqueue(input)
        let first = t.anchor(at: 0, startDelay: 0, backdate: 0).anchor.rtpTime
        t.began(echoedStart: true)
        var before: [RTPPacket] = []
        for _ in 0..<90 { before.append(try #require(try Self.packet(&t, &encoder))) }
        let stop = t.pause(at: TimelineTests.latency + 1_507 * Self.ms).due &+ 333
        t.takeBack(from: stop)
        let resumed = t.anchor(at: 2_000 * Self.ms, startDelay: 0, backdate: 0)
        t.began(echoedStart: true)
        var after: [RTPPacket] = []
        while let packet = try Self.packet(&t, &encoder, finishing: true) { after.append(packet) }
        #expect(after.first.map { resumed.anchor.rtpTime == $0.timestamp } == true)
        #expect(encoder.failures == 0)

        // What the room played: the first stream to the stop, the second from its start.
        let played = Int(stop &- first)
        let startAt = Int(try #require(resumed.startAt) &- resumed.anchor.rtpTime)
        let (decoded, second) = (try Self.decode(before), try Self.decode(after))
        let output = decoded.prefix(played) + second.dropFirst(startAt)
        // The input, `delay` samples later: the whole of it, and the tail carried out.
        #expect(output.count >= reference.count + delay, "\(output.count) samples for \(reference.count)")
        let whole = Self.snr(output[delay..<delay + reference.count], reference[...])
        let splice = Self.snr(output[played..<played + 960], reference[played - delay..<played + 960 - delay])

        // The same input without a pause, for the figure Opus itself reaches here.
        var plainEncoder = try FrameEncoder(bitrate: 256_000, frameSamples: Self.frame, ssrc: 0x1234)
        var plain = TimelineTests.timeline()
        plain.encoderDelay = delay
        plain.enqueue(input)
        _ = plain.anchor(at: 0, startDelay: 0, backdate: 0)
        plain.began(echoedStart: true)
        var packets: [RTPPacket] = []
        while let packet = try Self.packet(&plain, &plainEncoder, finishing: true) { packets.append(packet) }
        let unpaused = try Self.decode(packets)
        let plainWhole = Self.snr(unpaused[delay..<delay + reference.count], reference[...])
        let plainSplice = Self.snr(unpaused[played..<played + 960], reference[played - delay..<played + 960 - delay])
        // The meter sees one sample doubled at the splice.
        let doubled = decoded.prefix(played) + second.dropFirst(startAt - 1)
        let doubledSplice = Self.snr(doubled[played..<played + 960], reference[played - delay..<played + 960 - delay])
        print("paused and resumed: \(whole) dB whole, \(splice) dB at the splice (one sample doubled there: \(doubledSplice) dB); without a pause \(plainWhole) and \(plainSplice) dB")
        #expect(plainWhole > 25, "Opus at 256 kbit/s on a sweep to 18 kHz")
        #expect(doubledSplice < plainSplice - 10)
        #expect(whole > plainWhole - 1 && splice > plainSplice - 3, "\(whole) and \(splice) dB against \(plainWhole) and \(plainSplice)")
    }
}
