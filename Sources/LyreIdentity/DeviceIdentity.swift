import FoundationEssentials
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// The receiver's stable identity, generated once and kept in its state directory.
public enum DeviceIdentity {
    /// The file, inside the state directory, that holds the id.
    public static let fileName = "device-id"

    /// The state directory to use when none is given: `$STATE_DIRECTORY` (systemd), `/var/lib/lyred` for
    /// root, else `$XDG_STATE_HOME/lyred` or `~/.local/state/lyred`.
    public static func defaultStateDirectory() -> String {
        defaultStateDirectory(environment: ProcessInfo.processInfo.environment, root: getuid() == 0, home: FileManager.default.homeDirectoryForCurrentUser.path)
    }

    /// The rule of ``defaultStateDirectory()``, for this environment, user and home.
    static func defaultStateDirectory(environment: [String: String], root: Bool, home: String) -> String {
        if let systemd = environment["STATE_DIRECTORY"], !systemd.isEmpty {
            return String(systemd.split(separator: ":").first ?? Substring(systemd))
        }
        if root { return "/var/lib/lyred" }
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/lyred" }
        return home + "/.local/state/lyred"
    }

    /// Reads the id from `directory`, or creates the directory and a new id when there is none.
    /// - Throws: ``DeviceIdentityError`` when the directory cannot be written or the file is damaged.
    public static func loadOrCreate(in directory: String) throws(DeviceIdentityError) -> DeviceID {
        let path = directory + "/" + fileName
        let fileManager = FileManager.default
        if let data = fileManager.contents(atPath: path) {
            let text = PathText.trimmed(String(decoding: data, as: UTF8.self))
            guard let id = DeviceID(text) else { throw .damaged(path: path, what: "a device id") }
            return id
        }
        try makeDirectory(directory)
        let id = DeviceID.random()
        do {
            try Data((id.rawValue + "\n").utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .unwritable(path: directory, reason: Self.reason(error))
        }
        return id
    }

    /// Creates the state directory (and its parents) when it is missing.
    static func makeDirectory(_ directory: String) throws(DeviceIdentityError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        } catch {
            throw .unwritable(path: directory, reason: Self.reason(error))
        }
    }

    /// Writes `bytes` to `path` readable by this user alone (0600) from the start: under a temporary name,
    /// synced, then renamed into place, so a reader sees the old file or the new one, never a part. Creates the
    /// directory when it is missing. Keys and pairings are kept this way.
    ///
    /// The temporary name is new each time and created exclusively, never through a link (`O_EXCL`,
    /// `O_NOFOLLOW`): a link planted at a predictable name cannot make it write elsewhere, and two writers
    /// never write into one temporary file.
    public static func writePrivate(_ bytes: [UInt8], to path: String) throws(DeviceIdentityError) {
        let directory = PathText.directory(of: path)
        try makeDirectory(directory)
        var generator = SystemRandomNumberGenerator()
        let temporary = path + ".\(String(generator.next() as UInt64, radix: 16)).new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unwritable(path: directory, reason: String(cString: strerror(errno))) }
        var offset = 0
        var failure: Int32 = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            offset += written
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw .unwritable(path: directory, reason: String(cString: strerror(failure)))
        }
    }

    private static func reason(_ error: any Error) -> String {
        if let posix = (error as? CocoaError)?.underlying as? POSIXError {
            return String(cString: strerror(posix.code.rawValue))
        }
        return "\(error)"
    }
}

/// Why the identity could not be read or kept.
public enum DeviceIdentityError: Error, Equatable, CustomStringConvertible {
    case unwritable(path: String, reason: String)
    case damaged(path: String, what: String)

    public var description: String {
        switch self {
        case .unwritable(let path, let reason):
            "state directory \(path) is not writable (\(reason)); pass --state-dir with a writable directory"
        case .damaged(let path, let what):
            "\(path) does not hold \(what); remove it to make a new identity (senders will see a new device)"
        }
    }
}
