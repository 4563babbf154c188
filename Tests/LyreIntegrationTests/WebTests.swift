import Foundation
import Testing

/// The receiver's web page and API (Protocol/control-api.md), end to end: `lyre play` as the sender, lyred
/// with its page, headless Chromium (Debian's, over the DevTools protocol: Tools/peers/browser.py) as the
/// listener's phone, and websocket-client (Tools/peers/webclient.py) as a script or a hostile client.
@Suite(.serialized)
struct WebTests {
    static let webClient = TestNetwork.tools + "/peers/webclient.py"
    static let browserTool = TestNetwork.tools + "/peers/browser.py"
    /// Screenshots are kept here, with the build (phone and desktop size).
    static let outputDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/test-output")

    static func lyredArguments(_ network: TestNetwork, name: String = "Speaker", port: Int = 7730, extra: [String] = []) -> [String] {
        ["lyred", "--name", name, "--port", "\(port)", "--state-dir", "/run/lyred-\(name)",
         "--output", "wav:" + network.scratch.appendingPathComponent("\(name).wav").path, "--mpris", "off", "--log-level", "info"] + extra
    }

    /// The test's receiver, up with its page on 7780 (`--web lan`, the default).
    static func startLyred(_ network: TestNetwork) async throws -> Spawned {
        let lyred = try network.spawn(Self.lyredArguments(network), name: "lyred")
        #expect(await eventually { lyred.stderr.contains("web page on port 7780 (lan)") && lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        return lyred
    }

    static func requireTools() throws {
        for tool in ["chromium", "ffmpeg", "curl"] where TestNetwork.which(tool) == nil {
            throw TestNetworkError("\(tool) is missing: run Tools/test, which installs everything the tests need")
        }
    }

