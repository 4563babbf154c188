import FoundationEssentials
import LyreIdentity
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// The devices this one is paired with, kept in its state directory (Protocol/pairing.md §5): a receiver's
/// paired senders (`paired-senders.json`), a sender's paired receivers (`paired-receivers.json`). One JSON
/// array, written whole under a temporary name and renamed into place, readable by its user alone (0600).
public struct PairedDevices: Sendable {
    public struct Entry: Codable, Equatable, Sendable {
        public var id: String
        public var name: String
        /// The raw Ed25519 public key, in hex.
        public var publicKey: String
        /// When it was paired, seconds since 1970.
        public var paired: Int

        public init(_ party: PairingParty, paired: Int) {
            id = party.id
            name = party.name
            publicKey = DeviceID.hex(party.publicKey)
            self.paired = paired
        }

        public var publicKeyBytes: [UInt8] { DeviceID.bytes(hex: publicKey) ?? [] }

        /// When it was paired, in ISO 8601 and UTC (`2026-12-06T12:00:00Z`), as `lyre pair --list` and
        /// `lyre remote paired` show it.
        public var pairedText: String { Date(timeIntervalSince1970: Double(paired)).formatted(.iso8601) }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case damaged(path: String)
        case unwritable(path: String, reason: String)

        public var description: String {
            switch self {
            case .damaged(let path): "\(path) is damaged: move it away to forget every pairing, or fix it"
            case .unwritable(let path, let reason): "cannot write \(path): \(reason)"
            }
        }
    }

    public static let receiversFile = "paired-receivers.json"
    public static let sendersFile = "paired-senders.json"
    /// At most this many pairings are kept; pairing one more drops the oldest.
    public static let capacity = 256
    static let maximumBytes = 256 * 1024

    public let path: String

    public init(path: String) { self.path = path }

    /// Everything paired; none when the file does not exist.
    public func load() throws(Failure) -> [Entry] {
        try Self.readJSON([Entry].self, from: path, maximumBytes: Self.maximumBytes) ?? []
    }

    /// The value kept as JSON at `path` (this module's state files); nil when there is no file. A file larger
    /// than `maximumBytes`, one that is not a regular file (a link, a FIFO) or that does not decode is damaged.
    static func readJSON<Value: Decodable>(_ type: Value.Type, from path: String, maximumBytes: Int) throws(Failure) -> Value? {
        switch RegularFile.read(path, limit: maximumBytes, followingLinks: true) {
        case .failure(.cannotOpen(errno: ENOENT)):
            return nil
        case .failure:
            throw .damaged(path: path)
        case .success(let bytes):
            guard let value = try? JSONDecoder().decode(Value.self, from: Data(bytes)) else { throw .damaged(path: path) }
            return value
        }
    }

    /// Writes `value` as JSON to `path`, whole and readable by this user alone (`DeviceIdentity.writePrivate`).
    static func writeJSON<Value: Encodable>(_ value: Value, to path: String) throws(Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(value) else { throw .unwritable(path: path, reason: "cannot encode") }
        do { try DeviceIdentity.writePrivate(Array(data), to: path) } catch {
            throw .unwritable(path: path, reason: "\(error)")
        }
    }

    /// The pairing with `id`, or with the name `name` (any case).
    public func find(_ name: String) throws(Failure) -> Entry? { Self.find(name, in: try load()) }

    private static func find(_ name: String, in entries: [Entry]) -> Entry? {
        entries.first { $0.id == name.lowercased() } ?? entries.first { $0.name.lowercased() == name.lowercased() }
    }

    /// Pairs `party`, replacing an earlier pairing with the same id.
    public func add(_ party: PairingParty, at time: Int = Int(Date().timeIntervalSince1970)) throws(Failure) {
        try locked { () throws(Failure) in
            var entries = try load()
            entries.removeAll { $0.id == party.id }
            entries.insert(Entry(party, paired: time), at: 0)
            try save(Array(entries.prefix(Self.capacity)))
        }
    }

    /// Forgets the pairing with id or name `name`; returns what was forgotten.
    public func remove(_ name: String) throws(Failure) -> Entry? {
        try locked { () throws(Failure) -> Entry? in
            var entries = try load()
            guard let entry = Self.find(name, in: entries) else { return nil }
            entries.removeAll { $0.id == entry.id }
            try save(entries)
            return entry
        }
    }

    /// Runs a read-modify-write of the file holding an exclusive lock (`flock` on `PATH.lock`, which is never
    /// removed), so that two writers at once (two `lyre pair`, or a pairing while `lyre remote unpair` runs)
    /// each see the other's change. A reader needs no lock: the file is replaced by a rename.
    private func locked<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let directory = PathText.directory(of: path)
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let fd = open(path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unwritable(path: path + ".lock", reason: String(cString: strerror(errno))) }
        defer { close(fd) }  // and with it the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .unwritable(path: path + ".lock", reason: String(cString: strerror(errno))) }
        }
        return try body()
    }

    private func save(_ entries: [Entry]) throws(Failure) { try Self.writeJSON(entries, to: path) }
}
