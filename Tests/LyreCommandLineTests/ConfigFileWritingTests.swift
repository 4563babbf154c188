import Foundation
import LyreCommandLine
import Testing

/// A setting the page changes is written into the config file in place (control-api.md §3): the key's own
/// line rewritten, or one added; every other line, comment and blank kept; any name read back as it was.
struct ConfigFileWritingTests {
    static let original = """
        # The kitchen's speaker
        #name = commented out, left alone
          name = Old   
        latency = 300

        # the end
        """

    @Test func theKeysLineIsRewrittenAndNothingElse() throws {
        let text = ConfigFile.text(Self.original, setting: "name", to: "Den")
        #expect(text == Self.original.replacingOccurrences(of: "  name = Old   ", with: "name = Den"))
        let added = ConfigFile.text(Self.original, setting: "output-delay", to: "40")
        #expect(added == Self.original + "\noutput-delay = 40\n")
        #expect(ConfigFile.text("", setting: "name", to: "Den") == "name = Den\n")
        #expect(ConfigFile.text("latency = 300\n", setting: "name", to: "Den") == "latency = 300\nname = Den\n")
    }

    /// Names are the user's: each one reads back from the file exactly.
    @Test(arguments: ["Living Room", " lead and trail ", "\"quoted\"", "Bed \"Room\" = 2", "a\\b", "\\", "#1", "Küche ☕ 客厅", "tab\tinside"])
    func aNameReadsBackAsItWasWritten(name: String) throws {
        let text = ConfigFile.text(Self.original, setting: "name", to: name)
        let file = try ConfigFile(path: "t.conf", text: text)
        #expect(file.entries.first { $0.key == "name" }?.value == name, "\(text)")
        #expect(file.entries.map(\.key) == ["name", "latency"])
    }

    /// Any one-line value, made of the characters the format treats specially (quotes, backslashes, `=`, `#`,
    /// blanks at either end) and any other text, reads back exactly, and no other setting appears or changes.
    /// Seeded: the same 5,000 values every run.
    @Test func anyOneLineValueReadsBackExactlyAndAddsNoSetting() throws {
        let pieces = ["\"", "\\", "=", "#", " ", "\t", "a", "Z", "0", "é", "客", "☕", "\u{200B}", "\\\"", "\"\\"]
        var state: UInt64 = 0x1_2026_1126
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for _ in 0..<5000 {
            let value = (0..<1 + next(12)).map { _ in pieces[next(pieces.count)] }.joined()
            let text = ConfigFile.text(Self.original, setting: "name", to: value)
            let file = try ConfigFile(path: "t.conf", text: text)
            #expect(file.entries.map(\.key) == ["name", "latency"], "\(value.debugDescription): \(text)")
            #expect(file.entries.first { $0.key == "name" }?.value == value, "\(value.debugDescription): \(text)")
            #expect(file.entries.first { $0.key == "latency" }?.value == "300")
        }
    }

    /// A value with a line break in it would be a second setting: refused, and the file is not touched.
    @Test(arguments: ["Den\naccess = open", "Den\raccess = open", "Den\r\n", "a\u{2028}b", "a\u{85}b"])
    func aValueWithALineBreakIsRefused(value: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-conf-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("lyred.conf").path
        try Self.original.write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: ConfigFileError.self) { try ConfigFile.set("name", to: value, inFileAt: path) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == Self.original)
    }

    @Test func theFileOnDiskIsRewrittenKeepingItsMode() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-conf-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Missing, with its directory: made.
        let path = directory.appendingPathComponent("lyre/lyred.conf").path
        try ConfigFile.set("name", to: "Den", inFileAt: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "name = Den\n")
        try Self.original.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o640)
        try ConfigFile.set("output-delay", to: "-20", inFileAt: path)
        try ConfigFile.set("name", to: "Living Room", inFileAt: path)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == Self.original.replacingOccurrences(of: "  name = Old   ", with: "name = Living Room") + "\noutput-delay = -20\n")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o640)
        #expect(!FileManager.default.fileExists(atPath: path + ".new"))
        // A file that is already wrong is not touched: the next start would refuse it either way.
        try "name Den\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: ConfigFileError.self) { try ConfigFile.set("name", to: "X", inFileAt: path) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "name Den\n")
    }
}
