import Foundation
import Testing

/// A private test network: a fresh `Tools/netns` (own network, mount and PID namespaces, lo with
/// multicast, own D-Bus and avahi-daemon), in which tests start real processes with `nsenter`.
/// Everything in it dies when the network is closed. Nothing it does reaches any real interface.
final class TestNetwork {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static var tools: String { repository.appendingPathComponent("Tools").path }
    static var binaries: String {
        ProcessInfo.processInfo.environment["LYRE_BIN"] ?? repository.appendingPathComponent(".build/debug").path
    }

    private let holder: Process
    let pid: Int32
    let scratch: URL
    private var children: [Spawned] = []

    /// - Parameter avahi: start an avahi-daemon in it (most tests), or leave mDNS to embedded stacks.
    init(avahi: Bool = true) throws {
        try Self.requirePrerequisites()
        scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lyre-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        holder = Process()
        holder.executableURL = URL(fileURLWithPath: Self.tools + "/netns")
        holder.arguments = (avahi ? [] : ["--no-avahi"]) + ["--", "sh", "-c", "touch /run/lyre-netns/ready; echo ready; exec sleep 3600"]
        let said = Pipe()
        holder.standardOutput = said
        let log = try FileHandle(forWritingTo: Self.touch(scratch.appendingPathComponent("netns.log")))
        holder.standardError = log
        try holder.run()
        try? log.close()
        // The namespace's command says "ready" once it is up (its D-Bus and avahi-daemon too): waited for on
        // the pipe, 20 s at most. Tools/netns execs unshare, which forks the namespace's PID 1 (a transient
        // helper may come first): the child whose /run holds the ready marker is what nsenter targets.
        var inner: Int32 = 0
        let holderPID = holder.processIdentifier
        if Self.waitForLine("ready", on: said.fileHandleForReading.fileDescriptor, seconds: 20) {
            let text = (try? String(contentsOfFile: "/proc/\(holderPID)/task/\(holderPID)/children", encoding: .utf8)) ?? ""
            inner = text.split(separator: " ").compactMap { Int32($0) }.first {
                FileManager.default.fileExists(atPath: "/proc/\($0)/root/run/lyre-netns/ready")
            } ?? 0
        }
        guard inner != 0 else {
            let log = (try? String(contentsOf: scratch.appendingPathComponent("netns.log"), encoding: .utf8)) ?? ""
            // unshare --kill-child takes the namespace down with it.
            kill(holderPID, SIGKILL)
            holder.waitUntilExit()
            throw TestNetworkError("the test network did not come up (Tools/netns running: \(holder.isRunning)): \(log)")
        }
        pid = inner
    }

