import Foundation
import Testing

/// `lyre sink` with a real sound server (PulseAudio from Tools/peers/pulse-null.sh, whose own output is the
/// null sink "local") and real clients nobody here wrote: paplay as the app, pactl to look.
@Suite(.serialized)
struct SinkTests {
    static let audioTool = TestNetwork.tools + "/peers/audio.py"
    static let pulseEnvironment = ["env", "PULSE_SERVER=unix:/run/lyre-pulse/native", "PULSE_CLIENTCONFIG=/run/lyre-pulse/client.conf"]

    /// Every receiver gets an output; what a music app plays there is heard at the receiver, and the session
    /// ends when the app does; a system sound sent there is moved to the local output and never reaches the
    /// receiver; when the receiver leaves, its output goes and the app's stream falls back to the local one.
    @Test func appsPlayOnTheReceiverAndSystemSoundsStayLocal() async throws {
        for tool in ["pulseaudio", "paplay", "pactl"] where TestNetwork.which(tool) == nil {
            throw TestNetworkError("\(tool) is missing: run Tools/test, which installs everything the tests need")
        }
        let network = try TestNetwork()
        defer { network.close() }
        let env = Self.pulseEnvironment
        let pulse = try network.spawn([TestNetwork.tools + "/peers/pulse-null.sh", "local"], name: "pulseaudio")
        #expect(try await eventually { try await network.run(["test", "-S", "/run/lyre-pulse/native"]).status == 0 }, "pulseaudio: \(pulse.stderr)")
        let output = network.scratch.appendingPathComponent("out.wav").path
        let lyred = try network.spawn(
            ["lyred", "--name", "Speaker", "--port", "7720", "--state-dir", "/run/lyred", "--output", "wav:\(output)",
             "--log-level", "info", "--control-socket", "/run/lyred.sock", "--mpris", "off"], name: "lyred")
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        let sink = try network.spawn(env + [TestNetwork.binaries + "/lyre", "sink"], name: "lyre-sink")

        // The receiver's output, by its id, with its name.
        let devices = try await network.run(["lyre", "devices", "--json"])
        let listed = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]]
        let id = try #require(listed?.first?["id"] as? String, "lyre devices: \(devices.stdout) \(devices.stderr)")
        let node = "lyre_\(id)"
        func sinks() async throws -> String { try await network.run(env + ["pactl", "list", "short", "sinks"]).stdout }
        #expect(try await eventually { try await sinks().contains(node) }, "no output \(node): \(sink.stderr)")
        let described = try await network.run(env + ["pactl", "list", "sinks"]).stdout
        #expect(described.contains("Description: Speaker (Lyre)"), "\(described)")

        // A system sound sent to the receiver's output is moved to the local output while it plays, and no
        // session starts.
        let alert = network.scratch.appendingPathComponent("alert.wav").path
        #expect(try await network.run(["python3", Self.audioTool, "sweep", alert, "--rate", "48000", "--seconds", "3", "--level-db", "-3"]).status == 0)
        let localIndex = try await sinks().split(separator: "\n").first { $0.contains("\tlocal\t") }?.split(separator: "\t").first.map(String.init)
        func onLocal() async throws -> Bool {
            let inputs = try await network.run(env + ["pactl", "list", "short", "sink-inputs"]).stdout
            return localIndex != nil && inputs.split(separator: "\n").contains { $0.split(separator: "\t").dropFirst().first.map(String.init) == localIndex }
        }
        let event = try network.spawn(env + ["paplay", "--device=\(node)", "--property=media.role=event", alert], name: "paplay-event")
        #expect(try await eventually { try await onLocal() }, "the system sound is not on the local output: \(sink.stderr)")
        try await event.waitForExit(timeout: 20)
        #expect(event.status == 0, "paplay: \(event.stderr)")
        #expect(sink.stderr.contains("of 'paplay' moved to the local output"), "\(sink.stderr)")
        #expect(!lyred.stderr.contains("session from"), "a system sound reached the receiver: \(lyred.stderr)")

        // Music played to the output comes out of the receiver; the session ends with the app.
        let song = try await StreamingTests.sweep(network, rate: 48000, seconds: 8, signal: "full")
        let music = try await network.run(env + ["paplay", "--device=\(node)", "--property=media.role=music", song], timeout: 30)
        #expect(music.status == 0, "paplay: \(music.stderr)")
        #expect(await eventually { lyred.stderr.contains("ended: teardown") }, "the session did not end with the app: \(lyred.stderr)\n\(sink.stderr)")

        // The receiver leaves while an app plays there: the output goes, the app's stream moves to the local one.
        let endless = try network.spawn(env + ["paplay", "--device=\(node)", "--raw", "--format=s16le", "--rate=48000", "--channels=2", "/dev/zero"], name: "paplay")
        defer { endless.signal(SIGKILL) }
        #expect(await eventually { lyred.stderr.components(separatedBy: "': opus, latency").count == 3 }, "\(lyred.stderr)\n\(sink.stderr)")
        // The output's slider is the receiver's volume: at 50 % (libpulse's cubic scale: -18.06 dB).
        #expect(try await network.run(env + ["pactl", "set-sink-volume", node, "50%"]).status == 0)
        func receiverVolume() async throws -> Double? {
            let shown = try await network.run(["lyre", "remote", "now-playing", "--json", "--socket", "/run/lyred.sock"])
            return (try? JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])?["volume"] as? Double
        }
        let followed = try await eventually { abs((try await receiverVolume() ?? 0) + 18.06) < 0.1 }
        let shownVolume = try await receiverVolume()
        #expect(followed, "receiver volume \(String(describing: shownVolume)): \(sink.stderr)")
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 10)
        #expect(try await eventually { try await !sinks().contains(node) }, "the output stayed: \(sink.stderr)")
        #expect(try await onLocal(), "the app's stream is not on the local output")
        #expect(endless.isRunning, "the app's stream ended instead of moving")

        StreamingTests.expectSameAudio(try await StreamingTests.compare(network, reference: song, output: output))
        sink.signal(SIGINT)
        try await sink.waitForExit(timeout: 10)
        #expect(sink.status == 0, "lyre sink: \(sink.stderr)")
    }
}
