import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// A config file of `key = value` lines, such as `/etc/lyre/lyred.conf`: each key is a long option of the
/// command without its dashes, set to what the command line would take.
///
/// ```
/// # The kitchen's speaker
/// name = Kitchen "Left"
/// latency = 300
/// interface = eth0
/// ```
///
/// - A `#` starts a comment only at the start of a line (after blanks), so a name may hold one.
/// - A value runs from the first non-blank after `=` to the end of the line, less trailing blanks; written in
///   double quotes it keeps its blanks (`name = " Den "`), with `\"` and `\\` inside.
/// - A key set twice is an error, except for a repeatable option, whose lines add up in order.
///
/// Hand-written rather than a library's: the rule is that an unknown key or a bad value names its file, line
/// and key, and neither candidate can say where a key is (swift-configuration reads keys on demand from
/// JSON or YAML, with no positions and no notion of a key nobody asked for; TOMLKit reports a line only for a
/// syntax error). The format stays this small on purpose, so that lyred's web page can later change a value
/// in place and keep the file's comments.
public struct ConfigFile: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var line: Int
        public var key: String
        public var value: String
        public init(line: Int, key: String, value: String) {
            self.line = line
            self.key = key
            self.value = value
        }
    }

    /// The largest file read: far more than any real one.
    public static let maximumBytes = 64 * 1024

    public var path: String
    public var entries: [Entry]
    /// The text it was parsed from.
    public let source: String

    /// Parses `text`, read from `path` (named in errors). `repeatable` keys may be set on several lines.
    public init(path: String, text: String, repeatable: Set<String> = []) throws(ConfigFileError) {
        self.path = path
        source = text
        entries = []
        var firstLine: [String: Int] = [:]
        // "\r\n" is one Character in Swift: a file written on Windows splits as well.
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let number = index + 1
            let line = rawLine.trimmingBlanks()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigFileError(path: path, line: number, "expected 'key = value'")
            }
            let key = String(line[..<equals].trimmingBlanks())
            guard !key.isEmpty, key.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }) else {
                throw ConfigFileError(path: path, line: number, "'\(key)' is not a key (lowercase letters, digits and '-')")
            }
            let value = try Self.value(line[line.index(after: equals)...].trimmingBlanks(), path: path, line: number, key: key)
            if let first = firstLine[key], !repeatable.contains(key) {
                throw ConfigFileError(path: path, line: number, key: key, "set twice (first on line \(first))")
            }
            firstLine[key] = firstLine[key] ?? number
            entries.append(Entry(line: number, key: key, value: value))
        }
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String, repeatable: Set<String> = []) throws(ConfigFileError) -> ConfigFile {
        guard let file = fopen(path, "rb") else {
            throw ConfigFileError(path: path, line: nil, "cannot read: \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 1)
        let count = fread(&bytes, 1, bytes.count, file)
        if ferror(file) != 0 { throw ConfigFileError(path: path, line: nil, "cannot read: \(String(cString: strerror(errno)))") }
        guard count <= maximumBytes else { throw ConfigFileError(path: path, line: nil, "larger than \(maximumBytes / 1024) KiB") }
        guard let text = String(validating: bytes[..<count], as: UTF8.self) else {
            throw ConfigFileError(path: path, line: nil, "not UTF-8 text")
        }
        return try ConfigFile(path: path, text: text, repeatable: repeatable)
    }

    private static func value(_ text: Substring, path: String, line: Int, key: String) throws(ConfigFileError) -> String {
        guard text.hasPrefix("\"") else { return String(text) }
        var value = ""
        var escaped = false
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            let character = text[index]
            index = text.index(after: index)
            if escaped {
                guard character == "\"" || character == "\\" else {
                    throw ConfigFileError(path: path, line: line, key: key, "only \\\" and \\\\ may follow a backslash")
                }
                value.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                guard index == text.endIndex else {
                    throw ConfigFileError(path: path, line: line, key: key, "text after the closing quote")
                }
                return value
            } else {
                value.append(character)
            }
        }
        throw ConfigFileError(path: path, line: line, key: key, "no closing quote")
    }
}

