/// Text that came from the network, made safe to print on one line of a log or a terminal: a sender's name or
/// a title could otherwise hold a newline that forges a log line (a fake PIN beside the real one), an escape
/// sequence that redraws a terminal, or a direction override that makes it read backwards.
public enum Printable {
    /// `text` with `\`, every control character, line and paragraph separator and bidirectional control
    /// written as an escape (`\n`, `\u{1b}`); everything else, emoji joiners included, as it is.
    public static func escaped(_ text: some StringProtocol) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                let category = scalar.properties.generalCategory
                if category == .control || category == .lineSeparator || category == .paragraphSeparator
                    || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
                    || [0x200E, 0x200F, 0x061C].contains(scalar.value)
                {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// `'text'`, escaped, as log lines name a sender or a device.
    public static func quoted(_ text: some StringProtocol) -> String { "'\(escaped(text))'" }
}
