import Foundation
import LyreMPRIS
import Synchronization
import Testing

/// The real D-Bus clients the tests drive (`playerctl`, `dbus-send`, `dbus-monitor`), run as child processes on the
/// session bus that `Tools/netns` starts. Missing pieces fail the test with a message saying what to do.
enum BusClients {
    /// Fails unless a session bus is configured (it is under `Tools/netns`).
    static func requireSessionBus() throws {
        let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
        try #require(
            address?.isEmpty == false,
            "DBUS_SESSION_BUS_ADDRESS is unset: run the tests as `Tools/netns --no-avahi -- swift test`")
    }

    /// The executable `tool` on `PATH`, or a failure naming its Debian package.
    static func locate(_ tool: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let found = path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent(tool) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        let package = tool == "playerctl" ? "playerctl" : "dbus-bin (dbus)"
        return try #require(found, "\(tool) is missing: sudo apt-get install -y \(package)")
    }

    /// The output of one finished client.
    struct Output: CustomStringConvertible {
        var status: Int32
        var standardOutput: String
        var standardError: String

        var trimmed: String { standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) }
        var description: String { "exit \(status), stdout: \(standardOutput), stderr: \(standardError)" }
    }

    /// Runs `tool` to the end (killed after `timeout`), with this process's environment.
    static func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(5)) async throws -> Output {
        let child = try Child(tool, arguments)
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            child.terminate()
        }
        defer { watchdog.cancel() }
        return await child.finish()
    }

    /// `playerctl -p <player> arguments…`.
    static func playerctl(_ player: String, _ arguments: String...) async throws -> Output {
        try await run("playerctl", ["-p", player] + arguments)
    }

    /// `dbus-send --session --print-reply` of `method` (`interface.Member`) to the player's object.
    static func send(to busName: String, _ method: String, _ arguments: String...) async throws -> Output {
        try await run(
            "dbus-send",
            ["--session", "--print-reply", "--dest=\(busName)", "/org/mpris/MediaPlayer2", method] + arguments)
    }

    /// `dbus-send` of `org.freedesktop.DBus.Properties.Get` for a player property.
    static func getPlayerProperty(_ busName: String, _ property: String) async throws -> Output {
        try await send(
            to: busName, "org.freedesktop.DBus.Properties.Get", "string:org.mpris.MediaPlayer2.Player",
            "string:\(property)")
    }

    /// The names on the bus (`org.freedesktop.DBus.ListNames`), as `dbus-send` prints them.
    static func listNames() async throws -> String {
        try await run(
            "dbus-send",
            [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.ListNames",
            ]
        ).standardOutput
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` passes; answers whether it held.
    static func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}

/// A running client whose output is collected as it comes, so a full pipe never stalls it.
final class Child: Sendable {
    private let process: Process
    private let output: Collector
    private let error: Collector

    init(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = try BusClients.locate(tool)
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        self.process = process
        self.output = Collector(output)
        self.error = Collector(error)
    }

    /// The standard output so far.
    var standardOutput: String { output.text }

    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// Waits for the child to exit (off the cooperative pool) and answers its output.
    func finish() async -> BusClients.Output {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                process.waitUntilExit()
                continuation.resume(
                    returning: BusClients.Output(
                        status: process.terminationStatus, standardOutput: output.waitForEnd(),
                        standardError: error.waitForEnd()))
            }
        }
    }
}

/// Reads a pipe on a thread of its own until end of file.
final class Collector: Sendable {
    private let data = Mutex(Data())
    private let ended = DispatchSemaphore(value: 0)

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while case let chunk = handle.availableData, !chunk.isEmpty { data.withLock { $0.append(chunk) } }
            ended.signal()
        }
    }

    var text: String { String(decoding: data.withLock { $0 }, as: UTF8.self) }

    /// Blocks until the writer closed the pipe; only for a child that has exited.
    func waitForEnd() -> String {
        ended.wait()
        return text
    }
}

/// The commands a test player's handler received, and what it answers.
final class CommandLog: Sendable {
    private let commands = Mutex<[MPRISCommand]>([])
    private let answer: @Sendable (MPRISCommand) -> MPRISCommandResult?

    /// `answer` says what to reply to each command; `nil` answers nothing (the reply closure is dropped).
    init(answer: @escaping @Sendable (MPRISCommand) -> MPRISCommandResult? = { _ in .success }) {
        self.answer = answer
    }

    var received: [MPRISCommand] { commands.withLock { $0 } }

    /// The handler to give ``MPRISPlayer``.
    var handler: @Sendable (MPRISCommand, @escaping @Sendable (MPRISCommandResult) -> Void) -> Void {
        { [self] command, reply in
            commands.withLock { $0.append(command) }
            if let result = answer(command) { reply(result) }
        }
    }
}

extension MPRISState {
    /// A playing track with everything allowed: what most tests start from.
    static func playing(at position: Int64 = 10_000_000, anchoredSecondsAgo: Double = 0) -> MPRISState {
        var state = MPRISState()
        state.metadata = MPRISMetadata(
            trackID: "/org/lyre/track/3", title: "Blue in Green", artists: ["Miles Davis", "Bill Evans"],
            album: "Kind of Blue", albumArtists: ["Miles Davis"], genres: ["Jazz"], trackNumber: 3,
            lengthMicroseconds: 337_000_000, artURL: "file:///run/lyre/art.png")
        state.playbackStatus = .playing
        state.positionMicroseconds = position
        state.positionAnchor = MPRISState.monotonicNow - UInt64(anchoredSecondsAgo * 1e9)
        state.canPlay = true
        state.canPause = true
        state.canGoNext = true
        state.canGoPrevious = true
        state.canSeek = true
        state.maximumRate = 2
        state.minimumRate = 0.5
        return state
    }
}
