/// DNS-SD service instance names (RFC 6763 §4.1.1) and the renaming rule Lyre uses on a conflict.
public enum ServiceName {
    /// The longest instance name, in UTF-8 bytes (one DNS label).
    public static let maximumBytes = 63

    /// The name to try after `name` collided: `Kitchen` → `Kitchen (2)` → `Kitchen (3)`.
    ///
    /// The base is cut at a character boundary so the result still fits in one label.
    public static func alternative(after name: String) -> String {
        var base = name
        var number = 2
        if let (stem, n) = parseSuffix(name) {
            base = stem
            number = n + 1
        }
        let suffix = " (\(number))"
        return ReceiverTXT.truncated(base, bytes: maximumBytes - suffix.utf8.count) + suffix
    }

    /// A name made fit for one label: cut to 63 bytes, never empty.
    public static func sanitized(_ name: String) -> String {
        let cut = ReceiverTXT.truncated(name, bytes: maximumBytes)
        return cut.isEmpty ? "Lyre" : cut
    }

    /// Splits `Kitchen (12)` into (`Kitchen`, 12).
    private static func parseSuffix(_ name: String) -> (String, Int)? {
        guard name.hasSuffix(")"), let open = name.lastIndex(of: "(") else { return nil }
        let digits = name[name.index(after: open)..<name.index(before: name.endIndex)]
        guard let number = Int(digits), number >= 2, open > name.startIndex else { return nil }
        let beforeOpen = name.index(before: open)
        guard name[beforeOpen] == " " else { return nil }
        return (String(name[..<beforeOpen]), number)
    }
}
