import Foundation
import LyreSender
import LyreWire
import Testing

/// README "art", now-playing.md §3: a file's own picture when it is a JPEG or PNG, else `cover.jpg`, `cover.png`,
/// `folder.jpg` or `folder.png` beside it; anything that is not a JPEG or PNG is never sent.
struct CoverArtTests {
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array("a JPEG".utf8)
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array("a PNG".utf8)
    static let gif: [UInt8] = Array("GIF89a, not sent".utf8)

    static func folder(_ files: [String: [UInt8]]) throws -> ScratchFolder {
        let folder = try ScratchFolder("lyre-art")
        for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: folder.path + "/" + name)) }
        return folder
    }

    @Test func theFilesOwnPictureThenOneBesideItOnlyJPEGOrPNG() throws {
        let cases: [(files: [String: [UInt8]], embedded: [UInt8]?, expected: [UInt8]?)] = [
            // The file's own picture comes first.
            (["cover.jpg": Self.png], Self.jpeg, Self.jpeg),
            // A GIF inside the file is never sent: the cover beside it is.
            (["cover.png": Self.png], Self.gif, Self.png),
            (["folder.jpg": Self.jpeg], nil, Self.jpeg),
            (["folder.png": Self.png], nil, Self.png),
            // cover before folder; a cover.jpg that is not a JPEG or PNG is passed over.
            (["cover.jpg": Self.jpeg, "folder.jpg": Self.png], nil, Self.jpeg),
            (["cover.jpg": Self.gif, "folder.png": Self.png], nil, Self.png),
            // Nothing that is a picture: nothing.
            (["cover.jpg": Self.gif, "notes.png": Self.png], Self.gif, nil),
            ([:], nil, nil),
        ]
        for (index, row) in cases.enumerated() {
            let folder = try Self.folder(row.files), directory = folder.path
            defer { folder.remove() }
            let found = CoverArt.find(for: directory + "/song.flac", embedded: row.embedded)
            #expect(found?.bytes == row.expected, "case \(index): \(row.files.keys.sorted())")
        }
    }
}
