import Foundation
import LyreWire

/// Finds an audio file's cover art: a picture embedded in a FLAC file (its `PICTURE` metadata block, front
/// cover first), else `cover.jpg`, `cover.png`, `folder.jpg` or `folder.png` beside it. libsndfile reads
/// string tags only, so the FLAC metadata blocks are read here.
public enum CoverArt {
    public static func find(for path: String) -> Artwork? {
        if let embedded = embeddedFLACPicture(path) { return embedded }
        let directory = (path as NSString).deletingLastPathComponent
        for name in ["cover.jpg", "cover.jpeg", "cover.png", "folder.jpg", "folder.png", "Cover.jpg", "Folder.jpg"] {
            let candidate = directory.isEmpty ? name : directory + "/" + name
            if let data = FileManager.default.contents(atPath: candidate), let artwork = try? Artwork(bytes: Array(data)) {
                return artwork
            }
        }
        return nil
    }

    /// The front cover (or else the first picture) of a FLAC file: METADATA_BLOCK_PICTURE, type 6.
    static func embeddedFLACPicture(_ path: String) -> Artwork? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let magic = try? handle.read(upToCount: 4), Array(magic) == Array("fLaC".utf8) else { return nil }
        var pictures: [(type: UInt32, artwork: Artwork)] = []
        var last = false
        var blocks = 0
        while !last, blocks < 128 {
            blocks += 1
            guard let header = try? handle.read(upToCount: 4), header.count == 4 else { return nil }
            let h = Array(header)
            last = h[0] & 0x80 != 0
            let kind = h[0] & 0x7F
            let length = Int(h[1]) << 16 | Int(h[2]) << 8 | Int(h[3])
            if kind == 6, length <= Artwork.maximumBytes + 64 * 1024 {
                guard let data = try? handle.read(upToCount: length), data.count == length else { return nil }
                if let picture = parsePicture(Array(data)) { pictures.append(picture) }
            } else {
                guard let offset = try? handle.offset() else { return nil }
                try? handle.seek(toOffset: offset + UInt64(length))
            }
        }
        return (pictures.first { $0.type == 3 } ?? pictures.first)?.artwork
    }

    /// type(4) mime-length(4) mime description-length(4) description width height depth colours (4 each)
    /// data-length(4) data, all big-endian.
    static func parsePicture(_ bytes: [UInt8]) -> (type: UInt32, artwork: Artwork)? {
        var at = 0
        func u32() -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            defer { at += 4 }
            return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
        guard let type = u32(), let mimeLength = u32() else { return nil }
        at += Int(mimeLength)
        guard let descriptionLength = u32() else { return nil }
        at += Int(descriptionLength) + 16
        guard let dataLength = u32(), at + Int(dataLength) <= bytes.count else { return nil }
        guard let artwork = try? Artwork(bytes: Array(bytes[at..<(at + Int(dataLength))])) else { return nil }
        return (type, artwork)
    }
}
