import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Where lyred's control socket is when `--control-socket` / `--socket` do not say (now-playing.md §5):
/// `$XDG_RUNTIME_DIR/lyred/control.sock`, else `/run/lyred/control.sock` for root, else
/// `/tmp/lyred-UID/control.sock`. The directory is made 0700 and the socket 0600: this user only.
public enum ControlSocketPath {
    public static var `default`: String { RuntimeSocketPath.path(directory: "lyred", file: "control.sock") }
}

/// Where a running `lyre play` listens for `lyre group` (streaming.md §9.4): `$XDG_RUNTIME_DIR/lyre/play.sock`,
/// else `/run/lyre/play.sock` for root, else `/tmp/lyre-UID/play.sock`; this user only, as the control socket.
public enum GroupSocketPath {
    public static var `default`: String { RuntimeSocketPath.path(directory: "lyre", file: "play.sock") }
}

/// A per-user socket's default place: `$XDG_RUNTIME_DIR/DIRECTORY/FILE`, else `/run/DIRECTORY/FILE` for root,
/// else `/tmp/DIRECTORY-UID/FILE`.
enum RuntimeSocketPath {
    static func path(directory: String, file: String) -> String {
        path(directory: directory, file: file, runtime: ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], uid: getuid())
    }

    /// The rule, for this `$XDG_RUNTIME_DIR` and user.
    static func path(directory: String, file: String, runtime: String?, uid: uid_t) -> String {
        if let runtime, !runtime.isEmpty { return "\(runtime)/\(directory)/\(file)" }
        return uid == 0 ? "/run/\(directory)/\(file)" : "/tmp/\(directory)-\(uid)/\(file)"
    }
}
