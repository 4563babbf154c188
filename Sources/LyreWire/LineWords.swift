/// The words of one request on Lyre's local line sockets: lyred's control socket (now-playing.md §5) and
/// `lyre play`'s group socket (streaming.md §9.4). Names there are the user's (any text, with spaces, quotes
/// and `=`), so a word is written as it is when it is plain, and in double quotes otherwise, as a shell
/// would take it:
///
/// - words are separated by spaces or tabs;
/// - a word with a space, a tab, `"` or `\` in it, or an empty word, is written in double quotes, and inside
///   them `\"` stands for `"` and `\\` for `\`;
/// - quoted and plain parts next to each other make one word (`Room" C"` is `Room C`).
///
/// A line has no line break in it, so neither has a word. `join` and `split` are each other's inverse for
/// every list of words without one.
public enum LineWords {
    /// Why a line could not be split.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// A `"` that opened a word was never closed.
        case unterminatedQuote
        /// A `\` at the very end of a quoted word.
        case danglingEscape

        public var description: String {
            switch self {
            case .unterminatedQuote: "a quoted word is not closed (a word with spaces or quotes is written \"like \\\"this\\\"\")"
            case .danglingEscape: "a '\\' ends the line inside a quoted word"
            }
        }
    }

    /// The words of `line`.
    public static func split(_ line: some StringProtocol) throws(Failure) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quoted = false
        var escaped = false
        for character in line {
            if escaped {
                word.append(character)
                escaped = false
            } else if quoted {
                switch character {
                case "\\": escaped = true
                case "\"": quoted = false
                default: word.append(character)
                }
            } else {
                switch character {
                case " ", "\t":
                    if inWord { words.append(word) }
                    word = ""
                    inWord = false
                case "\"":
                    quoted = true
                    inWord = true
                default:
                    word.append(character)
                    inWord = true
                }
            }
        }
        if escaped { throw .danglingEscape }
        if quoted { throw .unterminatedQuote }
        if inWord { words.append(word) }
        return words
    }

    /// `word` as it is written on the line: as it is when plain, else quoted.
    public static func quote(_ word: String) -> String {
        let plain = !word.isEmpty && !word.contains { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "\\" }
        if plain { return word }
        var text = "\""
        for character in word {
            if character == "\"" || character == "\\" { text.append("\\") }
            text.append(character)
        }
        return text + "\""
    }

    /// One line (without its line break) that `split` reads back as `words`.
    public static func join(_ words: [String]) -> String { words.map(quote).joined(separator: " ") }
}
