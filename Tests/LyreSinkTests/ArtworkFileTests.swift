import Foundation
import LyreSink
import Testing

/// `lyre sink` reads an app's cover (`mpris:artUrl`, a path any process can name) only from a regular file of
/// at most the limit, never through a link, and never waits: a FIFO with no writer, a device, a link and a
/// file too large are each refused at once.
@Suite(.timeLimit(.minutes(1)))
struct ArtworkFileTests {
    @Test func onlyARegularFileWithinTheLimitIsRead() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-art-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cover = directory + "/cover.png", fifo = directory + "/fifo", link = directory + "/link.png", large = directory + "/large.png"
        let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        try Data(bytes).write(to: URL(fileURLWithPath: cover))
        try Data(count: 2048).write(to: URL(fileURLWithPath: large))
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(symlink(cover, link) == 0)

        #expect(ArtworkFile.read(cover, limit: 1024) == .success(bytes))
        #expect(ArtworkFile.read(fifo, limit: 1024) == .failure(.notARegularFile))
        #expect(ArtworkFile.read("/dev/zero", limit: 1024) == .failure(.notARegularFile))
        #expect(ArtworkFile.read(large, limit: 1024) == .failure(.tooLarge(2048)))
        guard case .failure(.cannotOpen) = ArtworkFile.read(link, limit: 1024) else {
            Issue.record("a link was followed")
            return
        }
        guard case .failure(.cannotOpen) = ArtworkFile.read(directory + "/none.png", limit: 1024) else {
            Issue.record("a missing file was read")
            return
        }
    }
}
