import Foundation
import LyreWire
import Testing

/// PathText answers as the Foundation calls it replaced did (issue 30: they brought CoreFoundation into lyred).
struct PathTextTests {
    /// NSString's answers, as swift-corelibs-foundation 6.3 gives them, except for a name with no directory
    /// (`c`, `a/`), on which it stops the program (an illegal instruction in `_startOfLastPathComponent`): for
    /// those, the directory is the working one, as on Darwin.
    @Test(arguments: [
        ("/run/lyred/control.sock", "/run/lyred"), ("/a", "/"), ("/", "/"), ("", ""), ("c", ""), ("a/", ""),
        ("a/b", "a"), ("/a/b/", "/a"), ("/a//b", "/a"), ("//a", "/"), ("./x", "."), ("../x/y", "../x"),
        ("/var/lib/lyred/paired-senders.json", "/var/lib/lyred"), ("~/Musik/Künstler/cover.jpg", "~/Musik/Künstler"),
        ("/tmp/lyre sink/a b.sock", "/tmp/lyre sink"),
    ])
    func theDirectoryIsNSStringsDirectory(path: String, directory: String) {
        #expect(PathText.directory(of: path) == directory)
        if !["c", "a/"].contains(path) {
            #expect(PathText.directory(of: path) == (path as NSString).deletingLastPathComponent)
        }
    }

    @Test(arguments: [
        "", " ", "id", " id\n", "\t\r\nplay 'Room C'  \r\n", "a b", "\u{00A0}Küche\u{2003}", "\u{3000}x\u{3000}", "\n\n",
    ])
    func trimmedIsFoundationsTrim(text: String) {
        #expect(PathText.trimmed(text) == text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test(arguments: [
        "", "/home/me/Music/cover.png", "/a%20b/K%C3%BCche%2Fx.png", "%41%4a%4A", "100%", "%4", "%zz", "%C3", "%FF",
        "%C3%28", "%00", "a%2", "%%41", "/plain/ü path",
    ])
    func percentDecodedIsFoundations(text: String) {
        #expect(PathText.percentDecoded(text) == text.removingPercentEncoding)
    }
}
