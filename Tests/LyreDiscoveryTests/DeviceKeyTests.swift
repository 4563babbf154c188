import Foundation
import LyreDiscovery
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
