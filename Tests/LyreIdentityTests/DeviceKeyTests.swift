import Foundation
@testable import LyreIdentity
import LyreWire
import Testing

/// The device's long-term key: made once, kept private (0600), the same after a restart, and its fingerprint
/// the one discovery.md defines (checked against Python's hashlib).
struct DeviceKeyTests {
    static func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    static func mode(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    /// A link planted where the temporary file would go is never followed: its target is untouched, and the
    /// file written is a file of its own, 0600.
    @Test func aPlantedLinkIsNotFollowed() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let victim = directory + "/victim", path = directory + "/device-key"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        symlink(victim, path + ".new")
        try DeviceIdentity.writePrivate([1, 2, 3], to: path)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == [1, 2, 3])
        #expect(try Self.mode(path) == 0o600)
    }

    @Test func aKeyIsMadeOnceKeptPrivateAndReadBack() throws {
        let directory = try Self.scratch() + "/state"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try DeviceKey.loadOrCreate(in: directory)
        let path = directory + "/" + DeviceKey.fileName
        #expect(try Self.mode(path) == 0o600)
        let again = try DeviceKey.loadOrCreate(in: directory)
        #expect(again.publicKey.rawRepresentation == made.publicKey.rawRepresentation)
        #expect(ReceiverTXT.validFingerprint(made.fingerprint) == made.fingerprint)
        // A key file others could read is made private again.
        chmod(path, 0o644)
        _ = try DeviceKey.loadOrCreate(in: directory)
        #expect(try Self.mode(path) == 0o600)
        // Another directory, another key.
        let other = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: other) }
        #expect(try DeviceKey.loadOrCreate(in: other).fingerprint != made.fingerprint)
    }

    @Test func aDamagedKeyIsAClearError() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = FileManager.default.createFile(atPath: directory + "/" + DeviceKey.fileName, contents: Data("not a key".utf8))
        #expect(throws: DeviceIdentityError.damaged(path: directory + "/" + DeviceKey.fileName, what: "a device key")) {
            try DeviceKey.loadOrCreate(in: directory)
        }
    }

    @Test func theFingerprintIsTheFirstEightBytesOfTheKeysSHA256() {
        // python3 -c "import hashlib; print(hashlib.sha256(bytes(32)).hexdigest()[:16])"
        #expect(DeviceKey.fingerprint(of: [UInt8](repeating: 0, count: 32)) == "66687aadf862bd77")
        #expect(DeviceKey.fingerprint(of: Array(0..<32)) == "630dcd2966c43366")
    }
}

/// The receiver's identity and where it is kept (discovery.md §5).
struct DeviceIdentityTests {
    /// The id is made once and read back the same; deleting the file makes a new identity.
    @Test func theIdIsKeptAndDeletingItMakesANewOne() throws {
        let directory = try DeviceKeyTests.scratch() + "/state"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try DeviceIdentity.loadOrCreate(in: directory)
        #expect(try DeviceIdentity.loadOrCreate(in: directory) == first)
        #expect(try String(contentsOfFile: directory + "/device-id", encoding: .utf8) == first.rawValue + "\n")
        try FileManager.default.removeItem(atPath: directory + "/device-id")
        let second = try DeviceIdentity.loadOrCreate(in: directory)
        #expect(second != first)
        #expect(try DeviceIdentity.loadOrCreate(in: directory) == second)
    }

    /// With no `--state-dir`: systemd's `$STATE_DIRECTORY` (its first path), else `/var/lib/lyred` for root, else
    /// `$XDG_STATE_HOME/lyred`, else `~/.local/state/lyred`.
    @Test func theStateDirectoryFallsBackInOrder() {
        let home = "/home/ann"
        let table: [(environment: [String: String], root: Bool, directory: String)] = [
            (["STATE_DIRECTORY": "/var/lib/lyred-unit"], true, "/var/lib/lyred-unit"),
            (["STATE_DIRECTORY": "/var/lib/a:/var/lib/b", "XDG_STATE_HOME": "/x"], false, "/var/lib/a"),
            (["STATE_DIRECTORY": "", "XDG_STATE_HOME": "/x"], true, "/var/lib/lyred"),
            (["XDG_STATE_HOME": "/home/ann/state"], false, "/home/ann/state/lyred"),
            (["XDG_STATE_HOME": ""], false, "/home/ann/.local/state/lyred"),
            ([:], false, "/home/ann/.local/state/lyred"),
        ]
        for row in table {
            #expect(DeviceIdentity.defaultStateDirectory(environment: row.environment, root: row.root, home: home) == row.directory, "\(row.environment)")
        }
    }

    /// pairing.md §5: a store is written under a temporary name, then renamed into place: a reader that had the
    /// old file open still reads the old bytes whole, the path then holds the new bytes whole, and no temporary
    /// file is left.
    @Test func aFileIsReplacedByARenameNeverRewrittenInPlace() throws {
        let directory = try DeviceKeyTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/pairings"
        let old = [UInt8](repeating: 0x61, count: 100_000)
        let new = [UInt8](repeating: 0x62, count: 50_000)
        try DeviceIdentity.writePrivate(old, to: path)
        let reader = try #require(FileHandle(forReadingAtPath: path))
        defer { try? reader.close() }
        try DeviceIdentity.writePrivate(new, to: path)
        #expect(Array(try reader.readToEnd() ?? Data()) == old)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == new)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["pairings"])
        #expect(try DeviceKeyTests.mode(path) == 0o600)
    }
}
