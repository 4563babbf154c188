import CSndfile

#if canImport(Glibc)
import Glibc
#endif

/// An error from libsndfile, with `sf_strerror`'s text.
public struct SndfileError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// Raw PCM layout for headerless input such as stdin: `s16le:44100:2`.
public struct RawPCMFormat: Sendable, Equatable {
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

    var sndfileFormat: Int32 {
        let raw = Int32(SF_FORMAT_RAW)
        switch sample {
        case .s16le: return raw | Int32(SF_FORMAT_PCM_16) | Int32(SF_ENDIAN_LITTLE)
        case .s16be: return raw | Int32(SF_FORMAT_PCM_16) | Int32(SF_ENDIAN_BIG)
        case .s24le: return raw | Int32(SF_FORMAT_PCM_24) | Int32(SF_ENDIAN_LITTLE)
        case .s32le: return raw | Int32(SF_FORMAT_PCM_32) | Int32(SF_ENDIAN_LITTLE)
        case .f32le: return raw | Int32(SF_FORMAT_FLOAT) | Int32(SF_ENDIAN_LITTLE)
        case .u8: return raw | Int32(SF_FORMAT_PCM_U8)
        }
    }
}

/// A `SNDFILE` open for reading (`sf_open` / `sf_close`): WAV, FLAC, Ogg Vorbis/Opus, MP3 and raw PCM.
/// Samples come out as interleaved float in the file's own rate and channel count.
public struct AudioFileReader: ~Copyable {
    private let handle: OpaquePointer
    public let sampleRate: Int
    public let channels: Int
    /// Frames in the file; nil for streams (stdin) and formats that cannot tell.
    public let frames: Int?
    /// String tags (`sf_get_string`): title, artist, album, genre, track number.
    public let tags: [String: String]

    /// Opens a file by path.
    public init(path: String) throws(SndfileError) {
        var info = SF_INFO()
        guard let handle = sf_open(path, Int32(SFM_READ), &info) else {
            throw SndfileError(description: "cannot read \(path): \(String(cString: sf_strerror(nil)))")
        }
        self.init(handle: handle, info: info)
    }

    /// Reads headerless PCM from a file descriptor (0 for stdin). The descriptor is not closed.
    public init(fileDescriptor: Int32, raw format: RawPCMFormat) throws(SndfileError) {
        var info = SF_INFO()
        info.samplerate = Int32(format.sampleRate)
        info.channels = Int32(format.channels)
        info.format = format.sndfileFormat
        guard let handle = sf_open_fd(fileDescriptor, Int32(SFM_READ), &info, 0) else {
            throw SndfileError(description: "cannot read raw PCM: \(String(cString: sf_strerror(nil)))")
        }
        self.init(handle: handle, info: info, streaming: true)
    }

    private init(handle: OpaquePointer, info: SF_INFO, streaming: Bool = false) {
        self.handle = handle
        sampleRate = Int(info.samplerate)
        channels = Int(info.channels)
        frames = streaming || info.frames <= 0 || info.frames == Int64.max ? nil : Int(info.frames)
        var tags: [String: String] = [:]
        let names: [(Int32, String)] = [
            (Int32(SF_STR_TITLE), "title"), (Int32(SF_STR_ARTIST), "artist"), (Int32(SF_STR_ALBUM), "album"),
            (Int32(SF_STR_GENRE), "genre"), (Int32(SF_STR_TRACKNUMBER), "tracknumber"),
        ]
        for (id, name) in names {
            if let text = sf_get_string(handle, id) {
                tags[name] = String(decoding: UnsafeRawBufferPointer(start: text, count: strlen(text)), as: UTF8.self)
            }
        }
        self.tags = tags
    }

    deinit { sf_close(handle) }

    /// Reads up to `frames` frames (interleaved) into `buffer`, replacing its contents; 0 at the end.
    public func read(frames: Int, into buffer: inout [Float]) -> Int {
        buffer = [Float](repeating: 0, count: frames * channels)
        let got = buffer.withUnsafeMutableBufferPointer { sf_readf_float(handle, $0.baseAddress, sf_count_t(frames)) }
        buffer.removeLast((frames - Int(max(got, 0))) * channels)
        return Int(max(got, 0))
    }

    /// Moves to `frame` (`sf_seek`); false when the input cannot seek.
    public func seek(toFrame frame: Int) -> Bool {
        sf_seek(handle, sf_count_t(frame), SEEK_SET) >= 0
    }
}
