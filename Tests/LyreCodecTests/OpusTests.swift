import COpus
import COpusShim
import Foundation
import LyreCodec
import Testing

/// The two facts of libopus that the stream's ends rest on (streaming.md §3), checked on the library itself:
/// the encoder's look-ahead, and a reset on both sides where a new encoder stream begins.
struct OpusTests {
    /// Music-like stereo material: a chord of partials with a slow tremolo, and a sweep on top, so that every
    /// band carries energy and a shift by any number of samples shows.
    static func material(frames: Int, seed: Double = 0) -> [Float] {
        var out = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let t = Double(i) / 48000
            var v = 0.0
            for (k, f) in [110.0, 220.0, 330.0, 554.4, 880.0, 1318.5, 2637.0].enumerated() {
                v += 0.05 * sin(2 * .pi * f * t + Double(k) + seed) * (1 + 0.3 * sin(2 * .pi * (0.7 + Double(k)) * t))
            }
            v += 0.1 * sin(2 * .pi * (200 * t + 4000 * t * t))
            out[2 * i] = Float(v)
            out[2 * i + 1] = Float(0.9 * v)
        }
        return out
    }

    static func encode(_ pcm: [Float], with encoder: borrowing OpusEncoder, frame: Int = 960) throws -> [[UInt8]] {
        try stride(from: 0, to: pcm.count / 2 - frame + 1, by: frame).map { start in
            try pcm[(start * 2)..<((start + frame) * 2)].withUnsafeBufferPointer { try encoder.encode($0, frames: frame) }
        }
    }

    static func decode(_ packets: [[UInt8]], with decoder: borrowing OpusDecoder) throws -> [Int16] {
        var out: [Int16] = []
        for packet in packets { try decoder.decode(packet, into: &out) }
        return out
    }

    /// The left channel, as Double.
    static func left(_ pcm: [Int16]) -> [Double] { stride(from: 0, to: pcm.count, by: 2).map { Double(pcm[$0]) / 32768 } }

    /// Where `reference` best lies in `output` (whole samples, 0…`reach`), by correlation.
    static func lag(of reference: ArraySlice<Double>, in output: [Double], reach: Int) -> Int {
        (0...reach).max { a, b in
            zip(reference, output[a...]).reduce(0) { $0 + $1.0 * $1.1 } < zip(reference, output[b...]).reduce(0) { $0 + $1.0 * $1.1 }
        }!
    }

    /// The encoder says 312 samples of look-ahead at 48 kHz, and the decoded stream is the input 312 samples
    /// late: packet k carries the last 312 samples of frame k − 1 and the first 648 of its own.
    /// In-band FEC is told apart from its absence: a speech encoder (VoIP, 24 kbit/s, in-band FEC on at 20 %
    /// expected loss, as a phone app sets libopus) puts LBRR data in its packets once it runs; Lyre's music
    /// encoder (CELT) never does.
    @Test func inBandFECIsSeenOnlyWhereItIs() throws {
        var error: Int32 = 0
        let speech = try #require(opus_encoder_create(48000, 2, OPUS_APPLICATION_VOIP, &error))
        defer { opus_encoder_destroy(speech) }
        #expect(lyre_opus_encoder_set_bitrate(speech, 24000) == 0 && lyre_opus_encoder_set_inband_fec(speech, 1) == 0
                && lyre_opus_encoder_set_packet_loss_perc(speech, 20) == 0)
        let music = try LyreCodec.OpusEncoder(bitrate: 256_000)
        var withFEC = 0, musicWithFEC = 0
        for frame in 0..<50 {
            // A voice-like tone with a slow vibrato, 20 ms at a time.
            let pcm = (0..<960).flatMap { i -> [Float] in
                let t = Double(frame * 960 + i) / 48000
                let s = Float(0.3 * sin(2 * .pi * (220 * t + 3 * sin(2 * .pi * 5 * t))))
                return [s, s]
            }
            var packet = [UInt8](repeating: 0, count: 1275)
            let n = pcm.withUnsafeBufferPointer { opus_encode_float(speech, $0.baseAddress!, 960, &packet, 1275) }
            #expect(n > 0)
            if OpusDecoder.hasInBandFEC(Array(packet.prefix(Int(n)))) { withFEC += 1 }
            if OpusDecoder.hasInBandFEC(try pcm.withUnsafeBufferPointer { try music.encode($0, frames: 960) }) { musicWithFEC += 1 }
        }
        #expect(withFEC >= 25, "\(withFEC) of 50 speech packets carry in-band FEC")  // 34 seen
        #expect(musicWithFEC == 0)
        #expect(!OpusDecoder.hasInBandFEC([]) && !OpusDecoder.hasInBandFEC([0xFC, 0xFF, 0xFE]))
    }

    /// The decoded stream is the input delayed by `lookahead`: 312 samples (6.5 ms), or 120 (2.5 ms) with the
    /// restricted low delay the sender uses for 5 ms frames (streaming.md §3), measured from the output.
    @Test(arguments: [(false, 960, 312), (true, 240, 120)])
    func theDecodedStreamIsTheInputDelayedByTheLookahead(lowDelay: Bool, frame: Int, lookahead: Int) throws {
        let encoder = try OpusEncoder(bitrate: 192_000, lowDelay: lowDelay)
        #expect(encoder.lookahead == lookahead)
        let input = Self.material(frames: 48000)
        let decoded = Self.left(try Self.decode(try Self.encode(input, with: encoder, frame: frame), with: try OpusDecoder()))
        let reference = stride(from: 0, to: input.count, by: 2).map { Double(input[$0]) }
        #expect(Self.lag(of: reference[24000..<26400], in: Array(decoded[24000...]), reach: 600) == lookahead)
    }

    /// After a reset of both ends, a new stream decodes exactly as it would on a fresh decoder; without the
    /// decoder's reset its first packets come out wrong (too loud: the old stream's state), which a resume
    /// after a pause would play.
    @Test func aResetDecoderDecodesANewStreamAsAFreshOneWould() throws {
        let encoder = try OpusEncoder(bitrate: 192_000)
        let first = try Self.encode(Self.material(frames: 24000), with: encoder)
        try encoder.reset()
        let second = try Self.encode(Self.material(frames: 9600, seed: 1.5), with: encoder)
        let fresh = try Self.decode(second, with: try OpusDecoder())

        let decoder = try OpusDecoder()
        _ = try Self.decode(first, with: decoder)
        decoder.reset()
        #expect(try Self.decode(second, with: decoder) == fresh)

        let unreset = try OpusDecoder()
        _ = try Self.decode(first, with: unreset)
        let stale = try Self.decode(second, with: unreset)
        let difference = zip(Self.left(stale), Self.left(fresh)).map { ($0 - $1) * ($0 - $1) }.reduce(0, +)
        #expect(difference > 0, "a decoder that keeps the old stream's state decodes the new one differently")
    }
}