    /// The receiver's now-playing JSON, from its control socket.
    static func nowPlaying(_ network: TestNetwork) async throws -> [String: Any] {
        let result = try await network.run(["lyre", "remote", "now-playing", "--json"], timeout: 15)
        return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    /// The browser, driven one command at a time (Tools/peers/browser.py).
    final class Browser {
        let process: Spawned
        private var asked = 0

        init(_ network: TestNetwork) throws {
            process = try network.spawn(["python3", WebTests.browserTool], name: "chromium", input: true)
        }

        func ask(_ line: String, timeout: Double = 30) async throws -> [String: Any] {
            process.type(line)
            asked += 1
            let count = asked
            guard await eventually(timeout: timeout, { process.lines.count >= count || !process.isRunning }), process.lines.count >= count else {
                throw TestNetworkError("the browser did not answer '\(line)': \(process.stdout) \(process.stderr)")
            }
            return (try? JSONSerialization.jsonObject(with: Data(process.lines[count - 1].utf8)) as? [String: Any]) ?? [:]
        }

        func value(_ expression: String) async throws -> Any? {
            let answer = try await ask("eval " + expression)
            if let error = answer["error"] { throw TestNetworkError("the page: \(error)") }
            return answer["value"]
        }

        func text(_ id: String) async throws -> String { try await value("document.getElementById('\(id)').textContent") as? String ?? "" }

        /// The progress bar's position, seconds (what the page draws).
        func position() async throws -> Double { Double(try await value("document.getElementById('bar').dataset.position") as? String ?? "") ?? -1 }

        func click(_ id: String) async throws { _ = try await value("document.getElementById('\(id)').click()") }

        func close() { process.type("quit") }
    }

    /// A file plays with tags and a cover; the page, in a real browser, shows its title, artist and cover
    /// (read back pixel by pixel), and a bar that matches the receiver's position within 0.5 s, moves, and
    /// stops when pause is clicked (the sender pauses: the receiver's now playing says so, from the sender).
    /// The volume slider moved sets the receiver's volume, and a button the sender disabled is hidden; a second sender taking over is shown without a reload; the
    /// receiver going away is shown, and the page comes back by itself when the receiver does.
    @Test func aBrowserShowsWhatPlaysAndItsButtonsDriveTheSender() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        var lyred = try await Self.startLyred(network)
        let browser = try Browser(network)
        defer { browser.close() }
        #expect(try await browser.ask("size 390 844")["ok"] as? Bool == true, "\(browser.process.stdout)")
        #expect(try await browser.ask("open http://127.0.0.1:7780/")["ok"] as? Bool == true, "\(browser.process.stdout)")
        // Nothing plays: no button is shown as if it could work.
        #expect(try await eventually { try await browser.text("connection") == "live" }, "\(browser.process.stdout)")
        #expect(try await browser.text("title") == "Nothing is playing")
        let hidden = "['previous','back','toggle','forward','next','volumeDown','volumeUp'].every(id => document.getElementById(id).hidden)"
        #expect(try await browser.value(hidden) as? Bool == true, "a button is shown while nothing plays")
        let (files, cover) = try await RemoteControlTests.makeTracks(network, seconds: [40, 20])
        // The cover's middle pixel, as ffmpeg decodes it (RGBA).
        let decoded = try await network.shell("ffmpeg -v error -i '\(cover)' -vf 'crop=1:1:iw/2:ih/2' -f rawvideo -pix_fmt rgba - | od -An -tu1")
        let reference = decoded.stdout.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        #expect(reference.count == 4, "ffmpeg: \(decoded.stdout) \(decoded.stderr)")
        let play = try network.spawn(["lyre", "play", files[0], "--to", "Speaker"], name: "lyre-play")
        defer { play.signal(SIGKILL) }

        let shown = try await eventually(timeout: 15) { try await browser.text("title") == "One" }
        let title = try await browser.text("title")
        #expect(shown, "the page shows '\(title)': \(lyred.stderr)")
        #expect(try await browser.text("artist") == "Ann")
        #expect(try await browser.value("document.getElementById('toggle').hidden") as? Bool == false, "no play/pause button")
        // The cover, as the browser decoded and drew it, against ffmpeg's reading of the file.
        let pixel = """
            (() => { const i = document.getElementById('art'); if (!i.complete || !i.naturalWidth) return null; \
            const c = document.createElement('canvas'); c.width = i.naturalWidth; c.height = i.naturalHeight; \
            const g = c.getContext('2d'); g.drawImage(i, 0, 0); return Array.from(g.getImageData(c.width >> 1, c.height >> 1, 1, 1).data); })()
            """
        let painted = try await eventually { (try await browser.value(pixel) as? [Int]) != nil }
        let rgba = try await browser.value(pixel) as? [Int] ?? []
        #expect(painted && rgba == reference, "the cover's middle pixel in the browser: \(rgba), by ffmpeg: \(reference)")
        try FileManager.default.createDirectory(at: Self.outputDirectory, withIntermediateDirectories: true)
        #expect(try await browser.ask("shot " + Self.outputDirectory.appendingPathComponent("web-phone.png").path)["ok"] as? Bool == true)
        _ = try await browser.ask("size 1280 900")
        #expect(try await browser.ask("shot " + Self.outputDirectory.appendingPathComponent("web-desktop.png").path)["ok"] as? Bool == true)

        // The bar against the receiver's own position, read just before and just after it.
        let before = try await Self.nowPlaying(network)["position"] as? Double ?? -1
        let onPage = try await browser.position()
        let after = try await Self.nowPlaying(network)["position"] as? Double ?? -1
        #expect(before > 0 && onPage >= before - 0.5 && onPage <= after + 0.5, "receiver \(before)…\(after) s, the page \(onPage) s")
        try await Task.sleep(for: .seconds(1))
        let moved = try await browser.position()
        #expect(moved > onPage + 0.5, "the bar did not move: \(onPage) → \(moved)")

        // Pause, clicked: the sender pauses, and the bar stops.
        #expect(try await browser.text("toggle") == "Pause")
        try await browser.click("toggle")
        let paused = try await eventually { try await Self.nowPlaying(network)["state"] as? String == "paused" }
        #expect(paused, "the sender did not pause: \(play.stderr) \(lyred.stderr)")
        #expect(try await eventually { try await browser.text("toggle") == "Play" })
        let stopped = try await browser.position()
        try await Task.sleep(for: .seconds(1))
        let still = try await browser.position()
        #expect(abs(still - stopped) < 0.05, "the bar moved while paused: \(stopped) → \(still)")
        try await browser.click("toggle")
        #expect(try await eventually { try await Self.nowPlaying(network)["state"] as? String == "playing" }, "play did not resume")

        // The slider, moved as a finger moves it (input events, then change): the receiver's volume follows to
        // the level let go at, and the page shows the receiver's figure. The sender takes a level, so the steps
        // are not shown beside it.
        #expect(try await browser.value("document.getElementById('volumeSlider').hidden") as? Bool == false, "no volume slider")
        #expect(try await browser.value("document.getElementById('volumeDown').hidden && document.getElementById('volumeUp').hidden") as? Bool == true,
                "volume steps shown beside the slider")
        _ = try await browser.value("""
            (() => { const s = document.getElementById('volumeSlider'); \
            for (const v of ['-2', '-6', '-9.5', '-12.5']) { s.value = v; s.dispatchEvent(new Event('input')); } \
            s.dispatchEvent(new Event('change')); })()
            """)
        let set = try await eventually { try await Self.nowPlaying(network)["volume"] as? Double == -12.5 }
        let volume = try await Self.nowPlaying(network)["volume"] as? Double ?? 0
        #expect(set, "the slider let go at -12.5 dB; the receiver's volume is \(volume) dB: \(play.stderr)")
        let pageVolume = try await eventually { try await browser.text("volume") == "-12.5 dB" }
        let shownVolume = try await browser.text("volume")
        #expect(pageVolume, "the page shows \(shownVolume), the receiver \(volume) dB")
        // A button whose command the sender disabled is not shown: one file, so no next track.
        #expect(try await browser.value("document.getElementById('next').hidden") as? Bool == true, "'Next' shown on the only item")

