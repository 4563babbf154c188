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
