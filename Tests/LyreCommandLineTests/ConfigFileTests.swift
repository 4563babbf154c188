import ArgumentParser
import LyreCommandLine
import Testing

/// The config file's format (lyred.conf) and how its settings meet the command line.
struct ConfigFileTests {
    @Test func keysValuesCommentsAndQuotes() throws {
        let file = try ConfigFile(path: "t.conf", text: """
            # a comment
              # an indented one

            name = Kitchen #2 "Left"
            latency=300\r
            model = " Den "
            output-kind = "say \\"hi\\" \\\\ there"
            interface = eth0
            interface = wlan0
            """, repeatable: ["interface"])
        #expect(file.entries == [
            .init(line: 4, key: "name", value: "Kitchen #2 \"Left\""),
            .init(line: 5, key: "latency", value: "300"),
            .init(line: 6, key: "model", value: " Den "),
            .init(line: 7, key: "output-kind", value: "say \"hi\" \\ there"),
            .init(line: 8, key: "interface", value: "eth0"),
            .init(line: 9, key: "interface", value: "wlan0"),
        ])
    }

    @Test(arguments: [
        ("name Kitchen", "t.conf:2: expected 'key = value'"),
        ("Name = Kitchen", "t.conf:2: 'Name' is not a key (lowercase letters, digits and '-')"),
        (" = Kitchen", "t.conf:2: '' is not a key (lowercase letters, digits and '-')"),
        ("name = \"Kitchen", "t.conf:2: name: no closing quote"),
        ("name = \"Kit\" chen", "t.conf:2: name: text after the closing quote"),
        ("name = \"Kit\\chen\"", "t.conf:2: name: only \\\" and \\\\ may follow a backslash"),
        ("latency = 300", "t.conf:2: latency: set twice (first on line 1)"),
    ])
    func aBadLineNamesItsFileLineAndKey(line: String, error: String) {
        do {
            _ = try ConfigFile(path: "t.conf", text: "latency = 200\n" + line)
            Issue.record("accepted \(line)")
        } catch let thrown {
            #expect(thrown.description == error)
        }
    }

    @Test func aMissingFileIsAnErrorNamingIt() {
        do {
            _ = try ConfigFile.load(path: "/nonexistent/lyred.conf")
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.description == "/nonexistent/lyred.conf: cannot read: No such file or directory")
        }
    }

    /// A command like lyred's: ranges checked in validate(), a repeatable option.
    struct Daemon: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "daemon")
        @Option var name: String?
        @Option var latency: Int = 250
        @Option var interface: [String] = []
        @Option var config: String?
        @Option var delay: Int = 0
        func validate() throws {
            guard (20...2000).contains(latency) else { throw ValidationError("--latency must be between 20 and 2000 ms") }
        }
    }

    func arguments(_ text: String, _ commandLine: [String]) throws(ConfigFileError) -> [String] {
        let file = try ConfigFile(path: "d.conf", text: text, repeatable: ["interface"])
        return try ConfiguredArguments.arguments(for: Daemon.self, file: file, commandLine: commandLine, excluded: ["config"])
    }

    @Test func theFileSetsWhatTheCommandLineDoesNot() throws {
        let parsed = try Daemon.parse(try arguments("name = Den\nlatency = 300\ninterface = eth0\ninterface = wlan0", ["--latency", "400"]))
        #expect(parsed.name == "Den")
        #expect(parsed.latency == 400)
        #expect(parsed.interface == ["eth0", "wlan0"])
        // A repeatable option on the command line replaces the file's list, not adds to it.
        let replaced = try Daemon.parse(try arguments("interface = eth0\ninterface = wlan0", ["--interface=lo"]))
        #expect(replaced.interface == ["lo"])
    }

    /// A value that starts with a dash is the key's value: a negative number, or a name such as `-x`.
    @Test func aValueThatStartsWithADashIsTheValue() throws {
        let parsed = try Daemon.parse(try arguments("delay = -40\nname = -x --latency 5", []))
        #expect(parsed.delay == -40)
        #expect(parsed.name == "-x --latency 5")
        #expect(parsed.latency == 250)
    }

    @Test(arguments: [
        ("latency = abc", "d.conf:1: latency: The value 'abc' is invalid for '--latency <latency>'"),
        ("latency = 5", "d.conf:1: latency: --latency must be between 20 and 2000 ms"),
        ("latenc = 300", "d.conf:1: latenc: unknown key; see 'daemon --help' for the options, which are the keys"),
        ("config = /etc/other.conf", "d.conf:1: config: only on the command line"),
    ])
    func anUnknownKeyOrABadValueIsRefusedAtItsLine(text: String, error: String) {
        do {
            _ = try arguments(text, [])
            Issue.record("accepted \(text)")
        } catch let thrown {
            #expect(thrown.description == error)
        }
    }

    @Test func anOptionIsFoundInEitherSpelling() {
        #expect(ConfiguredArguments.option("config", in: ["--config", "a", "--name", "x"]) == "a")
        #expect(ConfiguredArguments.option("config", in: ["--config=b"]) == "b")
        #expect(ConfiguredArguments.option("config", in: ["--name", "x"]) == nil)
        #expect(ConfiguredArguments.option("config", in: ["--", "--config", "c"]) == nil)
    }
}