extension ConfigFile {
    /// `text` with `key` set to `value`: the key's line rewritten in place, or added at the end, every other
    /// line (comments included) as it was. A value that the plain form would change (blanks at either end, a
    /// leading quote) is written in quotes. `value` holds no line break.
    public static func text(_ text: String, setting key: String, to value: String) -> String {
        let written = value.first == "\"" || value.first == " " || value.first == "\t" || value.last == " " || value.last == "\t"
            ? "\"" + value.reduce(into: "") { out, c in if c == "\"" || c == "\\" { out.append("\\") }; out.append(c) } + "\""
            : value
        let line = "\(key) = \(written)"
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
        let index = lines.firstIndex { raw in
            let trimmed = Substring(raw).trimmingBlanks()
            guard !trimmed.hasPrefix("#"), let equals = trimmed.firstIndex(of: "=") else { return false }
            return trimmed[..<equals].trimmingBlanks() == key
        }
        if let index {
            lines[index] = line
        } else {
            if lines.last == "" { lines.removeLast() }
            lines.append(line)
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// Sets `key` to `value` in the file at `path`, made when it is missing (0644, with its directories,
    /// 0755, as a config file is). The new text replaces the old at once (a file beside it, renamed over it) where the directory
    /// may be written, else in place; it keeps the file's mode. The text must still parse, so a setting never
    /// leaves a file that the next start refuses.
    public static func set(_ key: String, to value: String, inFileAt path: String, repeatable: Set<String> = []) throws(ConfigFileError) {
        // A line break would write a second setting (`name` from the network must not add `access = open`).
        guard !value.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" || $0.properties.generalCategory == .lineSeparator
            || $0.properties.generalCategory == .paragraphSeparator || $0 == "\u{0B}" || $0 == "\u{0C}" || $0 == "\u{85}" })
        else {
            throw ConfigFileError(path: path, line: nil, key: key, "a value is one line")
        }
        let old: String
        var mode: mode_t = 0o644
        var status = stat()
        if stat(path, &status) == 0 {
            old = try load(path: path, repeatable: repeatable).source
            mode = status.st_mode & 0o7777
        } else {
            guard errno == ENOENT else { throw ConfigFileError(path: path, line: nil, "cannot read: \(String(cString: strerror(errno)))") }
            old = ""
            let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
            if !directory.isEmpty { try makeDirectories(directory, path: path) }
        }
        let new = text(old, setting: key, to: value)
        _ = try ConfigFile(path: path, text: new, repeatable: repeatable)
        let bytes = Array(new.utf8)
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        if fd >= 0 {
            defer { close(fd) }
            guard writeAll(fd, bytes), fchmod(fd, mode) == 0, fsync(fd) == 0, rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw ConfigFileError(path: path, line: nil, "cannot write: \(reason)")
            }
            return
        }
        // The directory is not ours to write (/etc/lyre for the system service): the file itself may be.
        let inPlace = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard inPlace >= 0 else { throw ConfigFileError(path: path, line: nil, "cannot write: \(String(cString: strerror(errno)))") }
        defer { close(inPlace) }
        guard writeAll(inPlace, bytes), fsync(inPlace) == 0 else {
            throw ConfigFileError(path: path, line: nil, "cannot write: \(String(cString: strerror(errno)))")
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 { if errno == EINTR { continue }; return false }
            offset += written
        }
        return true
    }

    private static func makeDirectories(_ directory: String, path: String) throws(ConfigFileError) {
        var prefix = ""
        for part in directory.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw ConfigFileError(path: path, line: nil, "cannot make \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// What is wrong with a config file, as one line: `PATH:LINE: KEY: what`.
public struct ConfigFileError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var key: String?
    public var message: String

    public init(path: String, line: Int?, key: String? = nil, _ message: String) {
        self.path = path
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        "\(path)\(line.map { ":\($0)" } ?? ""): \(key.map { "\($0): " } ?? "")\(message)"
    }
}

/// A command's settings from its config file and its command line, the command line winning key by key.
public enum ConfiguredArguments {
    /// The arguments to parse: the file's settings as options, for each key the command line does not set,
    /// then the command line. Each setting is first parsed alone by `Command`, so that an unknown key or a bad
    /// value is reported at its line; keys in `excluded` (such as `config` itself) cannot be set in a file.
    /// A setting is passed as `--key=value`, so that a value that starts with a dash (`max-volume-db = -6`)
    /// is the option's value, never read as options of its own.
    public static func arguments<Command: ParsableCommand>(
        for command: Command.Type, file: ConfigFile, commandLine: [String], excluded: Set<String> = []
    ) throws(ConfigFileError) -> [String] {
        var arguments: [String] = []
        for entry in file.entries {
            let option = "--\(entry.key)"
            if excluded.contains(entry.key) {
                throw ConfigFileError(path: file.path, line: entry.line, key: entry.key, "only on the command line")
            }
            let argument = "\(option)=\(entry.value)"
            do {
                _ = try Command.parse([argument])
            } catch {
                let reason = CommandLineMain.firstLine(of: error, for: Command.self)
                if reason.hasPrefix("Unknown option") {
                    throw ConfigFileError(path: file.path, line: entry.line, key: entry.key, "unknown key; see '\(Command.configuration.commandName ?? "") --help' for the options, which are the keys")
                }
                throw ConfigFileError(path: file.path, line: entry.line, key: entry.key, reason)
            }
            let overridden = commandLine.contains { $0 == option || $0.hasPrefix(option + "=") }
            if !overridden { arguments.append(argument) }
        }
        return arguments + commandLine
    }

    /// The value of `--name VALUE` or `--name=VALUE` on `commandLine`, the last if given twice.
    public static func option(_ name: String, in commandLine: [String]) -> String? {
        var found: String?
        var index = commandLine.startIndex
        while index < commandLine.endIndex {
            let argument = commandLine[index]
            if argument == "--" { break }
            if argument == "--\(name)", index + 1 < commandLine.endIndex {
                found = commandLine[index + 1]
                index += 1
            } else if argument.hasPrefix("--\(name)=") {
                found = String(argument.dropFirst(name.count + 3))
            }
            index += 1
        }
        return found
    }
}

extension Substring {
    fileprivate func trimmingBlanks() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return text
    }
}
