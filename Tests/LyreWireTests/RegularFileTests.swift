import Foundation
import LyreWire
import Testing

/// `lyre sink` reads an app's cover (`mpris:artUrl`, a path any process can name), and both ends their state
/// files, only from a regular file of at most the limit, never through a link, and never wait: a FIFO with no
/// writer, a device, a link and a file too large are each refused at once.
@Suite(.timeLimit(.minutes(1)))
struct RegularFileTests {
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

        #expect(RegularFile.read(cover, limit: 1024) == .success(bytes))
        #expect(RegularFile.read(fifo, limit: 1024) == .failure(.notARegularFile))
        #expect(RegularFile.read("/dev/zero", limit: 1024) == .failure(.notARegularFile))
        #expect(RegularFile.read(large, limit: 1024) == .failure(.tooLarge(2048)))
        #expect(RegularFile.read(link, limit: 1024) == .failure(.cannotOpen(errno: ELOOP)))
        #expect(RegularFile.read(link, limit: 1024, followingLinks: true) == .success(bytes))
        #expect(RegularFile.read(directory + "/none.png", limit: 1024) == .failure(.cannotOpen(errno: ENOENT)))
        #expect(RegularFile.read(cover, limit: bytes.count) == .success(bytes))
        #expect(RegularFile.read(cover, limit: bytes.count - 1) == .failure(.tooLarge(bytes.count)))
    }
}
