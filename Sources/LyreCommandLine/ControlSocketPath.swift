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
