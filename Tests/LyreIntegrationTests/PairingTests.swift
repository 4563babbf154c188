import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Pairing with real components (Protocol/pairing.md): lyred in the test network shows a PIN on its control
/// socket, `lyre pair` finds it by name over mDNS, reads the PIN from its standard input as a script would, and
/// both keep the other's key across restarts. Wrong PINs lock pairing.
@Suite(.serialized)
struct PairingTests {
    struct Receiver {
        let network: TestNetwork
        let state: String
        let socket: String
        var process: Spawned

        /// nil: lyred is given no `--access`, so it runs as installed (paired, README).
        let access: String?

        init(network: TestNetwork, name: String = "Kitchen", access: String? = "paired") async throws {
            self.network = network
            self.access = access
            state = network.scratch.appendingPathComponent("\(name).state").path
            socket = network.scratch.appendingPathComponent("\(name).sock").path
            process = try Self.start(network, name: name, state: state, socket: socket, access: access)
        }

        static func start(_ network: TestNetwork, name: String, state: String, socket: String, access: String?) throws -> Spawned {
            try network.spawn(["lyred"] + (access.map { ["--access", $0] } ?? []) + [
                                   "--name", name, "--port", "7750", "--state-dir", state, "--output", "null",
                                   "--control-socket", socket, "--mpris", "off", "--log-level", "info"],
                              name: "lyred-\(name)", defaultAccess: access == nil)
        }

        func waitUntilAdvertised() async {
            let up = await eventually { process.stderr.contains("advertised as") }
            #expect(up, "lyred did not come up: \(process.stderr)")
        }

        mutating func restart(state other: String? = nil) async throws {
            process.signal(SIGTERM)
            try await process.waitForExit(timeout: 10)
            process = try Self.start(network, name: "Kitchen", state: other ?? state, socket: socket, access: access)
            await waitUntilAdvertised()
        }

        func remote(_ words: [String]) async throws -> Spawned {
            try await network.run(["lyre", "remote", "--socket", socket] + words)
        }

