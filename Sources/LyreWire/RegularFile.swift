#if canImport(Glibc)
import Glibc
#endif

/// Reads a small file whole, as a file that another process may have named or changed deserves: only a regular
/// file, never through a link at its last component, never waiting (a FIFO or a device would block for ever, or
/// never end), and never more than the limit. The cover a player names (`mpris:artUrl`, now-playing.md §7) and
/// the state files of both ends (paired devices, known receivers) are read with it.
public enum RegularFile {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// `open` refused, with its errno: `ENOENT` when there is no file, `ELOOP` for a link.
        case cannotOpen(errno: Int32)
        case notARegularFile
        case tooLarge(Int)
        case unreadable(String)

        public var description: String {
            switch self {
            case .cannotOpen(let code): "cannot open it: \(String(cString: strerror(code)))"
            case .notARegularFile: "it is not a regular file"
            case .tooLarge(let bytes): "it is \(bytes) bytes, more than it may be"
            case .unreadable(let reason): "cannot read it: \(reason)"
            }
        }
    }

    /// The bytes of the regular file at `path`, at most `limit`. `followingLinks`: a link at the last component
    /// is followed (a state file its user keeps elsewhere), not refused (a path another process named).
    public static func read(_ path: String, limit: Int, followingLinks: Bool = false) -> Result<[UInt8], Failure> {
        // O_NONBLOCK: opening a FIFO with no writer returns at once (and fstat then refuses it).
        let fd = open(path, O_RDONLY | (followingLinks ? 0 : O_NOFOLLOW) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.cannotOpen(errno: errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return .failure(.notARegularFile) }
        guard info.st_size <= limit else { return .failure(.tooLarge(Int(info.st_size))) }
        // Room for its size and one byte more, which tells a file that grew since fstat: it is refused, not cut.
        // (So not for /proc's files, whose size reads as 0.)
        var bytes = [UInt8](repeating: 0, count: min(limit, Int(info.st_size)) + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else { return .failure(.tooLarge(count)) }
        guard count <= Int(info.st_size) else { return .failure(.unreadable("it grew while it was read")) }
        return .success(Array(bytes[..<count]))
    }
}
