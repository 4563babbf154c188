import Foundation
import Testing

/// The executables' contract: --help, one-line errors with a non-zero exit, and the empty listing.
@Suite(.serialized)
struct CommandLineTests {
    /// Runs a built binary outside any network namespace (for argument errors that stop before mDNS).
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try TestNetwork.requirePrerequisites()
        return try execute(TestNetwork.binaries + "/" + arguments[0], Array(arguments.dropFirst()))
    }

    /// Runs `executable` outside the test network and waits for it.
    static func execute(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stdout, stderr)
    }

    static func expectOneLineError(_ result: (status: Int32, stdout: String, stderr: String), mentioning: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status != 0, sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(mentioning), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    }

    /// The TXT vectors are what their generator writes (Protocol/README.md): none edited by hand, none stale.
    /// Run as the README says, with Python's standard library alone (`-I -S`).
    @Test func theTXTVectorsAreWhatTheGeneratorWrites() throws {
        let check = try Self.execute("/usr/bin/python3", ["-I", "-S", TestNetwork.tools + "/gen-txt-vectors.py", "--check"])
        #expect(check.status == 0, "gen-txt-vectors.py --check: \(check.stdout) \(check.stderr)")
    }

    /// Protocol/README.md: `Tools/gen-txt-vectors.py` rewrites `Protocol/vectors/txt/` and removes stale
    /// vectors; a vector whose hand-stated facts disagree with the reference reader stops it before it writes
    /// anything. Run on a copy of the script and the vectors, one edited and one stale file added, then with
    /// one fact made wrong.
    @Test func theVectorGeneratorRewritesRemovesStaleAndRefusesAWrongFact() throws {
        let (status, stdout, stderr) = try Self.execute("/bin/bash", ["-c", """
            set -eu; t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
            mkdir -p "$t/Tools" "$t/Protocol/vectors"
            cp '\(TestNetwork.tools)/gen-txt-vectors.py' "$t/Tools/"; cp -r '\(TestNetwork.tools)/../Protocol/vectors/txt' "$t/Protocol/vectors/"
            dir="$t/Protocol/vectors/txt"; first=$(ls "$dir"/*.json | head -1)
            echo stale > "$dir/stale.bin"; echo '{}' > "$first"
            python3 -I -S "$t/Tools/gen-txt-vectors.py"
            test ! -e "$dir/stale.bin" || { echo "stale.bin kept"; exit 1; }
            python3 -I -S "$t/Tools/gen-txt-vectors.py" --check
            sed -i '0,/valid=True/s//valid=False/' "$t/Tools/gen-txt-vectors.py"; rm "$first"
            if python3 -I -S "$t/Tools/gen-txt-vectors.py"; then echo "a wrong fact was written"; exit 1; fi
            test ! -e "$first" || { echo "wrote with a wrong fact"; exit 1; }
            echo refused
            """])
        #expect(status == 0 && stdout.contains(": 1 written, 1 removed") && stdout.hasSuffix("refused\n"), "\(stdout) \(stderr)")
        #expect(stderr.contains("the vector says"), "\(stderr)")
    }

    /// Shell lines that take every directory holding `swift` off the PATH, so that a tool that would build fails.
    static let withoutSwift = """
        set -u; PATH=$(printf %s "$PATH" | tr : '\\n' | while read -r d; do test -x "$d/swift" || printf %s: "$d"; done)
        ! command -v swift >/dev/null || { echo "swift still on the PATH"; exit 1; }
        """

    /// `Tools/bench SUITE --help` shows the suite's options and does nothing else: nothing is installed, built or
    /// started (it built the release first, some ten minutes on this machine). Run without `swift` on the PATH,
    /// so that a bench that would build fails here at once; an unknown suite is one line that lists the suites.
    @Test func theBenchShowsEachSuitesOptionsWithoutBuilding() throws {
        let suites = ["discovery", "streaming", "remote", "loss", "sink", "sync", "security", "mixing", "footprint", "install"]
        let (status, stdout, stderr) = try Self.execute("/bin/bash", ["-c", """
            \(Self.withoutSwift)
            cd '\(TestNetwork.tools)/..'
            Tools/bench --help || exit 1
            for s in \(suites.joined(separator: " ")); do echo "== $s"; Tools/bench "$s" --help || { echo "exit $?"; exit 1; }; done
            if Tools/bench snapcast --help; then echo "a helper taken as a suite"; exit 1; fi
            """])
        #expect(status == 0, "\(stdout) \(stderr)")
        #expect(stdout.hasPrefix("usage: Tools/bench \(suites.joined(separator: "|")) "), "\(stdout)")
        // Each suite's own options, from its own usage line on.
        let shown = stdout.components(separatedBy: "== ").dropFirst()
        #expect(shown.count == suites.count, "\(stdout)")
        for (suite, text) in zip(suites, shown) {
            #expect(text.hasPrefix("\(suite)\nusage: "), "\(suite): \(text)")
        }
        #expect(shown.first { $0.hasPrefix("sync\n") }?.contains("--cpu-pairs") == true, "\(stdout)")
        #expect(!stderr.contains("== build") && !stderr.contains("apt-get"), "\(stderr)")
        #expect(stderr.hasSuffix("bench: no suite 'snapcast'; the suites are \(suites.joined(separator: "|"))\n"), "\(stderr)")
    }

    /// Every other tool's `--help` is its usage and nothing else, like the bench's (`Tools/soak --help` installed
    /// packages and built the release first; `Tools/package --help` built into a directory named `--help`;
    /// `Tools/demo --help` ran the demo). Without `swift` on the PATH, as above; an option the packager does not
    /// take is one line.
    @Test func everyToolShowsItsUsageWithoutBuilding() throws {
        let tools = ["soak", "fuzz", "test", "demo", "package", "netns"]
        let (status, stdout, stderr) = try Self.execute("/bin/bash", ["-c", """
            \(Self.withoutSwift)
            cd '\(TestNetwork.tools)/..'
            for t in \(tools.joined(separator: " ")); do echo "== $t"; Tools/$t --help || { echo "exit $?"; exit 1; }; done
            if Tools/package --out x; then echo "an option taken as the directory"; exit 1; fi
            """])
        #expect(status == 0, "\(stdout) \(stderr)")
        let shown = stdout.components(separatedBy: "== ").dropFirst()
        #expect(shown.count == tools.count, "\(stdout)")
        for (tool, text) in zip(tools, shown) {
            #expect(text.hasPrefix("\(tool)\nusage: Tools/\(tool) "), "\(tool): \(text)")
        }
        #expect(shown.first { $0.hasPrefix("soak\n") }?.contains("--minutes") == true, "\(stdout)")
        #expect(shown.first { $0.hasPrefix("fuzz\n") }?.contains("Tools/fuzz all [SECONDS]") == true, "\(stdout)")
        #expect(!stderr.contains("== build") && !stderr.contains("apt-get"), "\(stderr)")
        #expect(stderr.hasSuffix("package: no option '--out'; the one argument is the output directory (Tools/package --help)\n"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: TestNetwork.tools + "/../--help"))
    }

    @Test func helpDescribesTheCommands() throws {
        let lyred = try Self.run(["lyred", "--help"])
        #expect(lyred.status == 0)
        for option in ["--name", "--port", "--interface", "--mdns", "--state-dir"] { #expect(lyred.stdout.contains(option)) }
        let devices = try Self.run(["lyre", "devices", "--help"])
        #expect(devices.status == 0)
        for option in ["--json", "--watch", "--timeout", "--mdns", "--interface"] { #expect(devices.stdout.contains(option)) }
    }

    /// No help text has a run of spaces inside its prose (a multi-line string literal without its line
    /// continuations prints "with             cover art"). Only the column between an option or subcommand
    /// and its help, and the indentation of a line, may be wide.
    @Test func helpTextHasNoRunsOfSpaces() throws {
        for command in [["lyre"], ["lyre", "play"], ["lyre", "devices"], ["lyre", "sink"], ["lyre", "group"], ["lyre", "remote"], ["lyre", "pair"], ["lyred"]] {
            let help = try Self.run(command + ["--help"])
            #expect(help.status == 0, "\(command) --help: \(help.stderr)")
            // The overview and discussion are prose wrapped by the parser: no line there is indented or has
            // a run of spaces (a run in the source shows as one, or as an indented line where it wraps).
            let prose = help.stdout.components(separatedBy: "\nUSAGE:").first ?? ""
            for line in prose.split(separator: "\n") {
                #expect(!line.hasPrefix(" ") && !line.dropLast().contains("  "), "\(command.joined(separator: " ")) --help: '\(line)'")
            }
            for line in help.stdout.split(separator: "\n") where !prose.contains(line) {
                var text = Substring(line.drop { $0 == " " })
                let indented = text.count < line.count
                // An option, argument or subcommand row: its name, then the column gap.
                if indented, let gap = text.range(of: "  "), !text[..<gap.lowerBound].contains(" ") || text.first == "-" || text.first == "<" {
                    text = text[gap.upperBound...].drop { $0 == " " }
                }
                #expect(!text.contains("   "), "\(command.joined(separator: " ")) --help: '\(line)'")
            }
        }
    }

    @Test func badArgumentsGetOneLine() throws {
        Self.expectOneLineError(try Self.run(["lyred", "--port", "70000"]), mentioning: "--port")
        Self.expectOneLineError(try Self.run(["lyred", "--mdns", "bonjour"]), mentioning: "mdns")
        Self.expectOneLineError(try Self.run(["lyred", "--name", ""]), mentioning: "--name")
        Self.expectOneLineError(try Self.run(["lyred", "--frobnicate"]), mentioning: "frobnicate")
        Self.expectOneLineError(try Self.run(["lyre", "devices", "--timeout", "-1"]), mentioning: "--timeout")
        Self.expectOneLineError(try Self.run(["lyre", "devices", "--interface", "nosuch0"]), mentioning: "nosuch0")
        Self.expectOneLineError(try Self.run(["lyre", "nosuchcommand"]), mentioning: "nosuchcommand")
        Self.expectOneLineError(try Self.run(["lyre", "pair"]), mentioning: "--list")
        Self.expectOneLineError(try Self.run(["lyre", "pair", "Kitchen", "--host", "127.0.0.1:7700"]), mentioning: "--host")
        Self.expectOneLineError(try Self.run(["lyre", "remote", "unpair"]), mentioning: "unpair")
        // README: --output-delay is -500…500 ms.
        Self.expectOneLineError(try Self.run(["lyred", "--output-delay", "501"]), mentioning: "--output-delay")
        Self.expectOneLineError(try Self.run(["lyred", "--output-delay=-501"]), mentioning: "--output-delay")
        // streaming.md §7: an announcement's own duck depth is -40…-3 dB, and it ducks, so it does not mix.
        Self.expectOneLineError(try Self.run(["lyre", "play", "/dev/null", "--to", "Kitchen", "--duck-db", "-41"]), mentioning: "--duck-db must be between -40 and -3")
        Self.expectOneLineError(try Self.run(["lyre", "play", "/dev/null", "--to", "Kitchen", "--mix", "--duck-db", "-20"]), mentioning: "--mix and --duck go one at a time")
        // `lyre play --help`: Opus frames of 5, 10 or 20 ms (StreamConfiguration.frameChoices).
        Self.expectOneLineError(try Self.run(["lyre", "play", "/dev/null", "--to", "Kitchen", "--frame", "7"]), mentioning: "--frame must be one of 5, 10, 20 ms")
    }

    @Test func unwritableStateDirectoryIsAClearError() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try await network.run(["lyred", "--state-dir", "/proc/lyre-state", "--port", "0"])
        Self.expectOneLineError((lyred.status, lyred.stdout, lyred.stderr), mentioning: "--state-dir")
        let damaged = try await network.shell("mkdir -p /run/s && echo nonsense > /run/s/device-id && exec \(TestNetwork.binaries)/lyred --state-dir /run/s --port 0")
        Self.expectOneLineError((damaged.status, damaged.stdout, damaged.stderr), mentioning: "device-id")
    }

    /// `lyre sink` with no sound server to talk to says what to start.
    @Test func sinkWithoutASoundServerIsAClearError() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let sink = try await network.run(["env", "PULSE_SERVER=unix:/run/no-such-server", "PULSE_CLIENTCONFIG=/dev/null",
                                          TestNetwork.binaries + "/lyre", "sink"])
        Self.expectOneLineError((sink.status, sink.stdout, sink.stderr), mentioning: "is PulseAudio or PipeWire (pipewire-pulse) running")
    }

    /// libpulse is opened by `lyre sink`, not linked (Sources/CPulseShim): without it, `lyre sink` says what to
    /// install, and `lyre play`, which never needs it, still starts. Shown in a mount namespace of its own
    /// where the library is /dev/null.
    @Test func sinkWithoutLibpulseSaysWhatToInstall() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let hidden = try await network.shell("""
            exec unshare -m sh -c 'mount --bind /dev/null "$(readlink -f "$(/sbin/ldconfig -p | sed -n "s/.*libpulse.so.0 .*=> //p" | head -1)")" \
              && \(TestNetwork.binaries)/lyre sink; echo "sink exit $?"; \(TestNetwork.binaries)/lyre play --help > /dev/null; echo "play exit $?"'
            """)
        #expect(hidden.status == 0, "\(hidden.stderr)")
        // Linked, libpulse would stop both at the loader (status 127, "file too short").
        #expect(hidden.stdout.contains("sink exit ") && !hidden.stdout.contains("sink exit 0") && !hidden.stdout.contains("sink exit 127"),
                "\(hidden.stdout) \(hidden.stderr)")
        #expect(hidden.stdout.contains("play exit 0"), "\(hidden.stdout) \(hidden.stderr)")
        let lines = hidden.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("libpulse.so.0 is missing (install Debian's libpulse0"), "\(hidden.stderr)")
    }

    @Test func busyPortIsAClearError() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let first = try network.spawn(["lyred", "--name", "First", "--port", "7710", "--state-dir", "/run/a"])
        #expect(await eventually { first.stderr.contains("advertised as") })
        let second = try await network.run(["lyred", "--name", "Second", "--port", "7710", "--state-dir", "/run/b"])
        Self.expectOneLineError((second.status, second.stdout, second.stderr), mentioning: "7710 is already in use")
        #expect(first.isRunning)
    }

    @Test func noReceiversSaysSoAndExitsZero() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let table = try await network.run(["lyre", "devices"])
        #expect(table.status == 0)
        #expect(table.stdout.contains("No Lyre receivers found"))
        #expect(table.stdout.contains("lyred"))
        let json = try await network.run(["lyre", "devices", "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        // Without any avahi-daemon, auto falls back to the embedded stack.
        let embedded = try await network.shell("\(TestNetwork.tools)/avahi-ctl stop && exec \(TestNetwork.binaries)/lyre devices --json")
        #expect(embedded.status == 0, "\(embedded.stderr)")
        #expect(embedded.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    @Test func tableListsTheColumns() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try network.spawn(["lyred", "--name", "Bathroom", "--port", "7711", "--output-kind", "headphones", "--state-dir", "/run/l"])
        #expect(await eventually { lyred.stderr.contains("advertised as") })
        let id = try await network.shell("cat /run/l/device-id").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let table = try await network.run(["lyre", "devices"])
        #expect(table.lines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["NAME", "STATUS", "OUTPUT", "HOST:PORT", "ID"])
        let row = try #require(table.lines.first { $0.hasPrefix("Bathroom") })
        #expect(row.contains("idle"))
        #expect(row.contains("headphones"))
        #expect(row.contains(":7711"))
        #expect(row.hasSuffix(id))
    }

    /// `--version` prints the version Tools/version names: the release, and the commit built from.
    @Test func versionIsTheCommitBuilt() throws {
        let expected = try PackageTests.toolsVersion() + "\n"
        #expect(expected.hasPrefix("0.") && expected.contains("+"), "Tools/version: \(expected)")
        for tool in ["lyre", "lyred"] {
            let result = try Self.run([tool, "--version"])
            #expect(result.status == 0)
            #expect(result.stdout == expected, "\(tool) --version")
        }
    }

    /// The options that take a negative number take it as the next word, as the README writes them
    /// (`--output-delay -40`), not only as `--output-delay=-40`.
    @Test func negativeValuesFollowTheirOption() throws {
        let result = try Self.run(["lyred", "--output-delay", "-40", "--initial-volume-db", "-144", "--max-volume-db", "-6",
                                   "--duck-db", "-20", "--output", "wav:/dev/null", "--output-skew-ppm", "-150", "--check-config"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A config file's mistake is one line naming its file, line and key, exit 78 (EX_CONFIG), and
    /// --check-config says so without starting; a good file is "valid".
    @Test func aConfigFileMistakeNamesItsFileLineAndKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-config-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("lyred.conf").path
        for (text, error) in [
            ("name = Den\nlatency = 5\n", "lyred: \(path):2: latency: --latency must be between 10 and 2000 ms"),
            ("name = Den\n\nlatenc = 300\n", "lyred: \(path):3: latenc: unknown key"),
            ("access = everyone\n", "lyred: \(path):1: access: The value 'everyone' is invalid for '--access <paired|open>'"),
            ("output-skew-ppm = 5\n", "lyred: --output-skew-ppm needs --output wav:PATH"),
            ("max-volume-db = -40\n", "lyred: \(path):1: max-volume-db: --max-volume-db must be between -30 and 0"),
            ("duck-db = -2\n", "lyred: \(path):1: duck-db: --duck-db must be between -40 and -3"),
            ("initial-volume-db = -31\n", "lyred: \(path):1: initial-volume-db: --initial-volume-db must be between -30 and 0, or -144 (muted)"),
            ("volume-control = hardware\n", "lyred: \(path):1: volume-control: The value 'hardware' is invalid for '--volume-control <auto|software|mixer:NAME|none>'"),
            ("output = wav:/dev/null\nvolume-control = mixer:PCM\n", "lyred: --volume-control mixer:PCM needs an ALSA --output (a WAV file has no mixer)"),
        ] {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            for arguments in [["lyred", "--config", path, "--check-config"], ["lyred", "--config=\(path)", "--port", "0"]] {
                let result = try Self.run(arguments)
                Self.expectOneLineError(result, mentioning: error)
                #expect(result.status == (error.contains(path) ? 78 : 64), "\(arguments): \(result.stderr)")
            }
        }
        // Negative values from the file are values, not options.
        try "# the den\nname = Den \"Left\" #1\noutput-skew-ppm = 5\nmax-volume-db = -6\ninitial-volume-db = -144\noutput-delay = -40\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let good = try Self.run(["lyred", "--config", path, "--output", "wav:/dev/null", "--check-config"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout == "\(path): valid\n")
        // The command line wins: the file's skew, which needs a wav: output, is not used when the command
        // line sets its own.
        let overridden = try Self.run(["lyred", "--config", path, "--output-skew-ppm", "0", "--check-config"])
        #expect(overridden.status == 0, "\(overridden.stderr)")
        let missing = try Self.run(["lyred", "--config", directory.path + "/none.conf", "--check-config"])
        Self.expectOneLineError(missing, mentioning: "none.conf: cannot read: No such file or directory")
    }

    /// What the config file sets is what the receiver does: its name and port, as the device picker shows.
    @Test func theConfigFileSetsTheReceiversNameAndPort() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let written = try await network.shell("printf '%s\\n' '# kitchen' 'name = Den \"Left\" = #1' 'port = 7712' > /run/lyred.conf")
        #expect(written.status == 0, "\(written.stderr)")
        let lyred = try network.spawn(["lyred", "--config", "/run/lyred.conf", "--state-dir", "/run/c"])
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        let table = try await network.run(["lyre", "devices"])
        let row = try #require(table.lines.first { $0.hasPrefix("Den \"Left\" = #1") }, "\(table.stdout)")
        #expect(row.contains(":7712"))
    }

    /// `lyred --list-outputs` lists what ALSA names for playback, with the kind lyred would advertise: a PCM
    /// of the configuration that shows itself, with its description, and ALSA's own default.
    @Test func listOutputsShowsALSAsOutputs() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let config = network.scratch.appendingPathComponent("asound.conf").path
        try """
            </usr/share/alsa/alsa.conf>
            pcm.kitchen { type null; hint { show on; description "Kitchen speakers" } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let listed = try await network.run(["env", "ALSA_CONFIG_PATH=\(config)", TestNetwork.binaries + "/lyred", "--list-outputs"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.lines.first?.split(separator: " ", omittingEmptySubsequences: true).first == "OUTPUT", "\(listed.stdout)")
        let kitchen = try #require(listed.lines.first { $0.hasPrefix("kitchen ") }, "\(listed.stdout)")
        #expect(kitchen.contains("Kitchen speakers"))
        #expect(kitchen.contains("--output-kind (speaker)"))
        #expect(listed.lines.contains { $0.hasPrefix("default ") || $0.hasPrefix("null ") }, "\(listed.stdout)")
    }
}
