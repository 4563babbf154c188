import Foundation
import Logging
import LyreSender
import LyreWire
import Synchronization
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

    /// A picture passed over is not dropped in silence: each is logged, with where it is and why, and one that
    /// is sent is not.
    @Test func aPicturePassedOverIsLoggedWithWhy() throws {
        let folder = try Self.folder(["cover.jpg": Self.gif, "folder.jpg": [0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0, count: Artwork.maximumBytes), "folder.png": Self.png])
        defer { folder.remove() }
        let lines = CapturedLog()
        let logger = Logger(label: "test") { _ in lines }
        let found = CoverArt.find(for: folder.path + "/song.flac", embedded: Self.gif, logger: logger)
        #expect(found?.bytes == Self.png)
        #expect(lines.messages == [
            "\(folder.path)/song.flac: its own picture is not sent: artwork must be a JPEG or PNG image",
            "\(folder.path)/cover.jpg: not sent as cover art: artwork must be a JPEG or PNG image",
            "\(folder.path)/folder.jpg: not sent as cover art: \(Artwork.maximumBytes + 3) bytes is over the limit of \(Artwork.maximumBytes)",
        ])
        #expect(lines.levels.allSatisfy { $0 == .notice })
    }
}

/// A log handler that keeps what it is given, for a test to read.
final class CapturedLog: LogHandler, @unchecked Sendable {
    private let entries = Mutex<[(Logger.Level, String)]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var messages: [String] { entries.withLock { $0.map(\.1) } }
    var levels: [Logger.Level] { entries.withLock { $0.map(\.0) } }

    func log(event: LogEvent) {
        entries.withLock { $0.append((event.level, event.message.description)) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