    /// Reads `fd` until a line `line` comes (true), or it ends or `seconds` pass (false); waits in poll(2).
    static func waitForLine(_ line: String, on fd: Int32, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 256)
        while !text.split(separator: "\n").contains(Substring(line)) {
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&waiting, 1, left) > 0 else { return false }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return false }
            text += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return true
    }

    /// Fails clearly, rather than skipping, when something the tests need is missing.
    static func requirePrerequisites() throws {
        guard getuid() == 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/sudo") else {
            throw TestNetworkError("integration tests make network namespaces: run them as root or with sudo, through Tools/test")
        }
        for tool in ["unshare", "nsenter", "avahi-daemon", "avahi-browse", "avahi-publish", "dbus-daemon", "python3"] {
            guard Self.which(tool) != nil else {
                throw TestNetworkError("\(tool) is missing: run Tools/test, which installs everything the tests need")
            }
        }
        for binary in ["lyre", "lyred"] {
            guard FileManager.default.isExecutableFile(atPath: binaries + "/" + binary) else {
                throw TestNetworkError("\(binaries)/\(binary) is not built: run Tools/test (or swift build first)")
            }
        }
    }

    static func which(_ tool: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin:/usr/sbin:/sbin").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/sbin"]
        {
            let path = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Another host on the network's LAN: a network namespace of its own (`ip netns`), joined by a veth pair
    /// to the bridge `lan0`, on which the network itself is 10.77.0.1 and fd77::1. The bridge has no other
    /// port and nothing routes beyond it, so packets between hosts cross real interfaces (and the kernel's
    /// bridge) without leaving the machine. Processes on it share the network's mounts, buses and PIDs.
    struct Host {
        let name: String
        let ipv4: String
        let ipv6: String
    }

    /// Adds host `number` (2…254) at 10.77.0.`number` and fd77::`number`, its interface `eth0`; with
    /// `linkLocalOnly`, it has no address but eth0's link-local one (`ipv4` and `ipv6` are then unused).
    func addHost(_ number: Int, linkLocalOnly: Bool = false) async throws -> Host {
        precondition((2...254).contains(number))
        let host = Host(name: "h\(number)", ipv4: "10.77.0.\(number)", ipv6: "fd77::\(number)")
        let made = try await shell("\(Self.tools)/lib/add-host.sh \(number)\(linkLocalOnly ? " --link-local" : "")")
        guard made.status == 0 else { throw TestNetworkError("cannot add host \(host.name): \(made.stderr)") }
        return host
    }

    /// The link-local IPv6 address (fe80::…, no zone) the kernel gave `host`'s eth0.
    func linkLocalAddress(of host: Host) async throws -> String {
        let shown = try await shell("ip -n \(host.name) -6 -o addr show dev eth0 scope link")
        let address = shown.stdout.split(separator: " ").first { $0.hasPrefix("fe80:") }?.split(separator: "/").first
        return try String(#require(address, "\(host.name) has no link-local address: \(shown.stdout) \(shown.stderr)"))
    }

    /// Starts `arguments` inside the network (on `host` when given); a bare `lyre`/`lyred` means the built
    /// binary. With `input`, its standard input is a pipe the test writes to (`Spawned.type`); else it is empty.
    /// With `defaultAccess`, a lyred without `--access` keeps its own default (paired) instead of the tests' open.
    @discardableResult
    func spawn(_ arguments: [String], name: String? = nil, input: Bool = false, on host: Host? = nil, defaultAccess: Bool = false) throws -> Spawned {
        var command = arguments
        if ["lyre", "lyred"].contains(command[0]) { command[0] = Self.binaries + "/" + command[0] }
        // ip netns exec enters the host's network namespace and execs the command (signals reach it as before).
        if let host { command = ["ip", "netns", "exec", host.name] + command }
        // Test receivers play for any sender, as before pairing, unless a test names an access mode itself
        // (PairingTests does): pairing and its refusals have their own tests.
        if !defaultAccess, let lyred = command.firstIndex(of: Self.binaries + "/lyred"),
            !command.contains("--access"), !command.contains("--help")
        {
            command.insert(contentsOf: ["--access", "open"], at: lyred + 1)
        }
        let label = (name ?? (arguments[0] as NSString).lastPathComponent) + "-\(children.count)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.which("nsenter") ?? "/usr/bin/nsenter")
        process.arguments = ["--target", String(pid), "--net", "--mount", "--pid", "--"] + command
        var environment = ProcessInfo.processInfo.environment
        environment["LYRE_NETNS"] = "1"
        // Each network is its own user's session: what `lyre` remembers (the preferred output, receivers'
        // addresses) stays in it.
        environment["XDG_STATE_HOME"] = scratch.appendingPathComponent("state").path
        environment["XDG_CONFIG_HOME"] = scratch.appendingPathComponent("config").path
        process.environment = environment
        let out = try Self.touch(scratch.appendingPathComponent("\(label).out"))
        let err = try Self.touch(scratch.appendingPathComponent("\(label).err"))
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = outHandle
        process.standardError = errHandle
        let pipe = input ? Pipe() : nil
        process.standardInput = pipe ?? FileHandle.nullDevice
        // The child has its own copies once it runs. Ours would stay open for as long as anything holds the
        // Process: hundreds over a suite, and Foundation's Process.run crashes copying /proc/self/fd names
        // past about 1300 open descriptors.
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }
        try process.run()
        let spawned = Spawned(process: process, stdoutURL: out, stderrURL: err, label: label, input: pipe?.fileHandleForWriting)
        children.append(spawned)
        return spawned
    }

    /// Runs `arguments` inside the network to completion (bounded by `timeout`).
    func run(_ arguments: [String], timeout: Double = 30, on host: Host? = nil) async throws -> Spawned {
        let spawned = try spawn(arguments, on: host)
        try await spawned.waitForExit(timeout: timeout)
        return spawned
    }

    /// Runs a shell script inside the network to completion.
    func shell(_ script: String, timeout: Double = 30) async throws -> Spawned {
        try await run(["sh", "-c", script], timeout: timeout)
    }

    /// Ends every process in the network (the PID namespace dies with its init).
    func close() {
        kill(pid, SIGKILL)
        holder.waitUntilExit()
        for child in children { try? child.input?.close() }
        children.removeAll()
        try? FileManager.default.removeItem(at: scratch)
    }

    deinit { if holder.isRunning { close() } }

    private static func touch(_ url: URL) throws -> URL {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        return url
    }
}

