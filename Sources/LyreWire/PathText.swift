/// Text done with the standard library alone where Foundation would bring its text half, CoreFoundation's string
/// code, into the memory of every program that calls it, lyred included (issue 30): `(path as NSString)
/// .deletingLastPathComponent`, `trimmingCharacters(in:)` and `removingPercentEncoding`. Each gives the answers
/// of the call it replaced.
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

    /// `text` with each `%XX` made the byte it names (a `file://` URL's path), as `removingPercentEncoding`
    /// gives it: nil when a `%` is not followed by two hex digits or the bytes are not UTF-8.
    public static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var input = text.utf8.makeIterator()
        while let byte = input.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = input.next(), let low = input.next(),
                let decoded = DeviceID.bytes(hex: String(decoding: [high, low], as: UTF8.self))
            else { return nil }
            bytes += decoded
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
