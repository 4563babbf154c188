/// Where a receiver keeps its pairing ``Lockout``: `pairing-lockout.json` in its state directory, beside its
/// paired senders, readable by its user alone.
public struct LockoutFile: Sendable {
    public static let fileName = "pairing-lockout.json"
    static let maximumBytes = 4096

    public let path: String

    public init(path: String) { self.path = path }

    /// The kept lockout; nil when there is none. A file that cannot be read as one throws.
    public func load() throws(PairedDevices.Failure) -> Lockout? {
        try PairedDevices.readJSON(Lockout.self, from: path, maximumBytes: Self.maximumBytes)
    }

    public func save(_ lockout: Lockout) throws(PairedDevices.Failure) { try PairedDevices.writeJSON(lockout, to: path) }
}
