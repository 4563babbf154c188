import Foundation
import Testing

/// Discovery against real peers nobody here wrote (avahi-browse, avahi-publish, python-zeroconf), each test
/// in its own isolated network.
@Suite(.serialized)
struct DiscoveryPeerTests {
    static let foreignID = "0123456789abcdef0123456789abcdef"

    /// `avahi-browse -rpt` lines for `_lyre._tcp` that are resolved (`=`), split into fields.
    static func browse(_ network: TestNetwork) async throws -> [[String]] {
        let out = try await network.run(["avahi-browse", "--resolve", "--parsable", "--terminate", "_lyre._tcp"])
        return out.lines.filter { $0.hasPrefix("=;") }.map {
            $0.split(separator: ";", omittingEmptySubsequences: false).map { unescape(String($0)) }
        }
    }

    /// avahi-browse --parsable escapes bytes as `\DDD` (decimal) and `\.`-style escapes.
    static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "\\"), i + 3 < utf8.count,
                let value = UInt8(String(decoding: utf8[(i + 1)...(i + 3)], as: UTF8.self))
            {
                bytes.append(value)
                i += 4
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The TXT strings of an avahi-browse parsable line: `"k=v" "k=v"`.
    static func txtStrings(_ field: String) -> [String] {
        field.split(separator: "\" \"").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
    }

    static func devicesJSON(_ network: TestNetwork, _ extra: [String] = []) async throws -> [[String: Any]] {
        let out = try await network.run(["lyre", "devices", "--json"] + extra)
        #expect(out.status == 0, "lyre devices failed: \(out.stderr)")
        return (try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]]) ?? []
    }

    static func waitForAdvertised(_ lyred: Spawned, name: String? = nil) async -> Bool {
        await eventually { lyred.stderr.contains(name.map { "advertised as '\($0)'" } ?? "advertised as") }
    }

    /// discovery.md §7: a one-shot listing ends when every resolver has answered, or after 3 s by default. A
    /// service avahi-publish puts on a host that nobody answers for (`ghost.local`) is never resolved, so the
    /// listing ends at its bound with what did resolve: a receiver whose name has dots (§1: any characters,
    /// dots included, in one DNS label).
    @Test func aOneShotListingEndsAtThreeSecondsWhenAResolverNeverAnswers() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try network.spawn(["lyred", "--name", "St. Mary's Hall v2.0", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await Self.waitForAdvertised(lyred, name: "St. Mary's Hall v2.0"), "\(lyred.stderr)")
        try network.spawn(["avahi-publish", "-s", "-H", "ghost.local", "Ghost", "_lyre._tcp", "7009", "v=1", "id=\(Self.foreignID)"])
        #expect(await eventually {
            ((try? await network.run(["avahi-browse", "--parsable", "--terminate", "_lyre._tcp"]))?.stdout ?? "").contains(";Ghost;")
        })
        let start = ContinuousClock.now
        let devices = try await Self.devicesJSON(network)
        let took = ContinuousClock.now - start
        #expect(devices.compactMap { $0["name"] as? String } == ["St. Mary's Hall v2.0"], "\(devices)")
        // Not before the bound; well before avahi's own resolver gives up (5 s).
        #expect(took >= .milliseconds(2900) && took < .milliseconds(4700), "lyre devices took \(took)")
    }

    /// discovery.md §8: `--mdns avahi` with no avahi-daemon running waits for one (rather than falling back to
    /// the embedded stack, as `auto` would), and advertises once it starts.
    @Test func mdnsAvahiWaitsForTheDaemonToStart() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        #expect(try await network.run([TestNetwork.tools + "/avahi-ctl", "stop"]).status == 0)
        let lyred = try network.spawn(["lyred", "--mdns", "avahi", "--name", "Porch", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await eventually { lyred.stderr.contains("avahi-daemon is not running yet; waiting for it") }, "\(lyred.stderr)")
        try await Task.sleep(for: .seconds(2))
        #expect(lyred.isRunning && !lyred.stderr.contains("advertised as") && !lyred.stderr.contains("embedded"), "\(lyred.stderr)")
        let start = try await network.run([TestNetwork.tools + "/avahi-ctl", "start"])
        #expect(start.status == 0, "avahi-ctl: \(start.stderr)")
        #expect(await Self.waitForAdvertised(lyred, name: "Porch"), "\(lyred.stderr)")
        #expect(await eventually { ((try? await Self.browse(network)) ?? []).contains { $0[3] == "Porch" } })
    }

    @Test("avahi-browse sees lyred's service and its documented TXT")
    func avahiBrowseSeesLyred() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try network.spawn(["lyred", "--name", "Living Room", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await Self.waitForAdvertised(lyred, name: "Living Room"))

        let lines = try await Self.browse(network)
        let line = try #require(lines.first { $0[3] == "Living Room" }, "avahi-browse output: \(lines)")
        #expect(line[4] == "_lyre._tcp")
        let txt = Self.txtStrings(line[9])
        let id = try await network.shell("cat /run/lyred/device-id").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.count == 32)
        // Canonical order and the documented keys (Protocol/discovery.md).
        #expect(txt.map { $0.split(separator: "=", maxSplits: 1).first.map(String.init) ?? "" }
            == ["v", "id", "md", "cn", "ft", "st", "ok", "vol", "pk"])
        #expect(txt.contains("v=1"))
        #expect(txt.contains("id=\(id)"))
        #expect(txt.contains("st=idle"))
        #expect(txt.contains("ok=speaker"))
        #expect(txt.contains("vol=0"))
        // lyred given no `--model` writes the default (discovery.md §3).
        #expect(txt.contains("md=Lyre Receiver"), "\(txt)")
        // The codecs it decodes and its features (discovery.md §3).
        #expect(txt.contains("cn=opus,l16") && txt.contains("ft=clock"), "\(txt)")
        // pk: the fingerprint of the key lyred keeps, private to its user: Python's cryptography (OpenSSL) derives
        // the public key from the stored seed, and hashlib hashes it.
        let mode = try await network.shell("stat -c %a /run/lyred/device-key").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(mode == "600", "device-key mode \(mode)")
        let derived = try await network.run(["python3", "-c", """
            import hashlib
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
            from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
            seed = open('/run/lyred/device-key', 'rb').read()
            public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            print(hashlib.sha256(public).hexdigest()[:16])
            """])
        let fingerprint = derived.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(fingerprint.count == 16 && txt.contains("pk=\(fingerprint)"), "pk in \(txt), derived \(fingerprint): \(derived.stderr)")
        #expect(Int(line[8]).map { $0 > 0 } == true, "SRV port: \(line[8])")
        // The advertised port is the one lyred really listens on.
        let listening = try await network.shell("cat /proc/net/tcp6 /proc/net/tcp 2>/dev/null | awk '$4 == \"0A\" {print $2}'")
        let port = String(format: "%04X", Int(line[8]) ?? 0)
        #expect(listening.lines.contains { $0.hasSuffix(":" + port) }, "nothing listens on \(line[8])")
    }

    @Test("a service published by avahi-publish with a valid TXT is listed; invalid ones do not disturb the listing")
    func foreignPublishersAppearAndInvalidOnesAreIgnored() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try network.spawn(["lyred", "--name", "Study", "--model", "Study Pi 4", "--port", "0", "--state-dir", "/run/lyred"])
        try network.spawn([
            "avahi-publish", "-s", "Garage", "_lyre._tcp", "7001", "v=1", "id=\(Self.foreignID)", "md=Pi",
            "cn=opus", "ft=", "st=playing", "sn=Alice", "ok=usb", "vol=-12.5",
        ])
        try network.spawn(["avahi-publish", "-s", "No Id", "_lyre._tcp", "7002", "v=1", "st=idle"])
        try network.spawn(["avahi-publish", "-s", "Future", "_lyre._tcp", "7003", "v=9", "id=fedcba9876543210fedcba9876543210"])
        try network.spawn(["avahi-publish", "-s", "Bad Id", "_lyre._tcp", "7004", "v=1", "id=../../etc/passwd"])
        try network.spawn(["avahi-publish", "-s", "Junk", "_lyre._tcp", "7005", "\u{1}\u{2}=\u{ff}", "v=1x", "id="])
        #expect(await Self.waitForAdvertised(lyred))
        #expect(await eventually { ((try? await Self.browse(network)) ?? []).count >= 6 } )

        let devices = try await Self.devicesJSON(network)
        let names = Set(devices.compactMap { $0["name"] as? String })
        #expect(names == ["Study", "Garage"], "listed: \(names)")
        let garage = try #require(devices.first { $0["name"] as? String == "Garage" })
        #expect(garage["id"] as? String == Self.foreignID)
        #expect(garage["port"] as? Int == 7001)
        #expect(garage["status"] as? String == "playing")
        #expect(garage["sender"] as? String == "Alice")
        #expect(garage["outputKind"] as? String == "usb")
        #expect(garage["volume"] as? Double == -12.5)
        #expect((garage["addresses"] as? [String])?.contains("127.0.0.1") == true)
        #expect((garage["txt"] as? [String: String])?["md"] == "Pi")
        // lyred writes `--model` as `md`.
        let study = try #require(devices.first { $0["name"] as? String == "Study" })
        #expect((study["txt"] as? [String: String])?["md"] == "Study Pi 4", "\(study)")
        // discovery.md §4: `lyre` logs each rejection at debug level (and at its default level, nothing).
        let debug = try await network.run(["lyre", "devices", "--json", "--log-level", "debug"])
        for name in ["No Id", "Future", "Bad Id", "Junk"] {
            #expect(debug.stderr.contains("debug") && debug.stderr.contains("ignoring '\(name)': "), "\(name): \(debug.stderr)")
        }
        let quiet = try await network.run(["lyre", "devices", "--json"])
        #expect(!quiet.stderr.contains("ignoring"), "\(quiet.stderr)")
    }

    /// discovery.md §6: `Kitchen` and `Kitchen (2)` to `Kitchen (100)` already registered with this avahi-daemon
    /// (100 avahi-publish clients): lyred renames itself 100 times in a row, fails, and exits with an error.
    @Test func aHundredNamesTakenLocallyEndLyredWithAnError() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        for name in ["Kitchen"] + (2...100).map({ "Kitchen (\($0))" }) {
            try network.spawn(["avahi-publish", "-s", name, "_lyre._tcp", "7001", "v=1"], name: "avahi-publish")
        }
        let registered = await eventually(timeout: 20) {
            let browse = try? await network.run(["avahi-browse", "-t", "-p", "-k", "_lyre._tcp"])
            return Set((browse?.stdout ?? "").split(separator: "\n").compactMap { $0.split(separator: ";").dropFirst(3).first }).count == 100
        }
        #expect(registered, "the 100 names were not all registered")
        let lyred = try await network.run(["lyred", "--name", "Kitchen", "--port", "0", "--state-dir", "/run/lyred", "--output", "null",
                                           "--control-socket", "off", "--mpris", "off"], timeout: 30)
        #expect(lyred.status != 0, "lyred went on: \(lyred.stderr.suffix(400))")
        #expect(lyred.stderr.contains("renaming to 'Kitchen (100)'") && lyred.stderr.contains("no free service name after 100 tries"),
                "\(lyred.stderr.suffix(600))")
    }

    /// discovery.md §6 and §7: a receiver that vanishes without a goodbye (SIGKILL, on a host of its own with
    /// the embedded responder) stays listed, as nothing said it left, until its records leave the watcher's cache:
    /// their TTLs are long, so here by RFC 6762 §10.5, as other hosts ask for the service and nobody answers (a
    /// one-shot `lyre devices` on a third host, over and over); then `lyre devices --watch` says deviceUnavailable.
    @Test func aReceiverThatVanishesWithoutAGoodbyeIsDroppedWhenItsRecordsExpire() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let (receiverHost, watcherHost, askerHost) = (try await network.addHost(2), try await network.addHost(3), try await network.addHost(4))
        let mdns = ["--mdns", "embedded", "--interface", "eth0"]
        let lyred = try network.spawn(["lyred", "--name", "Porch", "--port", "7000", "--state-dir", network.scratch.appendingPathComponent("porch").path,
                                       "--output", "null", "--control-socket", "off", "--mpris", "off"] + mdns, on: receiverHost)
        #expect(await Self.waitForAdvertised(lyred))
        let watch = try network.spawn(["lyre", "devices", "--watch"] + mdns, on: watcherHost)
        #expect(await eventually { watch.stdout.contains("deviceAvailable  Porch") }, "\(watch.stdout) \(watch.stderr)")
        lyred.signal(SIGKILL)
        try await lyred.waitForExit(timeout: 10)
        // No goodbye: still listed well after a goodbye would have dropped it (a second, RFC 6762 §10.1).
        try await Task.sleep(for: .seconds(2))
        #expect(!watch.stdout.contains("deviceUnavailable"), "dropped without anyone asking: \(watch.stdout)")
        var asked = 0
        while asked < 20, !watch.stdout.contains("deviceUnavailable  Porch") {
            _ = try await network.run(["lyre", "devices", "--timeout", "1"] + mdns, on: askerHost)
            asked += 1
        }
        #expect(watch.stdout.contains("deviceUnavailable  Porch"), "still listed after \(asked) unanswered queries: \(watch.stdout)")
        print("dropped after \(asked) one-shot listings on another host")
        watch.signal(SIGINT)
    }

    @Test("the embedded backend is found by the namespace's avahi-daemon and by python-zeroconf")
    func embeddedIsFoundByAvahiAndZeroconf() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try network.spawn([
            "lyred", "--mdns", "embedded", "--name", "Attic", "--port", "0", "--state-dir", "/run/lyred",
        ])
        #expect(await Self.waitForAdvertised(lyred, name: "Attic"))
        #expect(lyred.stderr.contains("via embedded mDNS"))
        let id = try await network.shell("cat /run/lyred/device-id").stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let lines = try await Self.browse(network)
        let line = try #require(lines.first { $0[3] == "Attic" }, "avahi-browse output: \(lines)")
        #expect(Self.txtStrings(line[9]).contains("id=\(id)"))

        let zeroconf = try await network.run([TestNetwork.tools + "/peers/zeroconf-browse.py", "3"], timeout: 30)
        #expect(zeroconf.status == 0, "python-zeroconf failed: \(zeroconf.stderr)")
        let entry = try #require(zeroconf.jsonLines.first { $0["name"] as? String == "Attic" }, "zeroconf saw: \(zeroconf.stdout)")
        let txt = try #require(entry["txt"] as? [String: String])
        #expect(txt["id"] == id)
        #expect(txt["v"] == "1")
        #expect(txt["st"] == "idle")
        // discovery.md §1: the SRV target is the host name as the stack publishes it, HOST.local, for a receiver on
        // avahi and for an embedded responder beside it: the two publish the same addresses for it, which is no
        // conflict (RFC 6762 §8.2), so neither renames. Both peers read it so.
        let host = try await network.run(["hostname"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line[6] == "\(host).local" && entry["server"] as? String == "\(host).local.", "avahi: \(line[6]), zeroconf: \(entry)")
        let onAvahi = try network.spawn(["lyred", "--mdns", "avahi", "--name", "Cellar", "--port", "0", "--state-dir", "/run/cellar"])
        #expect(await Self.waitForAdvertised(onAvahi, name: "Cellar"))
        let cellar = try #require(try await Self.browse(network).first { $0[3] == "Cellar" })
        #expect(cellar[6] == "\(host).local", "\(cellar)")

        // And our own embedded browser finds it too.
        let devices = try await Self.devicesJSON(network, ["--mdns", "embedded"])
        #expect(devices.contains { $0["id"] as? String == id })
    }

    @Test("a name conflict renames Kitchen to Kitchen (2) and keeps the id", arguments: ["avahi", "embedded"])
    func nameConflictRenames(mode: String) async throws {
        let network = try TestNetwork()
        defer { network.close() }
        // Someone else holds "Kitchen" already.
        // (Through python3, which clears the signal mask the test runner's children inherit, so that avahi-publish
        // takes the SIGTERM below and says goodbye.)
        let holder = try network.spawn(["python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])",
                                        "avahi-publish", "-s", "Kitchen", "_lyre._tcp", "7001", "v=1", "id=\(Self.foreignID)"])
        #expect(await eventually { ((try? await Self.browse(network)) ?? []).count == 1 })

        let lyred = try network.spawn([
            "lyred", "--mdns", mode, "--name", "Kitchen", "--port", "0", "--state-dir", "/run/lyred",
        ])
        #expect(await Self.waitForAdvertised(lyred, name: "Kitchen (2)"), "lyred log: \(lyred.stderr)")
        #expect(lyred.stderr.contains("'Kitchen' is taken"))
        let id = try await network.shell("cat /run/lyred/device-id").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(await eventually(timeout: 5) {
            let devices = (try? await Self.devicesJSON(network)) ?? []
            return devices.contains { $0["name"] as? String == "Kitchen (2)" && $0["id"] as? String == id }
                && devices.contains { $0["name"] as? String == "Kitchen" && $0["id"] as? String == Self.foreignID }
        })
        // discovery.md §6: the rename is not stored. The other one gone, the next start takes "Kitchen" again.
        holder.signal(SIGTERM)
        let gone = await eventually { !((try? await Self.browse(network)) ?? []).contains { $0[3] == "Kitchen" } }
        let listed = (try? await Self.browse(network)) ?? []
        #expect(gone, "\(listed) \(holder.stderr) \(holder.isRunning)")
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 10)
        let again = try network.spawn(["lyred", "--mdns", mode, "--name", "Kitchen", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await Self.waitForAdvertised(again, name: "Kitchen"), "lyred log: \(again.stderr)")
        #expect(!again.stderr.contains("is taken"), "\(again.stderr)")
    }

    /// discovery.md §6: a conflict found on the network, while probing (RFC 6762 §9), renames as one found locally
    /// does. The name is held by a responder of its own (python-zeroconf, which probed and announced it first), so
    /// the receiver's stack does not hold it and the add succeeds: the entry group reports the collision, and the
    /// receiver comes up as `Kitchen (2)` with both listed. (The test above holds the name on the same stack.)
    @Test("a name held by another responder on the network renames Kitchen to Kitchen (2) after probing", arguments: ["avahi", "embedded"])
    func aNameHeldOnTheNetworkRenames(mode: String) async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let holder = try network.spawn([TestNetwork.tools + "/peers/zeroconf-publish.py", "Kitchen", "7001", "v=1", "id=\(Self.foreignID)"])
        #expect(await eventually { holder.stdout.contains("registered Kitchen") }, "\(holder.stderr)")
        let lyred = try network.spawn(["lyred", "--mdns", mode, "--name", "Kitchen", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await Self.waitForAdvertised(lyred, name: "Kitchen (2)"), "lyred log: \(lyred.stderr)")
        #expect(lyred.stderr.contains("service name 'Kitchen' collided on the network; renaming to 'Kitchen (2)'"), "\(lyred.stderr)")
        #expect(!lyred.stderr.contains("is taken; renaming"), "found locally, not on the network: \(lyred.stderr)")
        let id = try await network.shell("cat /run/lyred/device-id").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(await eventually(timeout: 5) {
            let devices = (try? await Self.devicesJSON(network)) ?? []
            return devices.contains { $0["name"] as? String == "Kitchen (2)" && $0["id"] as? String == id }
                && devices.contains { $0["name"] as? String == "Kitchen" && $0["id"] as? String == Self.foreignID }
        })
        #expect(holder.isRunning, "\(holder.stderr)")
    }

    /// avahi-daemon restarted while a file plays (issue 27): lyred re-registers without restarting and
    /// advertises again at once, the picker (`lyre devices --watch`, reconnected to avahi too) never reports it
    /// gone and still lists it, and the playing session is not touched: the file comes out whole, first sample
    /// to last.
    @Test func avahiRestartedWhileAFilePlaysLeavesThePlaybackAlone() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let output = network.scratch.appendingPathComponent("porch.wav").path
        let lyred = try network.spawn(["lyred", "--name", "Porch", "--port", "0", "--state-dir", "/run/lyred", "--output", "wav:\(output)",
                                       "--mpris", "off", "--log-level", "info"])
        #expect(await Self.waitForAdvertised(lyred))
        let watch = try network.spawn(["lyre", "devices", "--watch", "--json"])
        #expect(await eventually { watch.jsonLines.contains { $0["reason"] as? String == "deviceAvailable" } }, "watch: \(watch.stdout)")
        let song = try await StreamingTests.sweep(network, rate: 48000, seconds: 10, signal: "music")
        let play = try network.spawn(["lyre", "play", song, "--to", "Porch"])
        #expect(await eventually { lyred.stderr.contains("now playing:") }, "lyred: \(lyred.stderr)")
        try await Task.sleep(for: .seconds(2))
        let restart = try await network.run([TestNetwork.tools + "/avahi-ctl", "restart"])
        #expect(restart.status == 0, "avahi-ctl: \(restart.stderr)")
        let restarted = Date()
        let back = await eventually { ((try? await Self.browse(network)) ?? []).contains { $0[3] == "Porch" } }
        let seconds = Date().timeIntervalSince(restarted)
        #expect(back, "lyred log: \(lyred.stderr)")
        print("lyred advertised again \(String(format: "%.2f", seconds)) s after avahi-daemon was back")
        // Registration suspended and made again, logged, in the same process.
        #expect(lyred.stderr.contains("avahi-daemon is back") && lyred.isRunning, "lyred log: \(lyred.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        // The watcher reconnected too: the rest of the song on (about 7 s), it still lists Porch, without
        // having reported it gone.
        #expect(!watch.jsonLines.contains { $0["reason"] as? String == "deviceUnavailable" }, "watch: \(watch.stdout)")
        #expect(try await Self.devicesJSON(network).contains { $0["name"] as? String == "Porch" })
        #expect(lyred.stderr.components(separatedBy: "': opus, latency").count == 2, "one session: \(lyred.stderr)")
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 10)
        let comparison = try await StreamingTests.compare(network, reference: song, output: output)
        let (floor, edgeFloor) = try await StreamingTests.opusFloors(network, input: song)
        StreamingTests.expectSameAudio(comparison, floor: floor)
        StreamingTests.expectWhole(comparison, floor: edgeFloor)
    }

    @Test("SIGTERM or SIGINT withdraws the service: the watcher gets deviceUnavailable and lyred exits 0",
          arguments: ["avahi", "embedded"], [SIGTERM, SIGINT])
    func sigtermSendsDeviceUnavailable(mode: String, signal: Int32) async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let watch = try network.spawn(["lyre", "devices", "--watch", "--json"])
        // What goes on the wire about Hall, read by python-zeroconf's parser (Tools/peers/mdns-sniff.py).
        let sniff = try network.spawn(["python3", TestNetwork.tools + "/peers/mdns-sniff.py", "Hall._lyre._tcp.local.", "30"])
        #expect(await eventually { sniff.stdout.contains("listening") }, "mdns-sniff.py: \(sniff.stderr)")
        let lyred = try network.spawn(["lyred", "--mdns", mode, "--name", "Hall", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await eventually {
            watch.jsonLines.contains { $0["reason"] as? String == "deviceAvailable" && $0["name"] as? String == "Hall" }
        }, "watch: \(watch.stdout)")
        lyred.signal(signal)
        try await lyred.waitForExit(timeout: 10)
        #expect(lyred.status == 0, "lyred: \(lyred.stderr)")
        // Goodbye packets make this immediate; the bound only guards against a hang.
        #expect(await eventually(timeout: 5) {
            watch.jsonLines.contains { $0["reason"] as? String == "deviceUnavailable" && $0["name"] as? String == "Hall" }
        }, "watch: \(watch.stdout)")
        // discovery.md §3, §6: `st=leaving` goes out first, then the goodbye (TTL 0), within a moment.
        func firstPacket(_ matching: ([String: Any]) -> Bool) -> Double? {
            sniff.jsonLines.first { (($0["records"] as? [[String: Any]]) ?? []).contains(where: matching) }?["t"] as? Double
        }
        #expect(await eventually { firstPacket { $0["ttl"] as? Int == 0 } != nil }, "no goodbye seen: \(sniff.stdout)")
        let leaving = firstPacket { ($0["ttl"] as? Int ?? 0) > 0 && ($0["txt"] as? [String] ?? []).contains("st=leaving") }
        let goodbye = firstPacket { $0["ttl"] as? Int == 0 }
        #expect(leaving != nil && goodbye != nil && leaving! < goodbye! && goodbye! - leaving! < 1, "leaving at \(String(describing: leaving)), goodbye at \(String(describing: goodbye)): \(sniff.stdout)")
        if let leaving, let goodbye { print("\(mode): st=leaving went out \(Int((goodbye - leaving) * 1000)) ms before the goodbye") }
        // discovery.md §6: while it lived, the service's PTR and TXT records were announced for 75 minutes and
        // its SRV for 2 (what a browser that hears no goodbye keeps them for).
        let lived = Set(sniff.jsonLines.flatMap { ($0["records"] as? [[String: Any]]) ?? [] }
            .compactMap { record -> String? in
                guard let type = record["type"] as? Int, let ttl = record["ttl"] as? Int, ttl > 0 else { return nil }
                return "\(type):\(ttl)"
            })
        #expect(lived == ["12:4500", "16:4500", "33:120"], "record types and TTLs: \(lived)")
    }

    /// Without `--name` and `--port` a receiver is advertised under the host name, up to its first dot, on
    /// port 7700 (README options, discovery.md §1), and plays there.
    @Test("with no name or port given: the host name and port 7700", arguments: ["avahi", "embedded"])
    func theDefaultsAreTheHostNameAndPort7700(mode: String) async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let host = try await network.run(["hostname"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = String(host.prefix { $0 != "." })  // short here: the cut at 63 bytes is not tried
        #expect(!expected.isEmpty, "no host name")
        let lyred = try network.spawn(["lyred", "--mdns", mode, "--state-dir", "/run/lyred"])
        defer { lyred.signal(SIGTERM) }
        let found = await eventually {
            let list = try? await network.run(["lyre", "devices", "--json"])
            return (list.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [[String: Any]] } ?? [])
                .contains { $0["name"] as? String == expected && $0["port"] as? Int == 7700 }
        }
        #expect(found, "not listed as '\(expected)' on 7700; lyred: \(lyred.stderr)")
        #expect(lyred.stderr.contains("advertised as '\(expected)'"), "lyred: \(lyred.stderr)")
    }

    /// A name changed in the config file and reloaded (SIGHUP) is advertised at once, under the same id: a
    /// watcher sees the device changed, never gone, and the picker lists only the new name. The new name is
    /// registered before the old one is withdrawn, in both mDNS stacks.
    @Test("a reload renames the receiver in place", arguments: ["avahi", "embedded"])
    func aReloadRenamesInPlace(mode: String) async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let written = try await network.shell("printf 'name = Porch\\n' > /run/rename.conf")
        #expect(written.status == 0, "\(written.stderr)")
        let watch = try network.spawn(["lyre", "devices", "--watch", "--json"])
        let lyred = try network.spawn(["lyred", "--mdns", mode, "--config", "/run/rename.conf", "--port", "0", "--state-dir", "/run/lyred"])
        #expect(await eventually {
            watch.jsonLines.contains { $0["reason"] as? String == "deviceAvailable" && $0["name"] as? String == "Porch" }
        }, "watch: \(watch.stdout) lyred: \(lyred.stderr)")
        let id = try #require(watch.jsonLines.first { $0["name"] as? String == "Porch" }?["id"] as? String)

        let renamed = try await network.shell("printf 'name = Back \"Porch\" = 2\\n' > /run/rename.conf")
        #expect(renamed.status == 0, "\(renamed.stderr)")
        lyred.signal(SIGHUP)
        #expect(await eventually { lyred.stderr.contains("renamed from 'Porch' to 'Back \"Porch\" = 2'") }, "\(lyred.stderr)")
        #expect(await eventually {
            watch.jsonLines.contains { $0["reason"] as? String == "deviceChanged" && $0["name"] as? String == "Back \"Porch\" = 2" }
        }, "watch: \(watch.stdout)")
        #expect(try await eventually {
            let names = try await Self.devicesJSON(network).compactMap { $0["name"] as? String }
            return names == ["Back \"Porch\" = 2"]
        }, "the old name is still listed")
        #expect(watch.jsonLines.filter { $0["id"] as? String == id }.allSatisfy { $0["reason"] as? String != "deviceUnavailable" },
                "the device went away on its rename: \(watch.stdout)")
        #expect(!lyred.stderr.contains("takes effect when lyred restarts"), "\(lyred.stderr)")
        #expect(lyred.isRunning)
    }

    @Test("the id stays the same across restarts and renames")
    func stableIdentity() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        var ids: [String] = []
        var keys: [String] = []
        for name in ["Bedroom", "Guest Room"] {
            let lyred = try network.spawn(["lyred", "--name", name, "--port", "0", "--state-dir", "/run/lyred"])
            #expect(await Self.waitForAdvertised(lyred, name: name))
            let devices = try await Self.devicesJSON(network)
            let device = try #require(devices.first { $0["name"] as? String == name })
            ids.append(device["id"] as? String ?? "")
            keys.append(device["keyFingerprint"] as? String ?? "")
            lyred.signal(SIGTERM)
            try await lyred.waitForExit(timeout: 10)
        }
        #expect(ids.count == 2 && ids[0] == ids[1] && ids[0].count == 32, "ids: \(ids)")
        #expect(keys.count == 2 && keys[0] == keys[1] && keys[0].count == 16, "key fingerprints: \(keys)")
    }

    @Test("interface down and up: the receiver is listed again once lo is back")
    func interfaceDownAndUp() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let lyred = try network.spawn([
            "lyred", "--mdns", "embedded", "--interface", "lo", "--name", "Cellar", "--port", "0", "--state-dir", "/run/lyred",
        ])
        #expect(await Self.waitForAdvertised(lyred, name: "Cellar"))
        // discovery.md §7: a watcher whose interface goes down reports the device unavailable, and available again
        // when it is back.
        let watch = try network.spawn(["lyre", "devices", "--watch", "--json", "--mdns", "embedded", "--interface", "lo"])
        func reasons() -> [String] { watch.jsonLines.filter { $0["name"] as? String == "Cellar" }.compactMap { $0["reason"] as? String } }
        #expect(await eventually { reasons() == ["deviceAvailable"] }, "watch: \(watch.stdout) \(watch.stderr)")
        let down = try await network.shell("ip link set lo down && sleep 1 && ip link set lo up && ip link set lo multicast on")
        #expect(down.status == 0, "\(down.stderr)")
        #expect(await eventually(timeout: 15) { reasons() == ["deviceAvailable", "deviceUnavailable", "deviceAvailable"] }, "watch: \(watch.stdout)")
        #expect(await eventually(timeout: 15) {
            let devices = (try? await Self.devicesJSON(network, ["--interface", "lo"])) ?? []
            return devices.contains { $0["name"] as? String == "Cellar" }
        })
        #expect(lyred.isRunning)
    }
}
