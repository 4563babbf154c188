import COpus
import COpusShim

/// An error from libopus: its code and `opus_strerror` text.
public struct OpusError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    public var description: String { "\(operation): \(String(cString: opus_strerror(code)))" }

    /// The value when it is not a negative error code.
    static func check(_ result: Int32, _ operation: String) throws(OpusError) -> Int32 {
        guard result >= 0 else { throw OpusError(code: result, operation: operation) }
        return result
    }
}

/// Opus at 48 kHz stereo, the only form Lyre sends (RFC 7587).
public enum OpusFormat {
    public static let sampleRate: Int32 = 48000
    public static let channels: Int32 = 2
    /// The largest packet libopus writes for one frame.
    public static let maximumPacket = 1275
    /// The longest frame a packet can hold: 120 ms.
    public static let maximumFrame = 5760
    /// The shortest frame, and the step of libopus's concealment: 2.5 ms.
    public static let shortestFrame = 120
}

/// An `OpusEncoder` (`opus_encoder_create` / `opus_encoder_destroy`): 48 kHz stereo float in, packets out.
public struct OpusEncoder: ~Copyable {
    private let handle: OpaquePointer

    /// `bitrate` in bits per second. The encoder is set up for music: the signal type is music and in-band
    /// FEC is off with no expected loss, because either of those moves libopus to its SILK and hybrid speech
    /// modes, which do not keep a music waveform (a full-band sweep came out at 11 dB SNR where CELT gives
    /// about 40). Loss is handled below the codec, at the packet layer. VBR is unconstrained, as ffmpeg's
    /// libopus encoder sets it: libopus's default constrained VBR cost 6 dB of SNR at 32 kbit/s.
    ///
    /// `lowDelay` asks for libopus's restricted low-delay application: CELT alone, with 2.5 ms of look-ahead
    /// instead of 6.5 (`lookahead` 120 samples, not 312). Frames under 10 ms are CELT's alone anyway (SILK
    /// takes 10 ms at least), so for them it costs nothing and takes 4 ms off the latency.
    public init(bitrate: Int, lowDelay: Bool = false) throws(OpusError) {
        var error: Int32 = 0
        let application = lowDelay ? OPUS_APPLICATION_RESTRICTED_LOWDELAY : OPUS_APPLICATION_AUDIO
        guard let handle = opus_encoder_create(OpusFormat.sampleRate, OpusFormat.channels, application, &error)
        else { throw OpusError(code: error, operation: "opus_encoder_create") }
        var rc = lyre_opus_encoder_set_bitrate(handle, Int32(clamping: bitrate))
        if rc >= 0 { rc = lyre_opus_encoder_set_signal_music(handle) }
        if rc >= 0 { rc = lyre_opus_encoder_set_vbr_constraint(handle, 0) }
        if rc >= 0 { rc = lyre_opus_encoder_set_inband_fec(handle, 0) }
        if rc >= 0 { rc = lyre_opus_encoder_set_packet_loss_perc(handle, 0) }
        guard rc >= 0 else {
            opus_encoder_destroy(handle)
            throw OpusError(code: rc, operation: "opus_encoder_ctl")
        }
        self.handle = handle
    }

    deinit { opus_encoder_destroy(handle) }

    /// Samples of delay the encoder adds (`OPUS_GET_LOOKAHEAD`).
    public var lookahead: Int {
        var samples: Int32 = 0
        _ = lyre_opus_encoder_get_lookahead(handle, &samples)
        return Int(samples)
    }

    /// Forgets the audio before (`OPUS_RESET_STATE`): the next packet decodes as a stream's first, whose first
    /// `lookahead` samples are silence before what is encoded next. The sender does it where its audio does not
    /// go on from what it last encoded (a resume from pause, streaming.md §3).
    public func reset() throws(OpusError) {
        _ = try OpusError.check(lyre_opus_encoder_reset(handle), "OPUS_RESET_STATE")
    }

    /// Encodes one frame of interleaved stereo float samples (`frames` per channel: 120…5760).
    public func encode(_ pcm: UnsafeBufferPointer<Float>, frames: Int) throws(OpusError) -> [UInt8] {
        precondition(pcm.count >= frames * 2, "one frame of interleaved stereo samples")
        var packet = [UInt8](repeating: 0, count: OpusFormat.maximumPacket)
        let length = try OpusError.check(
            opus_encode_float(handle, pcm.baseAddress!, Int32(frames), &packet, Int32(packet.count)), "opus_encode_float")
        packet.removeLast(packet.count - Int(length))
        return packet
    }
}

/// An `OpusDecoder` (`opus_decoder_create` / `opus_decoder_destroy`): packets in, 48 kHz stereo 16-bit out.
public struct OpusDecoder: ~Copyable {
    private let handle: OpaquePointer

    public init() throws(OpusError) {
        var error: Int32 = 0
        guard let handle = opus_decoder_create(OpusFormat.sampleRate, OpusFormat.channels, &error) else {
            throw OpusError(code: error, operation: "opus_decoder_create")
        }
        self.handle = handle
    }