extension OpusTests {
    /// SNR of `output` against `reference`, dB, over their common length.
    static func snr(_ output: ArraySlice<Double>, _ reference: ArraySlice<Double>) -> Double {
        let signal = reference.reduce(0) { $0 + $1 * $1 }
        let noise = zip(output, reference).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
        return 10 * log10(signal / max(noise, 1e-30))
    }

    /// A resume (streaming.md §3) starts the encoder afresh, and a fresh encoder's first 312 samples are not the
    /// audio: the receiver drops them (`Lyre-Start-At`), and the priming before them, 20 ms of the audio before
    /// the resume point. From its first sample on, the resumed stream is the input at the codec's own quality:
    /// at 20 resume points, 128 kbit/s, its worst first millisecond read 28.6 dB (unprimed: 25.5 dB), its worst
    /// first 20 ms 31.2 dB, and on average as good as the uninterrupted stream at the same place (+0.3 dB over
    /// the first millisecond; the uninterrupted stream's own first milliseconds vary by as much as 14 dB from
    /// one place to the next, as its frames fall).
    @Test func aResumePrimedWithThe20MillisecondsBeforeItDecodesAsTheInputFromItsFirstSample() throws {
        let input = Self.material(frames: 48000)
        let reference = stride(from: 0, to: input.count, by: 2).map { Double(input[$0]) }
        let continuous = Self.left(try Self.decode(try Self.encode(input, with: try OpusEncoder(bitrate: 128_000)), with: try OpusDecoder()))
        let encoder = try OpusEncoder(bitrate: 128_000)
        let decoder = try OpusDecoder()
        var gain = [48: 0.0, 960: 0.0]
        let seams = Array(stride(from: 6000 + 37, to: 40000, by: 1717))
        for seam in seams {
            try encoder.reset()
            decoder.reset()
            let resumed = Self.left(try Self.decode(try Self.encode(Array(input[((seam - 960) * 2)...]), with: encoder), with: decoder))
            let start = 960 + encoder.lookahead  // where input[seam] comes out: the first sample played
            for (n, floor) in [(48, 26.0), (960, 30.0)] {
                let primed = Self.snr(resumed[start..<(start + n)], reference[seam..<(seam + n)])
                let uninterrupted = Self.snr(continuous[(seam + 312)..<(seam + 312 + n)], reference[seam..<(seam + n)])
                #expect(primed >= floor, "the first \(n) samples after the resume at \(seam): \(primed) dB (uninterrupted: \(uninterrupted) dB)")
                gain[n]! += (primed - uninterrupted) / Double(seams.count)
            }
        }
        #expect(gain[48]! > -1 && gain[960]! > -1, "on average against the uninterrupted stream: \(gain) dB")
    }
}
