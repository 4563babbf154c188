#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What is playing, as `MPNowPlayingInfoCenter.nowPlayingInfo` says it on iOS (now-playing.md §2).
///
/// Elapsed time travels with the sender-clock time it was true at (`anchor`) and the playback rate, so a
/// receiver extrapolates `position = elapsed + rate × (now − anchor)` without a stream of updates.
/// On the wire: the body of a `SET_PARAMETER` with `Content-Type: application/json`.
public struct NowPlayingInfo: Sendable, Equatable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var trackCount: Int?
    /// Seconds.
    public var duration: Double?
    /// Seconds into the item, true at `anchor`.
    public var elapsed: Double
    /// 1 while playing, 0 while paused.
    public var rate: Double
    /// Sender clock (CLOCK_MONOTONIC ns) at which `elapsed` was true.
    public var anchor: UInt64
    public var queueIndex: Int?
    public var queueCount: Int?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
                genre: String? = nil, trackNumber: Int? = nil, trackCount: Int? = nil, duration: Double? = nil,
                elapsed: Double = 0, rate: Double = 0, anchor: UInt64 = 0, queueIndex: Int? = nil, queueCount: Int? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.genre = genre
        self.trackNumber = trackNumber
        self.trackCount = trackCount
        self.duration = duration
        self.elapsed = elapsed
        self.rate = rate
        self.anchor = anchor
        self.queueIndex = queueIndex
        self.queueCount = queueCount
    }

    /// Limits from now-playing.md §2.
    public static let maximumBodyBytes = 64 * 1024
    public static let maximumTextBytes = 1024

    /// The position at sender-clock time `now`, seconds: extrapolated from the anchor at `rate`, never below
    /// 0 and never past `duration` when it is known.
    public func position(at now: UInt64) -> Double {
        let since = now >= anchor ? Double(now - anchor) / 1e9 : -Double(anchor - now) / 1e9
        var position = elapsed + rate * since
        if let duration { position = min(position, duration) }
        return max(0, position)
    }

    /// A position or duration as a player shows it: `m:ss`.
    public static func clockText(_ seconds: Double) -> String {
        let s = Int(max(0, seconds).rounded(.down))
        let tens = (s % 60) < 10 ? "0" : ""
        return "\(s / 60):\(tens)\(s % 60)"
    }

    /// The JSON body.
    public func serialized() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(self)) ?? Data("{}".utf8))
    }

    /// Parses and checks a body; the error says what is wrong, for the 4xx answer.
    public init(parsing body: [UInt8]) throws(NowPlayingError) {
        guard body.count <= Self.maximumBodyBytes else { throw .tooLarge(body.count, limit: Self.maximumBodyBytes) }
        guard String(validating: body, as: UTF8.self) != nil else { throw .invalidUTF8 }
        let decoded: NowPlayingInfo
        do {
            decoded = try JSONDecoder().decode(NowPlayingInfo.self, from: Data(body))
        } catch {
            throw .malformed("not a now-playing JSON object: \(Self.summary(error))")
        }
        try decoded.validate()
        self = decoded
    }

    /// Checks the limits and ranges now-playing.md §2 sets.
    public func validate() throws(NowPlayingError) {
        for (name, text) in [("title", title), ("artist", artist), ("album", album), ("albumArtist", albumArtist), ("genre", genre)] {
            if let text, text.utf8.count > Self.maximumTextBytes { throw .malformed("\(name) is over \(Self.maximumTextBytes) bytes") }
        }
        guard elapsed.isFinite, elapsed >= 0 else { throw .malformed("elapsed must be a number of seconds ≥ 0") }
        guard rate.isFinite, (-32...32).contains(rate) else { throw .malformed("rate must be between -32 and 32") }
        if let duration { guard duration.isFinite, duration >= 0 else { throw .malformed("duration must be ≥ 0") } }
        for (name, value) in [("trackNumber", trackNumber), ("trackCount", trackCount), ("queueIndex", queueIndex), ("queueCount", queueCount)] {
            if let value, value < 0 { throw .malformed("\(name) must be ≥ 0") }
        }
    }

    private static func summary(_ error: Error) -> String {
        switch error {
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.keyNotFound(_, let context), DecodingError.dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default: return "\(error)"
        }
    }
}

/// Why a now-playing body or artwork was refused.
public enum NowPlayingError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(Int, limit: Int)
    case invalidUTF8
    case malformed(String)
    case unsupportedImage

    /// The RTSP status that answers it (now-playing.md §2).
    public var status: Int {
        switch self {
        case .tooLarge: 413
        case .invalidUTF8, .malformed: 400
        case .unsupportedImage: 415
        }
    }

    public var description: String {
        switch self {
        case .tooLarge(let n, let limit): "\(n) bytes is over the limit of \(limit)"
        case .invalidUTF8: "text is not valid UTF-8"
        case .malformed(let why): why
        case .unsupportedImage: "artwork must be a JPEG or PNG image"
        }
    }
}

/// Cover art: JPEG or PNG bytes, up to `maximumBytes` (now-playing.md §3).
public struct Artwork: Sendable, Equatable {
    public enum ImageType: String, Sendable { case jpeg = "image/jpeg", png = "image/png" }

    /// 1 MiB: a 1000×1000 JPEG is about 200 KB.
    public static let maximumBytes = 1024 * 1024

    public let bytes: [UInt8]
    public let type: ImageType

    /// Checks the size and the image's magic bytes; `declared` is the Content-Type when there is one.
    public init(bytes: [UInt8], declared: String? = nil) throws(NowPlayingError) {
        guard bytes.count <= Self.maximumBytes else { throw .tooLarge(bytes.count, limit: Self.maximumBytes) }
        let sniffed: ImageType? =
            bytes.starts(with: [0xFF, 0xD8, 0xFF]) ? .jpeg
            : bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) ? .png : nil
        guard let sniffed else { throw .unsupportedImage }
        if let declared, let first = declared.lowercased().split(separator: ";").first,
            let named = ImageType(rawValue: String(first).trimmingSpaces),
            named != sniffed
        { throw .unsupportedImage }
        self.bytes = bytes
        type = sniffed
    }

    public var fileExtension: String { type == .jpeg ? "jpg" : "png" }
}
