import Logging
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A file's cover art: the picture embedded in it (read by FFmpeg's demuxers: a FLAC PICTURE block, an ID3v2
/// APIC frame, an MP4 `covr` atom), when it really is a JPEG or PNG; else `cover.jpg`, `cover.png`,
/// `folder.jpg` or `folder.png` beside it.
public enum CoverArt {
    private static let logger = Logger(label: "lyre.sender")

    /// A picture passed over (not a JPEG or PNG, or over now-playing.md §3's size limit) is logged to `logger`,
    /// with why, at `notice`: the user sees why a picture they put there is not shown. `logger` is the sender's
    /// when nil.
    public static func find(for path: String, embedded: [UInt8]?, logger: Logger? = nil) -> Artwork? {
        let logger = logger ?? Self.logger
        if let embedded {
            do { return try Artwork(bytes: embedded) } catch {
                logger.notice("\(path): its own picture is not sent: \(error)")
            }
        }
        let directory = PathText.directory(of: path)
        for name in ["cover.jpg", "cover.jpeg", "cover.png", "folder.jpg", "folder.png", "Cover.jpg", "Folder.jpg"] {
            let candidate = directory.isEmpty ? name : directory + "/" + name
            guard let data = FileManager.default.contents(atPath: candidate) else { continue }
            do { return try Artwork(bytes: Array(data)) } catch {
                logger.notice("\(candidate): not sent as cover art: \(error)")
            }
        }
        return nil
    }
}
