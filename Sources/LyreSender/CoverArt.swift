import Foundation
import LyreWire

/// A file's cover art: the picture embedded in it (read by FFmpeg's demuxers: a FLAC PICTURE block, an ID3v2
/// APIC frame, an MP4 `covr` atom), when it really is a JPEG or PNG; else `cover.jpg`, `cover.png`,
/// `folder.jpg` or `folder.png` beside it.
public enum CoverArt {
    public static func find(for path: String, embedded: [UInt8]?) -> Artwork? {
        if let embedded, let artwork = try? Artwork(bytes: embedded) { return artwork }
        let directory = PathText.directory(of: path)
        for name in ["cover.jpg", "cover.jpeg", "cover.png", "folder.jpg", "folder.png", "Cover.jpg", "Folder.jpg"] {
            let candidate = directory.isEmpty ? name : directory + "/" + name
            if let data = FileManager.default.contents(atPath: candidate), let artwork = try? Artwork(bytes: Array(data)) {
                return artwork
            }
        }
        return nil
    }
}
