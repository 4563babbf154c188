import Foundation
import LyreDiscovery

/// Where a receiver keeps its pairing ``Lockout``: `pairing-lockout.json` in its state directory, beside its
/// paired senders, readable by its user alone.
public struct LockoutFile: Sendable {
    public static let fileName = "pairing-lockout.json"
    static let maximumBytes = 4096

    public let path: String

    public init(path: String) { self.path = path }

    /// The kept lockout; nil when there is none. A file that cannot be read as one throws.
    public func load() throws(PairedDevices.Failure) -> Lockout? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path), data.count <= Self.maximumBytes,
            let lockout = try? JSONDecoder().decode(Lockout.self, from: data)
        else { throw .damaged(path: path) }
        return lockout
    }

    public func save(_ lockout: Lockout) throws(PairedDevices.Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(lockout) else { throw .unwritable(path: path, reason: "cannot encode") }
        do { try DeviceIdentity.writePrivate(Array(data), to: path) } catch {
            throw .unwritable(path: path, reason: "\(error)")
        }
    }
}