/// A process started in a ``TestNetwork``, its output captured to files.
final class Spawned: @unchecked Sendable {
    // Used from one test at a time; Process is only read after start.
    let process: Process
    let stdoutURL: URL
    let stderrURL: URL
    let label: String

    /// The writing end of its standard input, when spawned with `input`.
    let input: FileHandle?

    init(process: Process, stdoutURL: URL, stderrURL: URL, label: String, input: FileHandle? = nil) {
        self.process = process
        self.stdoutURL = stdoutURL
        self.stderrURL = stderrURL
        self.label = label
        self.input = input
    }

    /// Writes `line` and a newline to its standard input, as a user types at the terminal.
    func type(_ line: String) {
        input?.write(Data((line + "\n").utf8))
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    var status: Int32 { process.terminationStatus }
    var isRunning: Bool { process.isRunning }

    /// Sends `signal` to the command. nsenter forks it and does not pass signals on, so this signals
    /// nsenter's child, the command itself.
    func signal(_ signal: Int32) {
        for child in commandPIDs { kill(child, signal) }
        // nsenter stops itself when its child stops (as a shell does for a job): it is continued with it, or it
        // would never reap the command.
        if signal == SIGCONT { kill(process.processIdentifier, SIGCONT) }
    }

    /// The command's own process: nsenter's child (nsenter forks it), once it runs.
    var commandPIDs: [Int32] {
        let pid = process.processIdentifier
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return children.split(separator: " ").compactMap { Int32($0) }
    }

    func waitForExit(timeout: Double) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else {
                let stacks = threadStacks()
                process.terminate()
                throw TestNetworkError("\(label) did not finish within \(timeout) s; stderr: \(stderr)\nits threads:\n\(stacks)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Every thread's stack of the command (nsenter's child), from gdb: what a process that hangs waits on.
    func threadStacks() -> String {
        guard let child = commandPIDs.first.map(String.init) else { return "(it has no process)" }
        let gdb = Process()
        // Bounded: a test that is already failing must not hang on its diagnosis.
        gdb.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        gdb.arguments = ["-s", "KILL", "30", "/usr/bin/gdb", "-p", child, "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt 30"]
        let out = Pipe()
        gdb.standardOutput = out
        gdb.standardError = FileHandle.nullDevice
        do { try gdb.run() } catch { return "(gdb: \(error); Tools/test installs it)" }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        gdb.waitUntilExit()
        // Frames only: gdb's notes on loading symbols say nothing about the hang.
        return text.split(separator: "\n").filter { $0.hasPrefix("#") || $0.hasPrefix("Thread ") }.joined(separator: "\n")
    }

    /// The JSON objects printed one per line (lyre devices --watch --json).
    var jsonLines: [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}

struct TestNetworkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held. Not a timing assertion:
/// timeouts are generous bounds for things that happen in well under a second.
func eventually(timeout: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// A block from lyred's presentation log (`--presentation-log`: `rtp_time,scheduled_ns,presented_ns,audio_frames,frames`,
/// written by OutputEngine): when the block's first frame was due and when the output said it would be heard
/// (CLOCK_MONOTONIC ns), and how many of its frames were audio rather than silence.
struct PresentedBlock {
    var rtpTime: UInt64, scheduled: Int64, presented: UInt64, audioFrames: Int, frames: Int

    /// The blocks of a log, without its header or a last line cut short.
    static func parse(_ log: String) -> [PresentedBlock] {
        log.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count == 5, let rtpTime = UInt64(fields[0]), let scheduled = Int64(fields[1]), let presented = UInt64(fields[2]),
                  let audioFrames = Int(fields[3]), let frames = Int(fields[4]) else { return nil }
            return PresentedBlock(rtpTime: rtpTime, scheduled: scheduled, presented: presented, audioFrames: audioFrames, frames: frames)
        }
    }
}
