import CFFmpegShim
import LyreWire

/// An error opening or converting audio: FFmpeg's or libsoxr's text.
public struct AudioError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
}

/// Raw PCM layout for headerless input such as stdin: `s16le:44100:2`.
public struct RawPCMFormat: Sendable, Equatable {
    /// FFmpeg's raw demuxer of the same name reads each.
    public enum Sample: String, Sendable, CaseIterable { case s16le, s16be, s24le, s32le, f32le, u8 }
    public var sample: Sample
    public var sampleRate: Int
    public var channels: Int

    public init(sample: Sample, sampleRate: Int, channels: Int) {
        self.sample = sample
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Parses `SAMPLE:RATE:CHANNELS`; nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: ":").map(String.init)
        guard parts.count == 3, let sample = Sample(rawValue: parts[0].lowercased()), let rate = Int(parts[1]),
            (8000...384_000).contains(rate), let channels = Int(parts[2]), (1...8).contains(channels)
        else { return nil }
        self.init(sample: sample, sampleRate: rate, channels: channels)
    }
}

/// An audio source decoded by FFmpeg's libraries (libavformat, libavcodec, libswresample): every container
/// and codec they read, among them WAV, FLAC, Ogg Vorbis/Opus, MP3 and MP4/M4A (AAC, ALAC). A WAV of samples
/// (integer or float, without an ID3 chunk) and raw PCM are read by libsndfile instead, so that playing them
/// loads no FFmpeg library (25 MB of `lyre play`'s memory); both give the same floats.
/// Samples come out as interleaved float in the source's own rate and channel count. This is the one
/// decoding path: what a sender streams, what it plays locally, and the tags and cover art it describes.
public struct AudioFileReader: ~Copyable {
    private let decoder: OpaquePointer
    public let sampleRate: Int
    public let channels: Int
    /// Frames in the source; nil for streams (stdin) and containers that cannot tell.
    public let frames: Int?
    /// Which library reads the source: "libsndfile" or "FFmpeg".
    public let library: String
    /// Tags by lower-case name as FFmpeg names them (`title`, `artist`, `album`, `album_artist`, `genre`,
    /// `track`), the container's first and then the audio stream's (where Ogg keeps them).
    public let tags: [String: String]

    /// Opens a file by path.
    public init(path: String) throws(AudioError) {
        var error = [CChar](repeating: 0, count: 512)
        guard let decoder = lyre_decoder_open_file(path, &error, error.count) else {
            throw AudioError(description: String(nulTerminated: error))
        }
        self.init(decoder: decoder, streaming: false)
    }

    /// Reads headerless PCM from a file descriptor (0 for stdin). The descriptor is not closed.
    public init(fileDescriptor: Int32, raw format: RawPCMFormat) throws(AudioError) {
        var error = [CChar](repeating: 0, count: 512)
        guard let decoder = lyre_decoder_open_raw(fileDescriptor, format.sample.rawValue, Int32(format.sampleRate),
                                                  Int32(format.channels), &error, error.count)
        else { throw AudioError(description: String(nulTerminated: error)) }
        self.init(decoder: decoder, streaming: true)
    }

    private init(decoder: OpaquePointer, streaming: Bool) {
        self.decoder = decoder
        library = String(cString: lyre_decoder_library(decoder))
        sampleRate = Int(lyre_decoder_sample_rate(decoder))
        channels = Int(lyre_decoder_channels(decoder))
        let frames = lyre_decoder_frames(decoder)
        self.frames = streaming || frames <= 0 ? nil : Int(frames)
        var tags: [String: String] = [:]
        for which in [Int32(0), 1] {
            var index: Int32 = 0
            var key: UnsafePointer<CChar>?
            var value: UnsafePointer<CChar>?
            while lyre_decoder_tag(decoder, which, index, &key, &value) != 0, let key, let value {
                let name = String(cString: key).lowercased()
                if tags[name] == nil { tags[name] = String(cString: value) }
                index += 1
            }
        }
        self.tags = tags
    }

    deinit { lyre_decoder_close(decoder) }

    /// The embedded picture (FLAC PICTURE block, ID3v2 APIC frame, MP4 `covr` atom), the front cover when
    /// the file says which; its bytes as stored, not yet checked to be an image.
    public var picture: [UInt8]? {
        var data: UnsafePointer<UInt8>? = nil
        var size: Int32 = 0
        guard lyre_decoder_picture(decoder, &data, &size) != 0, let data, size > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(size)))
    }

    /// Reads up to `frames` frames (interleaved) into `buffer`, replacing its contents; 0 at the end.
    public func read(frames: Int, into buffer: inout [Float]) -> Int {
        buffer = [Float](repeating: 0, count: frames * channels)
        let got = buffer.withUnsafeMutableBufferPointer { lyre_decoder_read(decoder, $0.baseAddress, frames) }
        buffer.removeLast((frames - got) * channels)
        return got
    }

    /// Moves to `frame`, sample-accurately; false when the input cannot seek.
    public func seek(toFrame frame: Int) -> Bool {
        lyre_decoder_seek(decoder, Int64(frame)) >= 0
    }
}
