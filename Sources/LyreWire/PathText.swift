/// Two things done to text that Foundation would do through CoreFoundation: `(path as NSString)
/// .deletingLastPathComponent` makes an `NSString`, and `trimmingCharacters(in:)` walks a `CFCharacterSet`. Each
/// brings CoreFoundation's string code into the memory of every program that calls it, lyred included (issue 30).
/// These give the same answers with the standard library alone.
public enum PathText {
    /// The directory that holds `path`, as `NSString.deletingLastPathComponent` gives it: `/a/b/c` → `/a/b`,
    /// `/a` → `/`, `/a/b/` → `/a`, and `c` → `` (the working directory, which callers name `.`).
    public static func directory(of path: String) -> String {
        var end = path.endIndex
        while end > path.startIndex, path[path.index(before: end)] == "/" { end = path.index(before: end) }
        if end == path.startIndex { return path.isEmpty ? "" : "/" }  // "" or only slashes
        guard var slash = path[..<end].lastIndex(of: "/") else { return "" }
        while slash > path.startIndex, path[path.index(before: slash)] == "/" { slash = path.index(before: slash) }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `text` without the white space (Unicode's White_Space, line ends included) at either end.
    public static func trimmed(_ text: some StringProtocol) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = text.lastIndex(where: { !$0.isWhitespace })!
        return String(text[first...last])
    }
}
