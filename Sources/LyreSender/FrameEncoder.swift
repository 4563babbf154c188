import LyreCodec
import LyreWire

/// The pacer's one encode per frame: a timeline slot's audio becomes the RTP packet every room is sent
/// (streaming.md §4). An encode that fails is counted and its slot passes unsent (the receivers conceal it
/// and ask for it in vain), instead of vanishing without a trace.
struct FrameEncoder: ~Copyable {
    /// The payload type of media packets (FEC's is `StreamSession.fecPayloadType`).
    static let payloadType: UInt8 = 96

    private let encoder: OpusEncoder
    let frameSamples: Int
    let ssrc: UInt32
    /// Encodes (and encoder resets) that failed, and the last failure.
    private(set) var failures = 0
    private(set) var lastFailure: OpusError?

    /// Frames under 10 ms (`--latency` under 20) are encoded with libopus's restricted low delay: their
    /// look-ahead (120 samples) then fits within one frame, as `Timeline` needs of it (its one frame of silence
    /// carries the look-ahead out), where the usual 312 samples would not fit in a 5 ms frame (240).
    init(bitrate: Int, frameSamples: Int, ssrc: UInt32) throws(OpusError) {
        encoder = try OpusEncoder(bitrate: bitrate, lowDelay: frameSamples < 480)
        self.frameSamples = frameSamples
        self.ssrc = ssrc
        precondition(encoder.lookahead <= frameSamples, "the encoder's look-ahead fits within one frame")
    }

    /// The encoder's delay, samples (`Timeline.encoderDelay`).
    var lookahead: Int { encoder.lookahead }

    /// The packet for `slot`, whose `pcm` is one frame; nil when the encoder failed (counted). A slot that
    /// `resetsEncoder` starts a fresh encoder first.
    mutating func packet(for slot: Timeline.Slot, _ pcm: ArraySlice<Float>) -> RTPPacket? {
        precondition(pcm.count == frameSamples * 2, "one frame of interleaved stereo")
        do {
            if slot.resetsEncoder { try encoder.reset() }
            let payload = try pcm.withUnsafeBufferPointer { (samples) throws(OpusError) in try encoder.encode(samples, frames: frameSamples) }
            return RTPPacket(marker: false, payloadType: Self.payloadType, sequenceNumber: slot.sequence, timestamp: slot.rtp, ssrc: ssrc, payload: payload)
        } catch {
            failures += 1
            lastFailure = error
            return nil
        }
    }
}