    deinit { opus_decoder_destroy(handle) }

    /// Forgets the stream before (`OPUS_RESET_STATE`), as the sender's encoder does where its audio does not go
    /// on from what it last encoded (a resume or a seek, after FLUSH: streaming.md §3). A decoder that kept the
    /// old stream's state would decode the new one's first packets up to 7 dB too loud, for about 30 ms.
    /// (`OPUS_RESET_STATE` cannot fail on a decoder that exists.)
    public func reset() {
        _ = lyre_opus_decoder_reset(handle)
    }

    /// Samples per channel in a packet, without decoding it.
    public static func frames(in packet: [UInt8]) -> Int? {
        guard !packet.isEmpty else { return nil }
        let n = packet.withUnsafeBufferPointer { opus_packet_get_nb_samples($0.baseAddress!, Int32($0.count), OpusFormat.sampleRate) }
        return n > 0 ? Int(n) : nil
    }

    /// Whether `packet` carries in-band FEC (SILK's LBRR data) for the frame before it. Only SILK and hybrid
    /// packets can; the flag is the bit after the first frame's voice-activity bits, per channel (RFC 6716
    /// §4.2.3), read here as libopus 1.5's `opus_packet_has_lbrr` reads it (Debian's libopus is 1.3.1, which
    /// has no such call). `opus_decode` with FEC on a packet without it conceals instead, so this is how a
    /// receiver tells in-band FEC used from concealment.
    public static func hasInBandFEC(_ packet: [UInt8]) -> Bool {
        guard let toc = packet.first, toc >> 3 < 16 else { return false }  // configurations 16…31 are CELT only
        var frames = [UnsafePointer<UInt8>?](repeating: nil, count: 48)
        var sizes = [Int16](repeating: 0, count: 48)
        return packet.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress, opus_packet_parse(base, Int32(bytes.count), nil, &frames, &sizes, nil) > 0,
                  sizes[0] > 0, let first = frames[0] else { return false }
            let perFrame = Int(opus_packet_get_samples_per_frame(base, OpusFormat.sampleRate))
            let silkFrames = max(1, perFrame / 960)  // 40 and 60 ms SILK frames hold 2 and 3 of 20 ms
            let channels = Int(opus_packet_get_nb_channels(base))
            var lbrr = (first[0] >> (7 - silkFrames)) & 1 == 1
            if channels == 2 { lbrr = lbrr || (first[0] >> (6 - 2 * silkFrames)) & 1 == 1 }
            return lbrr
        }
    }

    /// Decodes a packet into interleaved stereo samples appended to `output`; returns frames decoded.
    @discardableResult
    public func decode(_ packet: [UInt8], into output: inout [Int16]) throws(OpusError) -> Int {
        // Room for exactly the packet's frames (it says how many), not for the longest possible packet:
        // before, 120 ms of zeros were appended and cut again for every 20 ms packet.
        try run(packet, frames: min(Self.frames(in: packet) ?? OpusFormat.maximumFrame, OpusFormat.maximumFrame), fec: false, into: &output)
    }

    /// Rebuilds the frame *before* `packet` from the in-band FEC data it carries (`frames` long).
    @discardableResult
    public func decodeFEC(from packet: [UInt8], frames: Int, into output: inout [Int16]) throws(OpusError) -> Int {
        try run(packet, frames: frames, fec: true, into: &output)
    }

    /// Packet-loss concealment for `frames` missing frames (`opus_decode` with no packet). libopus conceals
    /// whole 2.5 ms only and refuses any other length, so a gap of another length (a long outage's time shared
    /// between the packets lost in it) is concealed to the next whole 2.5 ms and cut to its own length.
    @discardableResult
    public func conceal(frames: Int, into output: inout [Int16]) throws(OpusError) -> Int {
        let step = OpusFormat.shortestFrame
        let concealed = try run(nil, frames: (frames + step - 1) / step * step, fec: false, into: &output)
        let kept = min(concealed, frames)
        output.removeLast((concealed - kept) * 2)
        return kept
    }

    private func run(_ packet: [UInt8]?, frames: Int, fec: Bool, into output: inout [Int16]) throws(OpusError) -> Int {
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: frames * 2))
        let decoded: Int32 = output.withUnsafeMutableBufferPointer { out in
            let target = out.baseAddress! + start
            if let packet {
                return packet.withUnsafeBufferPointer {
                    opus_decode(handle, $0.baseAddress, Int32($0.count), target, Int32(frames), fec ? 1 : 0)
                }
            }
            return opus_decode(handle, nil, 0, target, Int32(frames), 0)
        }
        guard decoded >= 0 else {
            output.removeLast(frames * 2)
            throw OpusError(code: decoded, operation: fec ? "opus_decode (FEC)" : "opus_decode")
        }
        output.removeLast((frames - Int(decoded)) * 2)
        return Int(decoded)
    }
}
