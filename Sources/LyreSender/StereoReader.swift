import LyreAudio

/// A source read as 48 kHz interleaved stereo float: decoded by FFmpeg, mapped to two channels, and
/// resampled by libsoxr when it is not at 48 kHz. What a sender streams and what it plays locally both
/// come through here.
public struct StereoReader: ~Copyable {
    private let reader: AudioFileReader
    private var resampler: Resampler?
    private var buffer: [Float] = []
    /// Seconds, when the source can tell.
    public let duration: Double?
    /// The source has given all its input (the resampler may still hold some).
    public private(set) var sourceEnded = false
    /// Everything has come out.
    public private(set) var isAtEnd = false

    public init(_ reader: consuming AudioFileReader) throws(AudioError) {
        resampler = reader.sampleRate == 48000 ? nil : try Resampler(from: reader.sampleRate, channels: 2)
        duration = reader.frames.map { Double($0) / Double(reader.sampleRate) }
        self.reader = reader
    }

    /// Moves to `seconds` into the source, before the first read; false when it cannot seek.
    public func seek(toSeconds seconds: Double) -> Bool {
        reader.seek(toFrame: Int(seconds * Double(reader.sampleRate)))
    }

    /// Up to `frames` source frames' worth, as 48 kHz stereo; empty once at the end.
    public mutating func read(frames: Int = 4800) -> [Float] {
        let got = reader.read(frames: frames, into: &buffer)
        var stereo = Self.stereo(buffer, channels: reader.channels)
        if resampler != nil { stereo = resampler!.process(stereo, end: got == 0) }
        if got == 0 {
            sourceEnded = true
            if resampler == nil || stereo.isEmpty { isAtEnd = true }
        }
        return stereo
    }

    /// Interleaved stereo from any channel count: mono is doubled, more than two keep the first two.
    public static func stereo(_ pcm: [Float], channels: Int) -> [Float] {
        if channels == 2 { return pcm }
        let frames = pcm.count / channels
        var out = [Float](repeating: 0, count: frames * 2)
        for f in 0..<frames {
            out[2 * f] = pcm[f * channels]
            out[2 * f + 1] = channels == 1 ? pcm[f] : pcm[f * channels + 1]
        }
        return out
    }
}
