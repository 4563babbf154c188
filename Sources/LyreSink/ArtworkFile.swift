#if canImport(Glibc)
import Glibc
#endif

/// Reads the cover a player names as a local file (`mpris:artUrl`, now-playing.md §7), as a file named by
/// another process deserves: only a regular file, never through a link at its last component, never waiting
/// (a FIFO or a device would block for ever, or never end), and never more than the limit.
public enum ArtworkFile {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// `open` refused (a link is refused with "Too many levels of symbolic links").
        case cannotOpen(String)
        case notARegularFile
        case tooLarge(Int)
        case unreadable(String)

        public var description: String {
            switch self {
            case .cannotOpen(let reason): "cannot open it: \(reason)"
            case .notARegularFile: "it is not a regular file"
            case .tooLarge(let bytes): "it is \(bytes) bytes, more than a cover may be"
            case .unreadable(let reason): "cannot read it: \(reason)"
            }
        }
    }

    /// The bytes of the regular file at `path`, at most `limit`.
    public static func read(_ path: String, limit: Int) -> Result<[UInt8], Failure> {
        // O_NONBLOCK: opening a FIFO with no writer returns at once (and fstat then refuses it).
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.cannotOpen(String(cString: strerror(errno)))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return .failure(.notARegularFile) }
        guard info.st_size <= limit else { return .failure(.tooLarge(Int(info.st_size))) }
        // One byte over the limit tells a file that grew since fstat.
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else { return .failure(.tooLarge(count)) }
        return .success(Array(bytes[..<count]))
    }
}