        // A second sender takes over: shown at once, no reload.
        let second = try network.spawn(["lyre", "play", files[1], "--to", "Speaker", "--name", "Bob"], name: "lyre-play-bob")
        defer { second.signal(SIGKILL) }
        let takenOver = try await eventually(timeout: 15) {
            let sender = try await browser.text("sender")
            let title = try await browser.text("title")
            return sender == "from Bob" && title == "Two"
        }
        let (newTitle, newSender) = (try await browser.text("title"), try await browser.text("sender"))
        #expect(takenOver, "the page shows '\(newTitle)' \(newSender)")

        // The receiver goes away, and comes back: the page reconnects by itself, and shows Bob's song again, as
        // Bob's sender waited for its only room and rejoined it (issue 27).
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 15)
        #expect(try await eventually { try await browser.text("connection").contains("offline") }, "the page did not notice the receiver went away")
        lyred = try network.spawn(Self.lyredArguments(network), name: "lyred-again")
        defer { lyred.signal(SIGTERM) }
        let back = try await eventually(timeout: 20) {
            let connection = try await browser.text("connection")
            let title = try await browser.text("title")
            let sender = try await browser.text("sender")
            return connection == "live" && title == "Two" && sender == "from Bob"
        }
        let (connection, showing) = (try await browser.text("connection"), try await browser.text("title"))
        #expect(back, "the page did not reconnect with Bob's song: \(connection) '\(showing)' \(lyred.stderr) \(second.stderr)")
    }

    /// The name and output delay, edited on the page: in effect at once (the name advertised, as avahi-browse
    /// sees it; the delay in the snapshot), written into the config file lyred read with its comments kept,
    /// and still there after a restart. A setting given on lyred's command line changes, cannot be kept, and
    /// `lyre remote` warns so (exit 0: it is in effect).
    @Test func theNameAndOutputDelayAreEditedOnThePageAndKept() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        let config = network.scratch.appendingPathComponent("lyred.conf").path
        let original = "# the den's speaker\nname = Speaker\nport = 7730\n\n# mpris stays off here\nmpris = off\n"
        try original.write(toFile: config, atomically: false, encoding: .utf8)
        let arguments = ["lyred", "--config", config, "--state-dir", "/run/lyred-kept",
                         "--output", "wav:" + network.scratch.appendingPathComponent("kept.wav").path]
        var lyred = try network.spawn(arguments, name: "lyred")
        #expect(await eventually { lyred.stderr.contains("advertised as 'Speaker'") }, "\(lyred.stderr)")
        let browser = try Browser(network)
        defer { browser.close() }
        #expect(try await browser.ask("open http://127.0.0.1:7780/")["ok"] as? Bool == true, "\(browser.process.stdout)")
        #expect(try await eventually { try await browser.text("connection") == "live" }, "\(browser.process.stdout)")
        #expect(try await browser.value("document.getElementById('nameInput').value") as? String == "Speaker")

        // A name with spaces, quotes and an equals sign, typed and saved.
        let name = "Den \"Left\" = 2"
        func submit(_ input: String, _ value: String, _ form: String) async throws {
            _ = try await browser.value("""
                (() => { const i = document.getElementById('\(input)'); i.focus(); i.value = \(String(decoding: try JSONEncoder().encode(value), as: UTF8.self)); \
                document.getElementById('\(form)').requestSubmit(); })()
                """)
        }
        try await submit("nameInput", name, "nameForm")
        let saved = try await eventually { try await browser.text("settingsMessage") == "Saved." }
        let said = try await browser.text("settingsMessage")
        #expect(saved, "the page says '\(said)': \(lyred.stderr)")
        #expect(try await eventually { try await browser.text("name") == name }, "the page's heading did not follow")
        let advertised = try await eventually(timeout: 10) { try await DiscoveryPeerTests.browse(network).contains { $0.count > 3 && $0[3] == name } }
        let names = try await DiscoveryPeerTests.browse(network).map { $0.count > 3 ? $0[3] : "" }
        #expect(advertised, "avahi-browse sees \(names)")
        try await submit("delayInput", "40", "delayForm")
        #expect(try await eventually { try await browser.text("outputDelay") == "40 ms" }, "the output delay did not change")

        let kept = try String(contentsOfFile: config, encoding: .utf8)
        #expect(kept == original.replacingOccurrences(of: "name = Speaker", with: "name = \(name)") + "output-delay = 40\n", "\(kept)")

        // Restarted: both kept.
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 15)
        lyred = try network.spawn(arguments, name: "lyred-again")
        #expect(await eventually { lyred.stderr.contains("advertised as '\(name)'") }, "\(lyred.stderr)")
        let delay = try await network.run(["lyre", "remote", "output-delay"], timeout: 15)
        #expect(delay.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "40", "\(delay.stdout) \(delay.stderr)")
        #expect(try await eventually(timeout: 20) { 
            let (shown, connection) = (try await browser.text("name"), try await browser.text("connection"))
            return shown == name && connection == "live"
        }, "the page after the restart")

        // Given on the command line, the delay changes but cannot be kept: the reply says why, the file stays.
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 15)
        lyred = try network.spawn(arguments + ["--output-delay", "10"], name: "lyred-fixed")
        defer { lyred.signal(SIGTERM) }
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        let fixed = try await network.run(["lyre", "remote", "output-delay", "30"], timeout: 15)
        #expect(fixed.status == 0 && fixed.stdout == "30\n" && fixed.stderr.contains("warning: changed until lyred restarts: --output-delay on its command line"),
                "\(fixed.status) \(fixed.stdout) \(fixed.stderr)")
        let now = try await network.run(["lyre", "remote", "output-delay"], timeout: 15)
        #expect(now.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "30", "\(now.stdout)")
        #expect(try String(contentsOfFile: config, encoding: .utf8) == kept)
    }

    /// Bad input and load while music plays: malformed JSON, an unknown command, a binary frame, a message
    /// over 4096 bytes, upgrades to another path or from another origin, HTTP garbage, a request that never
    /// ends and 1,000 connections at once each get an error or a closed connection, the receiver answers on
    /// and sends its link figures each second, and the audio never stalls (lyred's own counters: nothing
    /// late, lost or concealed).
    @Test func badInputAndLoadGetErrorsAndTheAudioPlaysOn() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try await Self.startLyred(network)
        let (files, _) = try await RemoteControlTests.makeTracks(network, seconds: [30])
        let play = try network.spawn(["lyre", "play", files[0], "--to", "Speaker"], name: "lyre-play")
        defer { play.signal(SIGKILL) }
        #expect(try await eventually { (try await Self.nowPlaying(network)["position"] as? Double ?? 0) > 1 }, "not playing: \(play.stderr)")
        let url = "ws://127.0.0.1:7780/api/ws"

        func client(_ arguments: [String]) async throws -> [[String: Any]] {
            let run = try await network.run(["python3", Self.webClient] + arguments, timeout: 60)
            #expect(run.status == 0, "webclient \(arguments): \(run.stderr)")
            return run.jsonLines
        }
        // Malformed, then unknown, then a good command: an error frame, an error reply, and the connection
        // still answers.
        let session = try await client(["session", url, "--send", "pause", "--send", #"{"id":1,"command":"frobnicate"}"#,
                                        "--send", #"{"id":2,"command":"stats"}"#, "--until-reply", "2", "--seconds", "10"])
        #expect(session.first?["type"] as? String == "snapshot")
        #expect(session.contains { $0["type"] as? String == "error" }, "\(session)")
        #expect(session.contains { $0["id"] as? Int == 1 && $0["ok"] as? Bool == false && $0["error"] as? String == "unknown" }, "\(session)")
        #expect(session.contains { $0["id"] as? Int == 2 && ($0["result"] as? String ?? "").contains("received=") }, "\(session)")
        // A binary frame: an error frame. Over the limit: closed.
        let binary = try await client(["raw", url, "--binary"])
        #expect(binary.contains { $0["type"] as? String == "error" }, "\(binary)")
        let oversized = try await client(["raw", url, "--bytes", "5000"])
        #expect(oversized.last?.keys.contains("closed") == true, "\(oversized)")
        // Upgrades the API does not take.
        let foreign = try await client(["handshake", url, "--origin", "http://elsewhere.example"])
        #expect(foreign.first?["status"] as? Int == 403, "\(foreign)")
        let otherPath = try await client(["handshake", "ws://127.0.0.1:7780/elsewhere"])
        #expect(otherPath.first?["status"] as? Int == 403, "\(otherPath)")
        // HTTP garbage, a request that never ends, a body over the limit.
        let garbage = try await network.shell(
            "printf 'NOT HTTP AT ALL\\r\\n\\r\\n' | timeout 5 curl -s -o /dev/null -w '%{http_code}' telnet://127.0.0.1:7780; "
                + "head -c 9000 /dev/zero | curl -s -o /dev/null -w ' %{http_code}' --data-binary @- http://127.0.0.1:7780/api/state")
        #expect(garbage.stdout.hasSuffix(" 413") || garbage.stdout.hasSuffix(" 405"), "curl: \(garbage.stdout) \(garbage.stderr)")
        // 1,000 at once: 64 served, the rest closed at once.
        let flood = try await client(["flood", url, "1000"])
        let served = flood.first?["snapshots"] as? Int ?? -1
        #expect(served > 0 && served <= 64 && (flood.first?["refused"] as? Int ?? 0) >= 936, "\(flood)")
        // A request begun and never ended is closed at its 10 s deadline (not at once, and not never).
        let stalled = try await client(["stall", "127.0.0.1", "7780"])
        let after = stalled.first?["closedAfter"] as? Double ?? -1
        #expect(after >= 5 && after < 30, "a stalled request was closed after \(after) s")
        // The link figures come by themselves while a session plays, about once a second.
        let watched = try await client(["session", url, "--seconds", "3.5"])
        let links = watched.filter { $0["type"] as? String == "link" }
        #expect((2...5).contains(links.count) && links.allSatisfy { ($0["link"] as? [String: Any])?["received"] is Int },
                "\(links.count) link events in 3.5 s: \(links.prefix(2))")

        // The receiver still answers, counted what it refused, and played on without a gap.
        let state = try await network.run(["curl", "-s", "--max-time", "5", "http://127.0.0.1:7780/api/state"])
        let snapshot = (try? JSONSerialization.jsonObject(with: Data(state.stdout.utf8)) as? [String: Any]) ?? [:]
        #expect(snapshot["type"] as? String == "snapshot", "GET /api/state after the abuse: \(state.stdout)")
        let stats = try await network.run(["lyre", "remote", "stats"]).stdout
        func counter(_ name: String) -> Int { stats.firstMatch(of: try! Regex("\(name)=(\\d+)")).flatMap { Int($0.output[1].substring ?? "") } ?? -1 }
        #expect(counter("web-refused") >= 936 && counter("web-bad") >= 3, "stats: \(stats)")
        #expect(counter("late") == 0 && counter("lost") == 0 && counter("concealed") == 0, "the audio stalled: \(stats)")
        #expect(lyred.isRunning, "lyred: \(lyred.stderr)")
    }

    /// `--web lan`: a client on another host sees the page and drives the player, but never the pairing (its
    /// PIN, unpairing); the same on loopback may. `--web local`: another host gets no answer at all.
    @Test func pairingOnlyFromTheReceiverAndLocalOnlyAnswersLoopback() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        let host = try await network.addHost(2)
        _ = try await Self.startLyred(network)
        func session(_ url: String, on host: TestNetwork.Host?, _ command: String) async throws -> [[String: Any]] {
            let run = try network.spawn(["python3", Self.webClient, "session", url, "--send", "{\"id\":1,\"command\":\"\(command)\"}",
                                         "--until-reply", "1", "--seconds", "10"], on: host)
            try await run.waitForExit(timeout: 30)
            #expect(run.status == 0, "webclient: \(run.stderr)")
            return run.jsonLines
        }
        let remote = try await session("ws://10.77.0.1:7780/api/ws", on: host, "pairing")
        #expect((remote.first?["receiver"] as? [String: Any])?["pairing"] as? Bool == false, "\(remote)")
        #expect(remote.contains { $0["error"] as? String == "forbidden" }, "another host saw the pairing: \(remote)")
        #expect(!remote.contains { $0["type"] as? String == "pairing" }, "another host got a pairing event: \(remote)")
        let unpair = try await session("ws://10.77.0.1:7780/api/ws", on: host, "unpair anyone")
        #expect(unpair.contains { $0["error"] as? String == "forbidden" }, "another host may unpair: \(unpair)")
        let players = try await session("ws://10.77.0.1:7780/api/ws", on: host, "now-playing")
        #expect(players.contains { $0["ok"] as? Bool == true }, "another host cannot follow the player: \(players)")
        let local = try await session("ws://127.0.0.1:7780/api/ws", on: nil, "pairing")
        #expect((local.first?["receiver"] as? [String: Any])?["pairing"] as? Bool == true, "\(local)")
        #expect(local.contains { $0["error"] as? String == "none" }, "loopback may ask for the PIN (none under way): \(local)")
        #expect(local.contains { $0["type"] as? String == "pairing" && $0["paired"] is [Any] }, "no pairing event on loopback: \(local)")

        let confined = try network.spawn(Self.lyredArguments(network, name: "Closet", port: 7731, extra: [
                "--web", "local", "--web-port", "7781", "--control-socket", "/run/closet.sock"]), name: "lyred-local")
        #expect(await eventually { confined.stderr.contains("web page on port 7781 (local)") }, "\(confined.stderr)")
        let fromHost = try network.spawn(["python3", Self.webClient, "handshake", "ws://10.77.0.1:7781/api/ws"], on: host)
        try await fromHost.waitForExit(timeout: 30)
        #expect(fromHost.jsonLines.first?.keys.contains("status") == true && fromHost.jsonLines.first?["status"] as? Int == nil,
                "another host got an answer from --web local: \(fromHost.stdout)")
        let fromLoopback = try await network.run(["python3", Self.webClient, "handshake", "ws://127.0.0.1:7781/api/ws"])
        #expect(fromLoopback.jsonLines.first?["status"] as? Int == 101, "\(fromLoopback.stdout)")
    }

    /// In a group the page shows every room of the playback, as the sender tells them, and follows a room
    /// removed and added back; a playback of one room shows none.
    @Test func thePageShowsTheRoomsOfItsGroup() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try await Self.startLyred(network)
        let den = try network.spawn(Self.lyredArguments(network, name: "Den Room", port: 7731, extra: [
            "--control-socket", "/run/den.sock", "--web-port", "7781"]), name: "lyred-den")
        defer { den.signal(SIGTERM) }
        #expect(await eventually { den.stderr.contains("advertised as") }, "\(den.stderr)")
        let browser = try Browser(network)
        defer { browser.close() }
        #expect(try await browser.ask("open http://127.0.0.1:7780/")["ok"] as? Bool == true, "\(browser.process.stdout)")
        let (files, _) = try await RemoteControlTests.makeTracks(network, seconds: [40])
        let socket = "/run/lyre-group.sock"
        let play = try network.spawn(["lyre", "play", files[0], "--to", "Speaker", "--to", "Den Room", "--group-socket", socket], name: "lyre-play")
        defer { play.signal(SIGKILL) }
        func rooms() async throws -> String { try await browser.value("document.getElementById('rooms').hidden ? '' : document.getElementById('rooms').textContent") as? String ?? "" }
        let grouped = try await eventually(timeout: 15) { try await rooms() == "In Speaker, Den Room" }
        var shown = try await rooms()
        #expect(grouped, "the page shows '\(shown)': \(play.stderr) \(lyred.stderr)")
        let removed = try await network.run(["lyre", "group", "remove", "Den Room", "--socket", socket])
        #expect(removed.status == 0, "\(removed.stderr)")
        let alone = try await eventually { try await rooms() == "" }
        shown = try await rooms()
        #expect(alone, "after the removal the page shows '\(shown)'")
        let added = try await network.run(["lyre", "group", "add", "Den Room", "--socket", socket])
        #expect(added.status == 0, "\(added.stderr)")
        let back = try await eventually { try await rooms() == "In Speaker, Den Room" }
        shown = try await rooms()
        #expect(back, "after adding it back the page shows '\(shown)'")
        // The other room's own page shows the same group.
        let state = try await network.run(["curl", "-s", "--max-time", "5", "http://127.0.0.1:7781/api/state"])
        let receiver = (try? JSONSerialization.jsonObject(with: Data(state.stdout.utf8)) as? [String: Any])?["receiver"] as? [String: Any]
        #expect(receiver?["rooms"] as? [String] == ["Speaker", "Den Room"], "\(state.stdout)")
    }

    /// streaming.md §7, control-api.md §2: an announcement over the music is shown on the page as such, with how
    /// it meets the music, while what plays (the title) stays the music's; a second one mixed in is listed
    /// after it; once both ended, the page shows none and the music plays on.
    @Test func thePageShowsWhatPlaysOverTheMusic() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try await Self.startLyred(network)
        let browser = try Browser(network)
        defer { browser.close() }
        #expect(try await browser.ask("open http://127.0.0.1:7780/")["ok"] as? Bool == true, "\(browser.process.stdout)")
        let (files, _) = try await RemoteControlTests.makeTracks(network, seconds: [30])
        let play = try network.spawn(["lyre", "play", files[0], "--to", "Speaker", "--group-socket", "off"], name: "lyre-play")
        defer { play.signal(SIGKILL) }
        func shown() async throws -> String {
            try await browser.value("document.getElementById('overlays').hidden ? '' : document.getElementById('overlays').textContent") as? String ?? ""
        }
        let playing = try await eventually(timeout: 15) { try await browser.text("title") == "One" }
        let title = try await browser.text("title")
        #expect(playing, "the page shows '\(title)': \(lyred.stderr)")
        let chime = try await StreamingTests.sweep(network, rate: 48000, seconds: 6, signal: "full")
        let bell = try await StreamingTests.sweep(network, rate: 48000, seconds: 3)
        let doorbell = try network.spawn(["lyre", "play", chime, "--to", "Speaker", "--duck", "--name", "Doorbell", "--group-socket", "off"],
                                         name: "doorbell")
        let ducked = try await eventually { try await shown() == "Doorbell plays over it (-15 dB)" }
        var text = try await shown()
        #expect(ducked, "the page shows '\(text)': \(lyred.stderr)")
        let radio = try network.spawn(["lyre", "play", bell, "--to", "Speaker", "--mix", "--name", "Radio", "--group-socket", "off"], name: "radio")
        let both = try await eventually { try await shown() == "Doorbell plays over it (-15 dB); Radio plays over it (mixed in)" }
        text = try await shown()
        #expect(both, "the page shows '\(text)': \(lyred.stderr)")
        let titleUnder = try await browser.text("title")
        #expect(titleUnder == "One", "the page shows '\(titleUnder)' as what plays under the announcements")
        for sender in [radio, doorbell] {
            try await sender.waitForExit(timeout: 30)
            #expect(sender.status == 0, "\(sender.stderr)")
        }
        let gone = try await eventually { try await shown() == "" }
        text = try await shown()
        #expect(gone, "both announcements ended and the page shows '\(text)'")
        let titleAfter = try await browser.text("title")
        #expect(play.isRunning && titleAfter == "One", "the music did not play on (the page shows '\(titleAfter)'): \(play.stderr)")
    }

    /// Pairing from the page in a browser on the receiver: "Pair a new sender" says what to run; the PIN
    /// appears as the sender asks (pushed, no click), the same the control socket gives; typed at the sender,
    /// the pairing is made and the sender listed at once; "Unpair" forgets it.
    @Test func aSenderIsPairedAndUnpairedFromThePageOnTheReceiver() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try await Self.startLyred(network)
        let browser = try Browser(network)
        defer { browser.close() }
        #expect(try await browser.ask("open http://127.0.0.1:7780/")["ok"] as? Bool == true, "\(browser.process.stdout)")
        #expect(try await eventually { try await browser.value("!document.getElementById('pairingCard').hidden") as? Bool == true },
                "no pairing on the receiver's own page")
        try await browser.click("pairNew")
        #expect(try await browser.text("pairCommand") == "lyre pair \"Speaker\"")
        #expect(try await browser.value("document.getElementById('pairHow').hidden") as? Bool == false)

        let pair = try network.spawn(["lyre", "pair", "Speaker", "--name", "Ann"], input: true)
        defer { pair.signal(SIGKILL) }
        let shown = try await eventually(timeout: 15) { try await browser.text("pin").count == 6 }
        let pin = try await browser.text("pin")
        #expect(shown, "no PIN on the page: \(pair.stderr) \(lyred.stderr)")
        let asked = try await network.run(["lyre", "remote", "pairing", "--json"], timeout: 15)
        let control = (try? JSONSerialization.jsonObject(with: Data(asked.stdout.utf8)) as? [String: Any])?["pin"] as? String
        #expect(control == pin, "the page shows \(pin), the control socket \(control ?? asked.stderr)")
        #expect(await eventually { pair.stderr.contains("PIN shown by 'Speaker'") }, "\(pair.stderr)")
        pair.type(pin)
        try await pair.waitForExit(timeout: 20)
        #expect(pair.status == 0, "\(pair.stderr)")
        let listed = try await eventually { try await browser.text("paired").contains("Ann") }
        let list = try await browser.text("paired")
        #expect(listed, "the page lists '\(list)'")
        #expect(try await eventually { try await browser.text("pin").isEmpty }, "the PIN stayed on the page")

        _ = try await browser.value("document.querySelector('#paired button').click()")
        #expect(try await eventually { try await browser.text("paired").isEmpty }, "still listed after Unpair")
        let paired = try await network.run(["lyre", "remote", "paired", "--json"], timeout: 15)
        #expect(paired.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(paired.stdout)")
    }

    /// The limits and the instances: a client that never reads while events pile up is dropped (and
    /// counted); a second lyred on the host without `--web-port` runs without a page and says so, one given
    /// the taken port fails with one line; `--web off` serves nothing.
    @Test func aClientThatNeverReadsIsDroppedAndInstancesShareTheHost() async throws {
        try Self.requireTools()
        let network = try TestNetwork()
        defer { network.close() }
        _ = try await Self.startLyred(network)
        let slow = try await network.run(["python3", Self.webClient, "slow", "127.0.0.1", "7780", "4000"], timeout: 120)
        print("webclient slow: \(slow.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(slow.jsonLines.first?["dropped"] as? Bool == true, "webclient slow: \(slow.stdout) \(slow.stderr)")
        let stats = try await network.run(["lyre", "remote", "stats"]).stdout
        #expect((stats.firstMatch(of: /web-slow=(\d+)/).flatMap { Int($0.1) } ?? 0) >= 1, "stats: \(stats)")

        let second = try network.spawn(Self.lyredArguments(network, name: "Second", port: 7731, extra: ["--control-socket", "/run/second.sock"]), name: "lyred-second")
        #expect(await eventually { second.stderr.contains("no web page: port 7780 is in use") && second.stderr.contains("advertised as") }, "\(second.stderr)")
        let third = try await network.run(Self.lyredArguments(network, name: "Third", port: 7732, extra: ["--control-socket", "/run/third.sock", "--web-port", "7780"]))
        #expect(third.status != 0 && third.stderr.contains("cannot serve the web page on port 7780"), "\(third.status) \(third.stderr)")
        let off = try network.spawn(Self.lyredArguments(network, name: "Quiet", port: 7733, extra: ["--control-socket", "/run/quiet.sock", "--web", "off", "--web-port", "7783"]), name: "lyred-off")
        #expect(await eventually { off.stderr.contains("advertised as") }, "\(off.stderr)")
        let refused = try await network.run(["curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:7783/"])
        #expect(refused.stdout == "000" && !off.stderr.contains("web page on port"), "--web off answered: \(refused.stdout)")
    }
}
