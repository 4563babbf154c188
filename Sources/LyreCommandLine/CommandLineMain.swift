import ArgumentParser
import Logging
import LyreDiscovery
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// Runs a command the way every Lyre executable does: help and version as ArgumentParser prints them,
/// and any error as one line on stderr (`lyre: …`) with a non-zero exit.
public enum CommandLineMain {
    /// `arguments` gives what to parse (the command line, with a config file's settings before it); a config
    /// file's error exits 78 (EX_CONFIG).
    public static func run<Command: AsyncParsableCommand>(
        _ type: Command.Type, arguments: @Sendable (_ commandLine: [String]) throws(ConfigFileError) -> [String] = { $0 }
    ) async -> Never {
        limitMallocArenas()
        let name = Command.configuration.commandName ?? "lyre"
        let commandLine = Array(CommandLine.arguments.dropFirst())
        let parsed: [String]
        do {
            parsed = try arguments(commandLine)
        } catch {
            Console.standardError.write(line: "\(name): \(error)")
            exit(78)
        }
        do {
            var command = try type.parseAsRoot(parsed)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            exit(0)
        } catch {
            let code = Command.exitCode(for: error)
            if code == .success {
                // --help, --version and clean exits print as ArgumentParser means them to.
                Command.exit(withError: error)
            }
            let message: String
            var status = code == .validationFailure ? 64 : max(code.rawValue, 1)
            if let failure = error as? CommandFailure {
                message = failure.message
                status = failure.code
            } else {
                message = firstLine(of: error, for: Command.self) + "; see '\(name) --help'"
            }
            let line = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            Console.standardError.write(line: "\(name): \(line)")
            exit(status)
        }
    }

    /// At most two glibc malloc arenas, unless `MALLOC_ARENA_MAX` says otherwise. glibc gives each thread that
    /// meets contention an arena of its own, up to eight per core, and an arena's high-water mark stays in RSS:
    /// the 2-hour soak (issue 27) saw `lyre play`'s RSS grow only there, spread over seven arenas, while its heap
    /// in use stayed flat. Lyre's threads allocate little and rarely at once, so two arenas cost no contention.
    static func limitMallocArenas() {
        #if canImport(Glibc)
        // Swift's Glibc module exports neither mallopt nor M_ARENA_MAX (<malloc.h>), so both are taken by name.
        let arenaMax: Int32 = -8
        guard getenv("MALLOC_ARENA_MAX") == nil, let program = dlopen(nil, RTLD_NOW),
              let symbol = dlsym(program, "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        _ = mallopt(arenaMax, 2)
        #endif
    }

    /// The first line of ArgumentParser's message for `error`, without its "Error: ".
    static func firstLine<Command: ParsableCommand>(of error: any Error, for _: Command.Type) -> String {
        let first = Command.message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
        return first.hasPrefix("Error: ") ? String(first.dropFirst(7)) : first
    }

    /// Sends log output to stderr at `level`.
    public static func bootstrapLogging(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// A failure to report as one line and exit with `code`.
public struct CommandFailure: Error, CustomStringConvertible {
    public var message: String
    public var code: Int32
    public init(_ message: String, code: Int32 = 1) {
        self.message = message
        self.code = code
    }
    public var description: String { message }
}

/// A minimal unbuffered stderr/stdout writer (avoids Foundation's FileHandle in hot CLI paths).
public struct Console: Sendable {
    let descriptor: Int32
    public static let standardError = Console(descriptor: 2)
    public static let standardOutput = Console(descriptor: 1)

    /// Writes `line` and a newline.
    public func write(line: String) { write(line + "\n") }

    /// Writes `text` as it is (a prompt, or a status line that the next write replaces), all of it unless
    /// the descriptor fails.
    public func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var written = 0
            while written < bytes.count {
                let count = Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                written += count
            }
        }
    }
}

extension MDNSMode: ExpressibleByArgument {}
extension OutputKind: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}

/// The options every command that touches mDNS takes.
public struct MDNSOptions: ParsableArguments {
    @Option(help: "mDNS stack: auto (avahi-daemon if running, else embedded), avahi, or embedded.")
    public var mdns: MDNSMode = .auto

    @Option(
        name: .customLong("interface"),
        help: ArgumentHelp("Use only this network interface (repeatable).", valueName: "IF"))
    public var interfaces: [String] = []

    public init() {}
}
