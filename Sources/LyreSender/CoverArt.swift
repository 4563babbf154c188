import Foundation
import LyreWire

/// Finds an audio file's cover art: a picture embedded in a FLAC file (its `PICTURE` metadata block) or an
/// MP3 file (an ID3v2.3/2.4 `APIC` frame), front cover first; else `cover.jpg`, `cover.png`, `folder.jpg`
/// or `folder.png` beside it. libsndfile reads string tags only, so the pictures are read here.
public enum CoverArt {
    public static func find(for path: String) -> Artwork? {
        if let embedded = embeddedFLACPicture(path) ?? embeddedID3Picture(path) { return embedded }
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

    /// The front cover (or else the first picture) of an ID3v2.3/2.4 tag: APIC frames. Tags using
    /// unsynchronisation or ID3v2.2 are not read.
    static func embeddedID3Picture(_ path: String) -> Artwork? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 10), header.count == 10 else { return nil }
        let h = Array(header)
        guard h[0] == 0x49, h[1] == 0x44, h[2] == 0x33, h[3] == 3 || h[3] == 4, h[5] & 0x80 == 0 else { return nil }
        func synchsafe(_ b: ArraySlice<UInt8>) -> Int { b.reduce(0) { $0 << 7 | Int($1 & 0x7F) } }
        let size = synchsafe(h[6..<10])
        guard size <= 16 * 1024 * 1024, let body = try? handle.read(upToCount: size), body.count == size else { return nil }
        let tag = Array(body)
        var at = h[5] & 0x40 != 0 ? 4 + (h[3] == 4 ? synchsafe(tag[0..<4]) : Int(tag[0]) << 24 | Int(tag[1]) << 16 | Int(tag[2]) << 8 | Int(tag[3])) : 0
        var pictures: [(type: UInt8, artwork: Artwork)] = []
        while at + 10 <= tag.count, tag[at] != 0 {
            let id = String(decoding: tag[at..<(at + 4)], as: UTF8.self)
            let sizeBytes = tag[(at + 4)..<(at + 8)]
            let length = h[3] == 4 ? synchsafe(sizeBytes) : sizeBytes.reduce(0) { $0 << 8 | Int($1) }
            let start = at + 10
            guard length > 0, start + length <= tag.count else { break }
            if id == "APIC", let picture = parseAPIC(Array(tag[start..<(start + length)])) { pictures.append(picture) }
            at = start + length
        }
        return (pictures.first { $0.type == 3 } ?? pictures.first)?.artwork
    }

    /// encoding(1) MIME NUL picture-type(1) description NUL (two NULs in UTF-16) data.
    static func parseAPIC(_ bytes: [UInt8]) -> (type: UInt8, artwork: Artwork)? {
        guard bytes.count > 4, let mimeEnd = bytes[1...].firstIndex(of: 0), mimeEnd + 1 < bytes.count else { return nil }
        let type = bytes[mimeEnd + 1]
        var at = mimeEnd + 2
        let wide = bytes[0] == 1 || bytes[0] == 2
        while at < bytes.count {
            if wide {
                if at + 1 < bytes.count, bytes[at] == 0, bytes[at + 1] == 0 { at += 2; break }
                at += 2
            } else {
                if bytes[at] == 0 { at += 1; break }
                at += 1
            }
        }
        guard at < bytes.count, let artwork = try? Artwork(bytes: Array(bytes[at...])) else { return nil }
        return (type, artwork)
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