        /// The PIN lyred shows, read from its control socket as a user at the receiver would.
        func pin() async throws -> String? {
            let answer = try await remote(["pairing", "--json"])
            guard answer.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any] else {
                return nil
            }
            return object["pin"] as? String
        }
    }

    /// The ids of the receivers `lyre devices` finds now.
    static func advertised(_ network: TestNetwork) async throws -> [String] {
        let devices = try await network.run(["lyre", "devices", "--json", "--timeout", "1"])
        let found = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]] ?? []
        return found.compactMap { $0["id"] as? String }
    }

    /// The name the sender pairs under: the user's text, with a space, quotes and `=`, which the control
    /// socket's requests must carry whole (`LineWords`).
    static let senderName = "Test \"sender\" = 1"

    /// Runs `lyre pair Kitchen` (or `target`), typing what `typed` makes of the PIN the receiver shows.
    static func pair(_ receiver: Receiver, target: [String] = ["Kitchen"], shownBy: String = "'Kitchen'", typed: (String) -> String = { $0 }) async throws -> Spawned {
        let pair = try receiver.network.spawn(["lyre", "pair"] + target + ["--name", senderName], input: true)
        var pin: String?
        _ = try await eventually(timeout: 15) {
            pin = try await receiver.pin()
            return pin != nil || !pair.isRunning
        }
        if let pin {
            #expect(pin.count == 6 && pin.allSatisfy(\.isNumber))
            // The prompt is on the terminal before the PIN is typed.
            #expect(await eventually { pair.stderr.contains("PIN shown by \(shownBy)") }, "\(pair.stderr)")
            pair.type(typed(pin))
        }
        try await pair.waitForExit(timeout: 20)
        return pair
    }

    /// One `lyre play` to Kitchen under tcpdump (the RTSP connection and all UDP); with `inject`, the attacker
    /// acts mid-session. Returns the capture and the RTP payloads it holds.
    static func capturedSession(_ network: TestNetwork, _ receiver: Receiver, song: String, inject: Bool, extra: [String] = []) async throws
        -> (bytes: Data, payloads: [String], fec: Int, fecClear: Int, rtcp: [String: [String]])
    {
        let capture = network.scratch.appendingPathComponent("session-\(UUID().uuidString).pcap").path
        let tcpdump = try network.spawn(["tcpdump", "-i", "lo", "-U", "-s", "0", "-w", capture, "tcp port 7750 or udp"])
        #expect(await eventually { tcpdump.stderr.contains("listening on") }, "\(tcpdump.stderr)")
        let play = try network.spawn(["lyre", "play", song, "--to", "Kitchen", "--title", "Secret Title XYZZY", "--group-socket", "off"] + extra)
        if inject {
            let attack = try await network.run(["python3", TestNetwork.tools + "/peers/srtp-inject.py", capture, "--replay", "5", "--alter", "5",
                                                "--wait", "40"])
            #expect(attack.status == 0, "\(attack.stderr)")
        }
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "\(play.stderr)")
        // Written packet by packet (-U); killed outright, as test children cannot be interrupted (their
        // SIGINT is blocked by the test runner's threads).
        tcpdump.signal(SIGKILL)
        try await tcpdump.waitForExit(timeout: 10)
        let read = try await network.run(["python3", TestNetwork.tools + "/peers/srtp-inject.py", capture, "--payloads"])
        let object = try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [String: Any]
        return (try Data(contentsOf: URL(fileURLWithPath: capture)), object?["payloads"] as? [String] ?? [],
                object?["fec"] as? Int ?? 0, object?["fec_clear"] as? Int ?? -1, object?["rtcp"] as? [String: [String]] ?? [:])
    }

    @Test func pairingWithTheRightPINSurvivesRestartsOfBothSides() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        var receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()

        let pair = try await Self.pair(receiver)
        #expect(pair.status == 0, "lyre pair: \(pair.stderr)")
        #expect(pair.stdout.contains("paired with 'Kitchen'"), "\(pair.stdout)")
        // No PIN is left to use.
        #expect(try await receiver.pin() == nil)

        // The sender kept the key the receiver advertises (TXT pk), under the receiver's id.
        let devices = try await network.run(["lyre", "devices", "--json", "--timeout", "3"])
        let found = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]] ?? []
        let advertised = try #require(found.first { $0["name"] as? String == "Kitchen" }, "\(devices.stdout)")
        let fingerprint = try #require(advertised["keyFingerprint"] as? String)
        let id = try #require(advertised["id"] as? String)
        var listed = try await network.run(["lyre", "pair", "--list"])
        #expect(listed.stdout.contains("Kitchen  \(id)  key \(fingerprint)"), "\(listed.stdout)")

        // The receiver kept the sender, and still has it after a restart; so does the sender (its files).
        try await receiver.restart()
        let paired = try await receiver.remote(["paired", "--json"])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(paired.stdout.utf8)) as? [[String: Any]], "\(paired.stdout)")
        #expect(entries.count == 1)
        #expect(entries.first?["name"] as? String == Self.senderName)
        let senderID = try #require(entries.first?["id"] as? String)
        let senderIDFile = network.scratch.appendingPathComponent("state/lyre/device-id").path
        #expect(try String(contentsOfFile: senderIDFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == senderID)
        for file in ["state/lyre/device-key", "state/lyre/paired-receivers.json", "Kitchen.state/paired-senders.json"] {
            let mode = try FileManager.default.attributesOfItem(atPath: network.scratch.appendingPathComponent(file).path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file) is \(String(mode ?? 0, radix: 8))")
        }
        listed = try await network.run(["lyre", "pair", "--list"])
        #expect(listed.stdout.contains(id))

        // pairing.md §6.1: TLS through discovery, and through the address remembered for the id: with avahi
        // stopped (and `--mdns avahi`, so nothing else could find it), `lyre play` connects to what it remembered
        // from the first play, encrypted.
        let song = network.scratch.appendingPathComponent("song.wav").path
        #expect(try await network.run(["python3", MultiRoomTests.audioTool, "sweep", song, "--seconds", "1"]).status == 0)
        let discovered = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(discovered.status == 0, "\(discovered.stderr)")
        #expect(try await network.run([TestNetwork.tools + "/avahi-ctl", "stop"]).status == 0)
        let remembered = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--mdns", "avahi", "--timeout", "2", "--group-socket", "off"])
        #expect(remembered.status == 0 && !remembered.stderr.contains("unencrypted"), "\(remembered.stderr)")
        let sessions = receiver.process.stderr.components(separatedBy: "session from").dropFirst().map { String($0.prefix { $0 != "\n" }) }
            .filter { $0.contains(": opus") }
        #expect(sessions.count == 2 && sessions.allSatisfy { $0.contains("TLS and SRTP") }, "\(sessions)")

        // Forgetting, on each side: at the receiver by the sender's name, which has a space, quotes and `=`.
        let unpaired = try await receiver.remote(["unpair", Self.senderName])
        #expect(unpaired.status == 0 && unpaired.stdout.contains(senderID), "\(unpaired.stdout) \(unpaired.stderr)")
        #expect(try await receiver.remote(["paired"]).stdout.contains("no paired senders"))
        let forgot = try await network.run(["lyre", "pair", "--forget", "kitchen"])
        #expect(forgot.status == 0, "\(forgot.stderr)")
        #expect(try await network.run(["lyre", "pair", "--list"]).stdout.contains("no paired receivers"))
    }

    /// pairing.md §3: the sender checks the receiver's id against the id it was found by, before any PIN. A
    /// record advertises the real receiver's port and key under another id (avahi-publish): pairing with it is
    /// refused, naming the id that answered, and no PIN is asked for.
    @Test func aReceiverAnsweringAsAnotherIdIsNotPaired() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        let devices = try await network.run(["lyre", "devices", "--json", "--timeout", "3"])
        let found = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]] ?? []
        let kitchen = try #require(found.first { $0["name"] as? String == "Kitchen" }, "\(devices.stdout)")
        let id = try #require(kitchen["id"] as? String), key = try #require(kitchen["keyFingerprint"] as? String)
        try network.spawn(["avahi-publish", "-s", "Decoy", "_lyre._tcp", "7750", "v=1", "id=\(DiscoveryPeerTests.foreignID)", "pk=\(key)", "st=idle"])
        #expect(await eventually { (try? await Self.advertised(network))?.contains(DiscoveryPeerTests.foreignID) == true })
        let pair = try await network.run(["lyre", "pair", "Decoy"])
        #expect(pair.status != 0 && pair.stderr.contains("answered as another receiver (\(id)); refusing to pair"), "\(pair.stderr)")
        #expect(!pair.stderr.contains("PIN shown"), "\(pair.stderr)")
    }

    /// pairing.md §3 and §5: `lyre pair --host HOST:PORT` pairs without mDNS, taking the key as it comes, and
    /// `lyre pair --list` prints its fingerprint (the one the receiver advertises) for the user to compare.
    /// §6.5: a sender unpaired at the receiver while it plays has its session ended, is told why, and is refused after.
    @Test func pairingByAddressAndUnpairingMidSong() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        let pair = try await Self.pair(receiver, target: ["--host", "127.0.0.1:7750"], shownBy: "'127.0.0.1:7750'")
        #expect(pair.status == 0 && pair.stdout.contains("paired with 'Kitchen'"), "lyre pair: \(pair.stdout) \(pair.stderr)")
        let devices = try await network.run(["lyre", "devices", "--json", "--timeout", "3"])
        let found = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]] ?? []
        let advertised = try #require(found.first { $0["name"] as? String == "Kitchen" }, "\(devices.stdout)")
        let fingerprint = try #require(advertised["keyFingerprint"] as? String)
        let id = try #require(advertised["id"] as? String)
        let listed = try await network.run(["lyre", "pair", "--list"])
        #expect(listed.stdout.contains("Kitchen  \(id)  key \(fingerprint)"), "\(listed.stdout)")

        // Paired, so encrypted; unpaired at the receiver 2 s into a 20 s song, the session ends there and then
        // (pairing.md §6.5): the sender is told why, and stops saying how to play there again.
        let song = try await StreamingTests.sweep(network, rate: 48000, seconds: 20)
        let play = try network.spawn(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(await eventually { receiver.process.stderr.contains("TLS and SRTP") }, "\(receiver.process.stderr)")
        try await Task.sleep(for: .seconds(2))
        let unpaired = try await receiver.remote(["unpair", Self.senderName])
        #expect(unpaired.status == 0, "\(unpaired.stdout) \(unpaired.stderr)")
        try await play.waitForExit(timeout: 15)
        #expect(play.status == 1 && play.stderr.contains("lyre: stopped: 'Kitchen' unpaired this sender; lyre pair 'Kitchen' to play there again"),
                "lyre play: \(play.status) \(play.stderr)")
        #expect(receiver.process.stderr.components(separatedBy: " ended: ").count == 2 && receiver.process.stderr.contains("ended: unpaired"),
                "\(receiver.process.stderr)")
        #expect(try await receiver.remote(["paired"]).stdout.contains("no paired senders"))
        // And it is refused until it pairs again.
        let again = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"], timeout: 30)
        #expect(again.status != 0 && again.stderr.contains("not paired: this receiver plays only paired senders"), "\(again.stderr)")
    }

    /// A sender's name is the sender's to choose, and is printed escaped: a newline in it cannot forge a log
    /// line (a fake PIN) beside the real one, and `lyre remote pairing` shows it on one line too.
    @Test func aSendersNameCannotForgeALogLine() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        let pair = try network.spawn(["lyre", "pair", "Kitchen", "--name", "x\nforged: PIN 000000"], input: true)
        var pin: String?
        #expect(try await eventually(timeout: 15) {
            pin = try await receiver.pin()
            return pin != nil
        }, "\(pair.stderr) \(receiver.process.stderr)")
        pair.signal(SIGTERM)
        let lines = receiver.process.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("pairing with 'x\\nforged: PIN 000000' at ") && $0.contains("PIN \(pin ?? "?")") },
                "\(receiver.process.stderr)")
        #expect(!lines.contains { $0.hasPrefix("forged") }, "\(receiver.process.stderr)")
        let shown = try await receiver.remote(["pairing"])
        #expect(!shown.stdout.contains("\nforged"), "\(shown.stdout)")
    }

    @Test func fiveWrongPINsLockPairing() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        var receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        for attempt in 1...5 {
            // A wrong PIN: the one shown, with its last digit changed.
            let pair = try await Self.pair(receiver) { pin in String(pin.dropLast()) + (pin.last == "0" ? "1" : "0") }
            #expect(pair.status != 0, "attempt \(attempt) paired with a wrong PIN")
            // One line: the prompt, then the error after it.
            #expect(pair.stderr.contains("wrong PIN") && pair.stderr.split(separator: "\n").count == 1, "attempt \(attempt): \(pair.stderr)")
        }
        // A restart does not forget the lockout (it is kept in the state directory).
        try await receiver.restart()
        // The sixth is refused before any PIN is shown, with when to try again.
        let locked = try await network.run(["lyre", "pair", "Kitchen"])
        #expect(locked.status != 0)
        let wait = locked.stderr.firstMatch(of: /\(in (\d+) s\)/).flatMap { Int($0.1) }
        #expect(locked.stderr.contains("locked after 5 wrong PINs") && (50...60).contains(wait ?? 0), "\(locked.stderr)")
        #expect(try await receiver.pin() == nil)
        #expect(try await network.run(["lyre", "pair", "--list"]).stdout.contains("no paired receivers"))
        #expect(try await receiver.remote(["paired"]).stdout.contains("no paired senders"))
    }

    /// A sender written from pairing.md alone (Tools/peers/pair-peer.py: CPace computed there with libsodium's
    /// ristretto255 and Python's hashlib) pairs with lyred: the receiver's tag equals the one computed from the
    /// spec's inputs (PRS, CI, sid, ADa, ADb, ISK and the tags' labels), so those are what §2 says and not only
    /// what both Lyre ends share. The refusals of §3 and the TLS rules of §6.1 and §6.3 hold for it too.
    @Test func aSenderWrittenFromTheSpecPairsAndIsHeldToIt() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        let peer = try await network.shell(
            "python3 \(TestNetwork.tools)/peers/pair-peer.py 127.0.0.1 7750 --name 'Spec Sender' "
                + "--pin-command '\(TestNetwork.binaries)/lyre remote --socket \(receiver.socket) pairing --json'", timeout: 90)
        let report = try #require(try? JSONSerialization.jsonObject(with: Data(peer.stdout.utf8)) as? [String: Any], "pair-peer.py: \(peer.stdout) \(peer.stderr)")
        func run(_ name: String) -> [String: Any] { report[name] as? [String: Any] ?? [:] }
        func status(_ name: String, _ key: String) -> Int? { run(name)[key] as? Int }

        // §3: a share that is not a valid element (the identity, a non-canonical encoding) is 400.
        for name in ["invalid_share", "noncanonical"] {
            #expect(status(name, "start") == 200 && status(name, "exchange") == 400, "\(name): \(run(name))")
        }
        // §2, §3: with a wrong PIN the receiver's tag does not match, and the confirm is 403.
        #expect(run("wrong_pin")["tag_b_matches"] as? Bool == false && status("wrong_pin", "confirm") == 403, "\(run("wrong_pin"))")
        // §2: with the PIN, the tag computed from the spec is the receiver's, and the receiver keeps the sender.
        #expect(run("pair")["tag_b_matches"] as? Bool == true && status("pair", "confirm") == 200, "\(run("pair"))")
        let sender = report["sender"] as? [String: Any] ?? [:]
        let paired = try await receiver.remote(["paired"]).stdout
        #expect(paired.contains(sender["id"] as? String ?? "-") && paired.contains("Spec Sender"), "\(paired)")

        // §6.1: TLS 1.3 with a self-signed Ed25519 certificate over the paired key; the receiver proves the key
        // it paired with; a session may be announced under `paired` access.
        #expect(run("tls_paired")["version"] as? String == "TLSv1.3", "\(run("tls_paired"))")
        #expect(run("tls_paired")["server_key_is_paired"] as? Bool == true, "\(run("tls_paired"))")
        #expect(status("tls_paired", "options") == 200 && status("tls_paired", "announce") == 200, "\(run("tls_paired"))")
        // §6.3: another SRTP suite is 415.
        #expect(status("other_suite", "announce") == 415, "\(run("other_suite"))")
        // §6.1: no dates, names or issuers are checked: the paired key in a certificate that expired in 2000 plays.
        #expect(status("expired", "announce") == 200, "\(run("expired"))")
        // Another key is TLS all the same, and not paired.
        #expect(status("unpaired", "options") == 200 && status("unpaired", "announce") == 403, "\(run("unpaired"))")
        // §6.1: TLS 1.3 only, Ed25519 only: TLS 1.2 and an ECDSA certificate get no answer at all.
        for name in ["tls12", "ecdsa"] {
            #expect(run(name)["handshake"] as? String == "failed" && status(name, "options") == nil, "\(name): \(run(name))")
        }
    }

    /// A receiver as installed (no --access: paired is the default): an unpaired sender is refused with one
    /// line that says how to pair, and nothing plays; once paired, it plays over TLS, and a capture of the RTSP
    /// connection shows neither the title nor any plaintext RTSP. Another device under the receiver's name and
    /// id, with another key, gets nothing.
    @Test func onlyPairedSendersPlayAndTheirControlIsEncrypted() async throws {
        guard TestNetwork.which("tcpdump") != nil else { throw TestNetworkError("tcpdump is missing: run Tools/test, which installs it") }
        let network = try TestNetwork()
        defer { network.close() }
        var receiver = try await Receiver(network: network, access: nil)
        await receiver.waitUntilAdvertised()
        let song = network.scratch.appendingPathComponent("song.wav").path
        let made = try await network.run(["python3", MultiRoomTests.audioTool, "sweep", song, "--rate", "44100", "--seconds", "2"])
        #expect(made.status == 0, "\(made.stderr)")

        let refused = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && refused.stderr.contains("not paired") && refused.stderr.contains("lyre pair Kitchen"), "\(refused.stderr)")
        #expect(receiver.process.stderr.contains("refused 'lyre"), "\(receiver.process.stderr)")
        #expect(!receiver.process.stderr.contains("session from"), "an unpaired sender got a session: \(receiver.process.stderr)")

        #expect(try await Self.pair(receiver).status == 0)
        // A paired session, captured (tcpdump) while an attacker on the network replays 5 of its packets and
        // sends 5 altered ones (Tools/peers/srtp-inject.py): the receiver drops and counts each, and plays on.
        let long = network.scratch.appendingPathComponent("long.wav").path
        #expect(try await network.run(["python3", MultiRoomTests.audioTool, "sweep", long, "--rate", "44100", "--seconds", "4"]).status == 0)
        let first = try await Self.capturedSession(network, receiver, song: long, inject: true)
        let stats = try #require(receiver.process.stderr.firstMatch(of: /stats: received=(\d+) .* concealed=(\d+) .* replayed=(\d+) unauthentic=(\d+)/),
                                 "\(receiver.process.stderr)")
        #expect(Int(stats.1)! >= 195 && Int(stats.2)! == 0, "the session played whole: \(stats.0)")
        #expect(Int(stats.3)! == 5 && Int(stats.4)! == 5, "replayed and altered packets dropped and counted: \(stats.0)")
        #expect(receiver.process.stderr.contains("Secret Title XYZZY"), "the title reached the receiver")
        #expect(receiver.process.stderr.contains("TLS and SRTP"))
        // Neither the title nor any plaintext RTSP crosses the network.
        // "LYRE" names Lyre's own RTCP reports, both ways (streaming.md §4): SRTCP hides it.
        for plaintext in ["Secret Title", "RTSP/1.0", "ANNOUNCE", "SETUP", "opus/48000", "Lyre-", "LYRE"] {
            #expect(first.bytes.range(of: Data(plaintext.utf8)) == nil, "'\(plaintext)' is in the clear on the network")
        }
        // Nor does the audio: Opus encodes the same input to the same packets, so in clear RTP two plays of one
        // file share their payloads; as SRTP, under a fresh key each time, they share none.
        let second = try await Self.capturedSession(network, receiver, song: long, inject: false)
        #expect(first.payloads.count >= 150 && second.payloads.count >= 150, "\(first.payloads.count), \(second.payloads.count)")
        #expect(Set(first.payloads).isDisjoint(with: second.payloads), "the same RTP payload went out twice")
        // pairing.md §6.3: FEC packets are protected too. At 20 ms of latency a parity packet follows every two
        // (streaming.md §4.3); in the clear each one's FEC header starts with a 0 byte, encrypted about 1 in 256.
        let fec = try await Self.capturedSession(network, receiver, song: long, inject: false, extra: ["--latency", "20"])
        #expect(fec.fec >= 100 && fec.fecClear * 20 < fec.fec, "FEC packets \(fec.fec), of them starting as in the clear \(fec.fecClear)")
        // SRTCP goes both ways under one master key; the two ends' SSRCs differ, so their keystreams do too.
        let directions = Array(first.rtcp.values.map(Set.init))
        #expect(directions.count == 2 && directions[0].isDisjoint(with: directions[1]), "SRTCP's SSRCs by port: \(first.rtcp)")

        // Another receiver takes Kitchen's name, id and port, with another key: the sender sends it nothing,
        // whether it checks the advertised fingerprint (by name) or only the TLS handshake (by address).
        let impostor = network.scratch.appendingPathComponent("impostor.state").path
        try FileManager.default.createDirectory(atPath: impostor, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: receiver.state + "/device-id", toPath: impostor + "/device-id")
        let receiverID = try String(contentsOfFile: receiver.state + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try await receiver.restart(state: impostor)
        for target in [["--to", "Kitchen"], ["--host", "127.0.0.1:7750"]] {
            let fooled = try await network.run(["lyre", "play", song, "--group-socket", "off"] + target)
            #expect(fooled.status != 0)
            #expect(fooled.stderr.contains("not the one paired with") && fooled.stderr.split(separator: "\n").count == 1,
                    "\(target): \(fooled.stderr)")
            // It says why (another device may have taken the name and id) and how to pair again (pairing.md §6.1).
            let again = target[0] == "--to" ? "lyre pair --forget 'Kitchen', then lyre pair 'Kitchen'"
                : "lyre pair --forget \(receiverID), then lyre pair --host 127.0.0.1:7750"
            #expect(fooled.stderr.contains("another device may have taken its name and id") && fooled.stderr.contains(again),
                    "\(target): \(fooled.stderr)")
        }
        #expect(!receiver.process.stderr.contains("session from"), "the impostor got a session: \(receiver.process.stderr)")
    }

    /// A name the user paired reaches only the paired key (pairing.md §6). Paired with Kitchen, then another
    /// receiver advertises Kitchen with --access open: while the real one is away, `lyre play --to Kitchen`
    /// refuses it with one line naming both and sends it nothing; with the real one back as `Kitchen (2)`, the
    /// name plays on the real one, encrypted; with neither there, it says the paired one is not on the network.
    /// A plain session asked for by the other's id plays, and says so in its log line and in `lyre group`.
    @Test func aPairedNamePlaysOnlyOnThePairedReceiver() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        var receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        #expect(try await Self.pair(receiver).status == 0)
        let pairedID = try String(contentsOfFile: receiver.state + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let list = try await network.run(["lyre", "pair", "--list"])
        let pairedKey = try #require(list.stdout.firstMatch(of: /key ([0-9a-f]{16})/).map { String($0.1) }, "lyre pair --list: \(list.stdout)")
        let song = network.scratch.appendingPathComponent("song.wav").path
        #expect(try await network.run(["python3", MultiRoomTests.audioTool, "sweep", song, "--rate", "44100", "--seconds", "3"]).status == 0)

        // The real Kitchen goes away; another device takes its name, open to anyone.
        receiver.process.signal(SIGTERM)
        try await receiver.process.waitForExit(timeout: 10)
        let otherState = network.scratch.appendingPathComponent("other.state").path
        let other = try network.spawn(["lyred", "--access", "open", "--name", "Kitchen", "--port", "7751", "--state-dir", otherState,
                                       "--output", "null", "--control-socket", network.scratch.appendingPathComponent("other.sock").path,
                                       "--mpris", "off", "--log-level", "info"], name: "lyred-other")
        #expect(await eventually { other.stderr.contains("advertised as 'Kitchen'") }, "\(other.stderr)")
        let otherID = try String(contentsOfFile: otherState + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        // mDNS keeps a withdrawn record for a second (RFC 6762 §10.1): wait until the network shows only the other.
        #expect(try await eventually { try await Self.advertised(network) == [otherID] }, "the other device alone is not seen")
        let refused = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(refused.status != 0)
        #expect(refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains(otherID) && refused.stderr.contains(pairedID)
                && refused.stderr.contains("is not the 'Kitchen' paired with"), "\(refused.stderr)")
        // …and both key fingerprints: the paired one (as `lyre pair --list` shows it) and the other's (its `pk`).
        let otherKey = try #require(try await DiscoveryPeerTests.devicesJSON(network).first { $0["id"] as? String == otherID }
            .flatMap { ($0["txt"] as? [String: String])?["pk"] }, "the other device's pk")
        #expect(pairedKey != otherKey && refused.stderr.contains(pairedKey) && refused.stderr.contains(otherKey), "\(refused.stderr)")

        // The real one comes back, as Kitchen (2): the name the user paired plays there, encrypted.
        receiver.process = try Receiver.start(network, name: "Kitchen", state: receiver.state, socket: receiver.socket, access: "paired")
        #expect(await eventually { receiver.process.stderr.contains("advertised as 'Kitchen (2)'") }, "\(receiver.process.stderr)")
        // `lyre group` shows the room's security (pairing.md §6.1): `tls+srtp`, `"encrypted": true`.
        let pairedGroup = network.scratch.appendingPathComponent("paired-group.sock").path
        let played = try network.spawn(["lyre", "play", song, "--to", "Kitchen", "--group-socket", pairedGroup])
        #expect(await eventually { receiver.process.stderr.contains("TLS and SRTP") }, "\(receiver.process.stderr)")
        let secured = try await network.run(["lyre", "group", "--socket", pairedGroup])
        let securedJSON = try await network.run(["lyre", "group", "--json", "--socket", pairedGroup])
        try await played.waitForExit(timeout: 20)
        #expect(played.status == 0, "\(played.stderr)")
        #expect(!played.stderr.contains("unencrypted"), "\(played.stderr)")
        #expect(secured.stdout.split(separator: "\n").contains { $0.hasPrefix("Kitchen") && $0.contains(" tls+srtp ") },
                "\(secured.stdout) \(secured.stderr)")
        let securedRooms = (try? JSONSerialization.jsonObject(with: Data(securedJSON.stdout.utf8)) as? [String: Any])?["rooms"] as? [[String: Any]]
        #expect(securedRooms?.count == 1 && securedRooms?.first?["encrypted"] as? Bool == true, "\(securedJSON.stdout)")
        #expect(!other.stderr.contains("session from"), "the other device got a session: \(other.stderr)")

        // Asked for by its own id, the other device plays in plain: said at the start, and in lyre group.
        let groupSocket = network.scratch.appendingPathComponent("group.sock").path
        let plain = try network.spawn(["lyre", "play", song, "--to", otherID, "--group-socket", groupSocket])
        #expect(await eventually { other.stderr.contains("session from") }, "\(other.stderr)")
        // lyre play opens its group socket once its rooms are set up, a moment after the receiver logs the session.
        #expect(await eventually { FileManager.default.fileExists(atPath: groupSocket) }, "\(plain.stderr)")
        let group = try await network.run(["lyre", "group", "--socket", groupSocket])
        #expect(group.stdout.contains("SECURITY") && group.stdout.contains("plain"), "\(group.stdout) \(group.stderr)")
        let plainJSON = try await network.run(["lyre", "group", "--json", "--socket", groupSocket])
        let plainRooms = (try? JSONSerialization.jsonObject(with: Data(plainJSON.stdout.utf8)) as? [String: Any])?["rooms"] as? [[String: Any]]
        #expect(plainRooms?.first?["encrypted"] as? Bool == false, "\(plainJSON.stdout)")
        try await plain.waitForExit(timeout: 20)
        #expect(plain.status == 0 && plain.stderr.contains("not paired: audio, now playing and artwork go unencrypted"), "\(plain.stderr)")
        // On a terminal the status line says so as it plays (pairing.md §6.1): `▶ …  unencrypted`.
        let tty = try await network.run(["script", "-qec", "\(TestNetwork.binaries)/lyre play '\(song)' --to \(otherID) --group-socket off", "/dev/null"], timeout: 30)
        let statusLines = tty.stdout.split(whereSeparator: \.isNewline).filter { $0.contains("▶") }
        #expect(tty.status == 0 && !statusLines.isEmpty && statusLines.allSatisfy { $0.contains("  unencrypted") },
                "status lines: \(statusLines) (\(tty.stdout.suffix(500)))")

        // Neither there: the paired one is said to be missing, and nothing plays.
        for process in [receiver.process, other] { process.signal(SIGTERM) }
        for process in [receiver.process, other] { try await process.waitForExit(timeout: 10) }
        #expect(try await eventually { try await Self.advertised(network).isEmpty })
        let missing = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off", "--timeout", "2"])
        #expect(missing.status != 0 && missing.stderr.contains("is not on the network") && missing.stderr.contains(pairedID), "\(missing.stderr)")
    }

    /// A paired receiver restarted mid-song (as `systemctl restart lyred` does: SIGTERM, then started again)
    /// comes back into the playback by itself, paired and encrypted again (issue 27); the song plays on to its
    /// end. A receiver that comes back at the same address under the same id with another key is never rejoined:
    /// the sender keeps waiting and sends it nothing.
    @Test func aPairedReceiverRestartedMidSongComesBackEncrypted() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        var receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        #expect(try await Self.pair(receiver).status == 0)
        let song = network.scratch.appendingPathComponent("song.wav").path
        #expect(try await network.run(["python3", MultiRoomTests.audioTool, "sweep", song, "--rate", "44100", "--seconds", "10"]).status == 0)
        let play = try network.spawn(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(await eventually { receiver.process.stderr.contains("now playing:") }, "\(receiver.process.stderr)")
        #expect(receiver.process.stderr.contains("TLS and SRTP"), "\(receiver.process.stderr)")
        try await Task.sleep(for: .seconds(2))
        try await receiver.restart()
        #expect(await eventually(timeout: 10) { play.stderr.contains("'Kitchen' is back") }, "lyre play: \(play.stderr)")
        #expect(await eventually { receiver.process.stderr.contains("now playing:") }, "\(receiver.process.stderr)")
        #expect(receiver.process.stderr.contains("TLS and SRTP"), "not encrypted after the restart: \(receiver.process.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0 && play.stderr.contains("paused: 'Kitchen' is no longer available"), "lyre play: \(play.stderr)")
        #expect(!play.stderr.contains("unencrypted"), "lyre play: \(play.stderr)")
        #expect(receiver.process.stderr.contains("ended: teardown"), "the song did not play to its end: \(receiver.process.stderr)")

        // Back with another key (its state made anew, its id kept): never rejoined.
        let sessions = receiver.process.stderr.components(separatedBy: "TLS and SRTP").count
        let again = try network.spawn(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(await eventually { receiver.process.stderr.components(separatedBy: "TLS and SRTP").count > sessions }, "\(receiver.process.stderr)")
        try await Task.sleep(for: .seconds(1))
        let other = network.scratch.appendingPathComponent("other.state").path
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: receiver.state + "/device-id", toPath: other + "/device-id")
        try await receiver.restart(state: other)
        #expect(await eventually { again.stderr.contains("paused: 'Kitchen' is no longer available") }, "lyre play: \(again.stderr)")
        try await Task.sleep(for: .seconds(3))
        #expect(again.isRunning && !again.stderr.contains("'Kitchen' is back"), "lyre play: \(again.stderr)")
        #expect(!receiver.process.stderr.contains("session from"), "the receiver with another key got a session: \(receiver.process.stderr)")
        again.signal(SIGINT)
        try await again.waitForExit(timeout: 5)
    }

    /// A third host that sees the timing requests forges replies from the sender's address and port, claiming
    /// its clock is 50 ms ahead (Tools/peers/timing-forger.py); nftables drops the real replies, so the forger
    /// need not win a race. A plain session's clock follows the forgery (the forger works); a paired session's
    /// does not: its receiver drops every forged reply, whose tag it cannot verify, and counts it, and the
    /// sender drops and counts the forger's requests.
    @Test func forgedTimingRepliesMoveOnlyAnUnauthenticatedClock() async throws {
        guard TestNetwork.which("nft") != nil else { throw TestNetworkError("nft is missing: run Tools/test, which installs nftables") }
        let network = try TestNetwork()
        defer { network.close() }
        let receiver = try await Receiver(network: network, access: "open")
        await receiver.waitUntilAdvertised()
        let song = network.scratch.appendingPathComponent("song.wav").path
        #expect(try await network.run(["python3", MultiRoomTests.audioTool, "sweep", song, "--rate", "44100", "--seconds", "3"]).status == 0)
        let firewall = try await network.shell("""
            nft add table inet lyretiming && \
            nft add chain inet lyretiming out '{ type filter hook output priority 0; }' && \
            nft add rule inet lyretiming out meta l4proto udp @th,64,32 0x4c595254 @th,104,8 0x2 meta mark != 76 counter drop
            """)
        #expect(firewall.status == 0, "\(firewall.stderr)")
        let forger = try network.spawn(["python3", TestNetwork.tools + "/peers/timing-forger.py", "--shift-ms", "50", "--seconds", "40"])
        #expect(await eventually { forger.stdout.contains("listening") }, "\(forger.stderr)")

        func sessionOffset(_ index: Int) async throws -> (offset: Int?, line: String) {
            #expect(await eventually(timeout: 15) { receiver.process.stderr.matches(of: /stats: received=/).count > index })
            let line = String(receiver.process.stderr.matches(of: /stats: received=[^\n]*/)[index].output)
            return (line.firstMatch(of: /offset-us=(-?\d+)/).flatMap { Int($0.1) }, line)
        }

        let plain = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off"])
        #expect(plain.status == 0, "\(plain.stderr)")
        let moved = try await sessionOffset(0)
        #expect((40_000...60_000).contains(moved.offset ?? 0), "the forgery should move a plain session's clock: \(moved.line)")

        #expect(try await Self.pair(receiver).status == 0)
        let before = try await receiver.remote(["stats"]).stdout.firstMatch(of: /dropped-timing=(\d+)/).flatMap { Int($0.1) } ?? -1
        let paired = try await network.run(["lyre", "play", song, "--to", "Kitchen", "--group-socket", "off", "--log-level", "info"])
        #expect(paired.status == 0, "\(paired.stderr)")
        // The forger's requests to the sender, under a tag it cannot make, are dropped and counted there too.
        let droppedAtSender = paired.stderr.firstMatch(of: /dropped (\d+) timing requests that did not verify/).flatMap { Int($0.1) } ?? 0
        #expect(droppedAtSender >= 3, "\(paired.stderr)")
        let kept = try await sessionOffset(1)
        #expect(kept.line.contains("received="))
        #expect(kept.offset.map { abs($0) < 5_000 } ?? true, "a forged reply moved a paired session's clock: \(kept.line)")
        let after = try await receiver.remote(["stats"]).stdout.firstMatch(of: /dropped-timing=(\d+)/).flatMap { Int($0.1) } ?? -1
        #expect(after - before >= 3, "the forged replies were dropped and counted: \(before) -> \(after)")
        #expect(receiver.process.stderr.contains("TLS and SRTP"))
    }
}
