import Foundation

/// Where lyred's control socket is when `--control-socket` / `--socket` do not say (now-playing.md §5):
/// `$XDG_RUNTIME_DIR/lyred/control.sock`, else `/run/lyred/control.sock` for root, else
/// `/tmp/lyred-UID/control.sock`. The directory is made 0700 and the socket 0600: this user only.
public enum ControlSocketPath {
    public static var `default`: String {
        let environment = ProcessInfo.processInfo.environment
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/lyred/control.sock" }
        return getuid() == 0 ? "/run/lyred/control.sock" : "/tmp/lyred-\(getuid())/control.sock"
    }
}

/// Where a running `lyre play` listens for `lyre group` (streaming.md §9.4): `$XDG_RUNTIME_DIR/lyre/play.sock`,
/// else `/run/lyre/play.sock` for root, else `/tmp/lyre-UID/play.sock`; this user only, as the control socket.
public enum GroupSocketPath {
    public static var `default`: String {
        let environment = ProcessInfo.processInfo.environment
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/lyre/play.sock" }
        return getuid() == 0 ? "/run/lyre/play.sock" : "/tmp/lyre-\(getuid())/play.sock"
    }
}
