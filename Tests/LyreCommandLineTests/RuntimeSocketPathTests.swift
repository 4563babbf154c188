import Testing

@testable import LyreCommandLine

/// Where the sockets are when no option says (now-playing.md §5 for lyred's control socket, streaming.md §9.4 for
/// `lyre play`'s group socket): `$XDG_RUNTIME_DIR/DIRECTORY/FILE`, else `/run/DIRECTORY/FILE` for root, else
/// `/tmp/DIRECTORY-UID/FILE`. (Their modes, 0700 and 0600, are LineServerSocketTests'.)
struct RuntimeSocketPathTests {
    @Test func theSocketsAreInTheUsersRuntimeDirectoryElseRunOrTmp() {
        let table: [(runtime: String?, uid: UInt32, control: String, group: String)] = [
            ("/run/user/1000", 1000, "/run/user/1000/lyred/control.sock", "/run/user/1000/lyre/play.sock"),
            ("/run/user/0", 0, "/run/user/0/lyred/control.sock", "/run/user/0/lyre/play.sock"),
            (nil, 0, "/run/lyred/control.sock", "/run/lyre/play.sock"),
            ("", 0, "/run/lyred/control.sock", "/run/lyre/play.sock"),
            (nil, 1000, "/tmp/lyred-1000/control.sock", "/tmp/lyre-1000/play.sock"),
            ("", 4321, "/tmp/lyred-4321/control.sock", "/tmp/lyre-4321/play.sock"),
        ]
        for row in table {
            #expect(RuntimeSocketPath.path(directory: "lyred", file: "control.sock", runtime: row.runtime, uid: row.uid) == row.control, "\(row)")
            #expect(RuntimeSocketPath.path(directory: "lyre", file: "play.sock", runtime: row.runtime, uid: row.uid) == row.group, "\(row)")
        }
    }
}
