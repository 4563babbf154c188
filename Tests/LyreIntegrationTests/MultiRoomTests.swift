import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Multi-room with real components: several lyred in one test network, each writing what it plays to a WAV
/// sink with a presentation log of every block, and `lyre play` (and `lyre group`) sending to them. Whether
/// rooms are in sync is measured from their outputs: `audio.py sync` finds each stretch of one room's output
/// in the other's and turns both places into the times they left, through each room's log.
@Suite(.serialized)
struct MultiRoomTests {
    static let audioTool = TestNetwork.tools + "/peers/audio.py"

    /// Receivers in one network, each with its own WAV sink, presentation log and control socket.
    struct Rooms {
        let network: TestNetwork
        var lyred: [String: Spawned] = [:]
        /// Each room's host, when the rooms are `onHosts`.
        var hosts: [String: TestNetwork.Host] = [:]
        /// Each room's lyred command line.
        var arguments: [String: [String]] = [:]

        /// Starts room `name`'s lyred again, as it first was (its output and log start anew); with `outputAs`, its output and presentation log go to that room name's
        /// files (`path(outputAs, …)`), and the first run's are kept.
        mutating func restart(_ name: String, outputAs: String? = nil, on host: TestNetwork.Host? = nil) throws {
            if let host { hosts[name] = host }
            var again = arguments[name]!
            if let outputAs {
                let (old, new) = (path(name, ""), path(outputAs, ""))
                again = again.map { $0.hasSuffix(old + "wav") || $0.hasSuffix(old + "csv") ? $0.replacingOccurrences(of: old, with: new) : $0 }
            }
            lyred[name] = try network.spawn(again, name: "lyred-\(name)-again", on: hosts[name])
        }

        /// `onHosts`: each room on a host of its own (TestNetwork.addHost: 10.77.0.2, .3, …), announcing itself
        /// with the embedded mDNS responder on that host's eth0; no avahi-daemon anywhere. The rooms named in
        /// `linkLocalOnly` are on hosts with no address but their link-local IPv6 one.
        init(_ rooms: [(name: String, extra: [String])], onHosts: Bool = false, linkLocalOnly: Set<String> = []) async throws {
            network = try TestNetwork(avahi: !onHosts)
            for (index, room) in rooms.enumerated() {
                let base = network.scratch.appendingPathComponent(room.name).path
                let host = onHosts ? try await network.addHost(2 + index, linkLocalOnly: linkLocalOnly.contains(room.name)) : nil
                hosts[room.name] = host
                arguments[room.name] =
                    ["lyred", "--name", room.name, "--port", String(7730 + index), "--state-dir", base + ".state",
                     "--output", "wav:\(base).wav", "--presentation-log", base + ".csv", "--control-socket", base + ".sock",
                     "--mpris", "off", "--log-level", "info"] + (onHosts ? ["--mdns", "embedded", "--interface", "eth0"] : []) + room.extra
                lyred[room.name] = try network.spawn(arguments[room.name]!, name: "lyred-\(room.name)", on: host)
            }
            for (name, process) in lyred {
                let up = await eventually { process.stderr.contains("advertised as") }
                #expect(up, "lyred \(name) did not come up: \(process.stderr)")
            }
        }

        /// `lyre play SONG` to Kitchen and Bedroom, with the group socket, once Bedroom shows what plays.
        func playInKitchenAndBedroom(_ song: String) async throws -> Spawned {
            let play = try network.spawn(["lyre", "play", song, "--to", "Kitchen", "--to", "Bedroom", "--group-socket", groupSocket])
            #expect(await eventually { lyred["Bedroom"]!.stderr.contains("now playing:") }, "\(lyred["Bedroom"]!.stderr)")
            return play
        }

        func path(_ room: String, _ ext: String) -> String { network.scratch.appendingPathComponent("\(room).\(ext)").path }
        var groupSocket: String { network.scratch.appendingPathComponent("group.sock").path }

        /// `lyre group --json`'s rooms, each as "NAME STATE".
        func groupStates() async throws -> [String]? {
            let list = try await network.run(["lyre", "group", "--json", "--socket", groupSocket])
            let listing = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
            return (listing?["rooms"] as? [[String: Any]])?.map { "\($0["name"] ?? "") \($0["state"] ?? "")" }
        }

        /// When `room`'s output first put audio out (CLOCK_MONOTONIC ns), after `after`, from its presentation log.
        func firstAudio(_ room: String, after: UInt64 = 0) throws -> UInt64? {
            let log = try String(contentsOfFile: path(room, "csv"), encoding: .utf8)
            return PresentedBlock.parse(log).first { $0.audioFrames > 0 && $0.presented > after }?.presented
        }

        /// Stops every lyred so the outputs are complete.
        func stop() async throws {
            for process in lyred.values where process.isRunning { process.signal(SIGTERM) }
            for process in lyred.values { try await process.waitForExit(timeout: 10) }
        }

        func json(_ arguments: [String]) async throws -> [String: Any] {
            let result = try await network.run(["python3", MultiRoomTests.audioTool] + arguments, timeout: 60)
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            return try #require(object, "audio.py \(arguments.first ?? ""): \(result.stderr)")
        }

        /// `part`: the room's output holds a stretch of the reference only (it joined late, or was removed).
        /// `settle`: seconds at the start left out of the SNR and the gaps (a skewed room's control catching up).
        func compare(_ reference: String, _ room: String, referenceChannel: Int? = nil, skew: Double = 0, settle: Double = 0,
                     part: Bool = false) async throws -> [String: Any] {
            try await json(["compare", reference, path(room, "wav"), "--skew", String(skew), "--settle", String(settle)]
                           + (referenceChannel.map { ["--ref-channel", String($0)] } ?? []) + (part ? ["--part"] : []))
        }

        /// Waits for `play` to end well, stops the receivers, and expects `room` to have played `song` whole,
        /// first sample to last, without a gap.
        func expectPlayedWhole(_ play: Spawned, _ song: String, in room: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            try await play.waitForExit(timeout: 40)
            #expect(play.status == 0, "lyre play: \(play.stderr)", sourceLocation: sourceLocation)
            try await stop()
            let output = try await compare(song, room)
            let (floor, edgeFloor) = try await StreamingTests.opusFloors(network, input: song)
            StreamingTests.expectSameAudio(output, floor: floor, sourceLocation: sourceLocation)
            StreamingTests.expectWhole(output, lags: false, floor: edgeFloor, sourceLocation: sourceLocation)
        }

        func sync(_ a: String, _ b: String, expectMilliseconds: Double = 0, skews: (Double, Double) = (0, 0), settle: Double = 5,
                  within: Double = 100) async throws -> [String: Any] {
            try await json(["sync", path(a, "wav"), path(a, "csv"), path(b, "wav"), path(b, "csv"), "--expect-ms", String(expectMilliseconds),
                            "--skew-a", String(skews.0), "--skew-b", String(skews.1), "--every", "0.25", "--settle", String(settle),
                            "--within", String(within)])
        }

        /// `signal`: `sweep` (100 Hz to 8 kHz) or `music`, whose windows have one clear match where a sweep's
        /// high, nearly periodic end can match a period (125–200 µs) off.
        func sweep(seconds: Double, split: Bool = false, signal: String = "sweep") async throws -> String {
            let file = network.scratch.appendingPathComponent("\(signal)-\(seconds)\(split ? "-split" : "").wav").path
            let made = try await network.run(["python3", MultiRoomTests.audioTool, "sweep", file, "--rate", "44100",
                                              "--seconds", String(seconds), "--signal", signal] + (split ? ["--split"] : []))
            #expect(made.status == 0, "\(made.stderr)")
            return file
        }
    }

    /// Both rooms carry the input, and the same sound leaves both outputs at the same instant.
    static func expectInSync(_ sync: [String: Any], within microseconds: Double = 500, expectMean: Double = 0,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        let windows = sync["windows"] as? Int ?? 0
        let unmatched = sync["unmatched"] as? Int ?? -1
        let mean = sync["mean_us"] as? Double ?? .infinity
        let spread = (sync["max_us"] as? Double).map { _ in abs(mean - expectMean) } ?? .infinity
        #expect(windows >= 4 && unmatched == 0, "sync: \(sync)", sourceLocation: sourceLocation)
        #expect(spread < microseconds, "rooms apart by \(mean) µs, expected \(expectMean): \(sync)", sourceLocation: sourceLocation)
        if expectMean == 0 {
            #expect((sync["max_us"] as? Double ?? .infinity) < microseconds, "sync: \(sync)", sourceLocation: sourceLocation)
        }
    }

    @Test func twoRoomsPlayTheSameAudioInSync() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Living Room", [])])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 4)
        let play = try await rooms.network.run(["lyre", "play", sweep, "--to", "Kitchen", "--to", "Living Room",
                                                "--group-socket", rooms.groupSocket])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        for room in ["Kitchen", "Living Room"] {
            StreamingTests.expectSameAudio(try await rooms.compare(sweep, room))
            #expect(rooms.lyred[room]!.stderr.contains("late=0") || !rooms.lyred[room]!.stderr.contains("late="), "\(room)")
        }
        Self.expectInSync(try await rooms.sync("Kitchen", "Living Room"))
    }

    /// Two rooms on hosts of their own, joined to the sender's by veth and a bridge, whose DACs run 150 ppm
    /// fast and 150 ppm slow (300 ppm apart, 0.3 ms a second). The sender finds Fast by its name over mDNS
    /// across the bridge and is given Slow as [fd77::3]:7731 (IPv6). Each room corrects its drift by
    /// resampling (no correction steps, a rate of ∓150 ppm), so both still carry the input as cleanly as an
    /// unskewed room, and play the same sound at the same instant throughout.
    @Test func roomsWithSkewedClocksStayInSync() async throws {
        // Each logs its statistics once a second (the skew it learnt, below).
        let rooms = try await Rooms([("Fast", ["--output-skew-ppm=150", "--stats-interval", "1"]),
                                     ("Slow", ["--output-skew-ppm=-150", "--stats-interval", "1"])], onHosts: true)
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 12, signal: "music")
        let play = try await rooms.network.run(["lyre", "play", sweep, "--to", "Fast", "--host", "[\(rooms.hosts["Slow"]!.ipv6)]:7731",
                                                "--mdns", "embedded", "--interface", "lan0", "--group-socket", "off", "--log-level", "info"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        let fast = try #require(rooms.hosts["Fast"]), slow = try #require(rooms.hosts["Slow"])
        // Fast at whichever of its addresses mDNS resolved first (10.77.0.2 or fd77::2), Slow at fd77::3.
        let fastLog = rooms.lyred["Fast"]!.stderr, slowLog = rooms.lyred["Slow"]!.stderr
        #expect((fastLog.contains("peer=[IPv4]10.77.0.1/") || fastLog.contains("peer=[IPv6]fd77::1/")) && slowLog.contains("peer=[IPv6]fd77::1/"),
                "sessions from the sender's host to \(fast.ipv4) or \(fast.ipv6) and to \(slow.ipv6): \(fastLog) \(slowLog)")
        for (room, skew) in [("Fast", 150.0), ("Slow", -150.0)] {
            // Measured from 4 s on: before that each control catches its DAC's 150 ppm up (the sync figures
            // below hold it to converging by then), and the output is up to 4 samples off where one fixed
            // stretch of the input puts it, which a whole-file SNR reads as noise (19.9 dB once in a full run).
            StreamingTests.expectSameAudio(try await rooms.compare(sweep, room, skew: skew, settle: 4),
                                           floor: try await StreamingTests.opusFloors(rooms.network, input: sweep).whole)
            let log = rooms.lyred[room]!.stderr
            // The skew the room learnt (its controller's integral), against its sender-clock estimate: within
            // a few ppm of the DAC's, as that estimate's own drift wanders by a few ppm when the suite runs
            // beside others. Read once a second, the median from the fifth second on (once the control has
            // caught up, as the sync below): one line, the last, read 10 ppm off once under load.
            let lines = log.split(separator: "\n").filter { $0.contains("skew-ppm=") }
            let stats = lines.last.map(String.init) ?? "no stats line: \(log.suffix(400))"
            let learnt = lines.dropFirst(4).compactMap { line in
                line.components(separatedBy: "skew-ppm=").last.flatMap { Double($0.prefix { "-.0123456789".contains($0) }) }
            }.sorted()
            print("\(room) learnt, once a second from the fifth: \(learnt) ppm")
            #expect(stats.contains("corrections=0"), "\(room): \(stats)")
            #expect(learnt.count >= 5 && abs(learnt[learnt.count / 2] + skew) < 10, "\(room): learnt \(learnt) ppm, the last line \(stats)")
            // streaming.md §5.1: the stats carry the sender-clock drift once the estimator has a slope (its chosen
            // samples span 2 s; a fresh-clone run ended this 20 s session without one). The sender runs on this
            // host's clock, so when it is there it shows no drift of more than a few ppm (the DAC's skew is
            // another clock, the output's).
            let drift = stats.components(separatedBy: "drift-ppm=").dropFirst().first.flatMap { Double($0.prefix { !$0.isWhitespace }) }
            #expect(drift.map { abs($0) < 5 } != false, "\(room): \(stats)")
        }
        // What it means to be in sync here: each controller catches its DAC's 150 ppm up from a standing start
        // (300 ppm apart, 0.3 ms a second), so the rooms converge within 4 s of the first sound (every window
        // from then on within 50 µs; about 1 s here), and settled (from 4 s on, 8 s of windows) the p99 of their
        // offset is under 50 µs (5–20 µs here). The windows before convergence are not held to a bound: they
        // measure the catching up (60–90 µs in the first). Music, not a sweep: a sweep's high, nearly
        // periodic end can be matched a period (125–200 µs) off.
        let sync = try await rooms.sync("Fast", "Slow", skews: (150, -150), settle: 4, within: 50)
        let converged = sync["converged_s"] as? Double, settledP99 = sync["settled_p99_us"] as? Double
        #expect(converged.map { $0 <= 4 } == true, "not converged within 4 s: \(sync)")
        #expect((sync["settled_windows"] as? Int ?? 0) >= 24 && settledP99.map { $0 < 50 } == true, "settled: \(sync)")
        #expect((sync["settled_max_us"] as? Double).map { $0 < 100 } == true, "settled: \(sync)")
        #expect((sync["windows"] as? Int ?? 0) >= 32 && sync["unmatched"] as? Int == 0, "\(sync)")
    }

    /// Receivers reached at link-local IPv6 addresses (fe80::, which mean nothing without their interface):
    /// one on a host with no other address, found by mDNS (`--to`, its address then carrying the zone of the
    /// interface it was found on), and one given by address with its zone (`--host [fe80::…%lan0]:PORT`).
    /// Control, media and timing all run over link-local: both carry the input, in sync.
    @Test func linkLocalReceiversArePlayed() async throws {
        let rooms = try await Rooms([("Attic", []), ("Den", [])], onHosts: true, linkLocalOnly: ["Attic"])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 4)
        let den = try await rooms.network.linkLocalAddress(of: #require(rooms.hosts["Den"]))
        let play = try await rooms.network.run(["lyre", "play", sweep, "--to", "Attic", "--host", "[\(den)%lan0]:7731",
                                                "--mdns", "embedded", "--interface", "lan0", "--group-socket", "off", "--log-level", "info"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        for room in ["Attic", "Den"] {
            let log = rooms.lyred[room]!.stderr
            #expect(log.contains("peer=[IPv6]fe80:") && log.contains("session from"), "\(room): a session from a link-local address: \(log)")
            StreamingTests.expectSameAudio(try await rooms.compare(sweep, room))
        }
        Self.expectInSync(try await rooms.sync("Attic", "Den"), within: 100)
        // Without its zone, an fe80:: address is refused with what to write instead.
        let bare = try await rooms.network.run(["lyre", "play", sweep, "--host", "[\(den)]:7731", "--group-socket", "off"])
        #expect(bare.status != 0 && bare.stderr.contains("needs its interface, as in [\(den)%eth0]:7731"), "\(bare.stderr)")
        // And so is lyred told to listen on one.
        let listen = try rooms.network.spawn(["lyred", "--listen", den, "--port", "7740", "--state-dir", rooms.path("listen", "state"),
                                              "--output", "wav:" + rooms.path("listen", "wav"), "--mpris", "off", "--control-socket", "off",
                                              "--mdns", "embedded", "--interface", "eth0"], on: rooms.hosts["Den"])
        try await listen.waitForExit(timeout: 15)
        #expect(listen.status != 0 && listen.stderr.contains("needs its interface, as in --listen \(den)%eth0"), "\(listen.stderr)")
    }

    /// `--to Left=left --to Right=right`: each receiver plays one channel of the stereo input, on both its
    /// speakers. The input's channels differ (a sweep up on the left, down on the right), so each room's
    /// output matches its own channel and not the other.
    @Test func stereoPairPlaysOneChannelInEachRoom() async throws {
        let rooms = try await Rooms([("Left", []), ("Right", [])])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 4, split: true)
        let play = try await rooms.network.run(["lyre", "play", sweep, "--to", "Left=left", "--to", "Right=right",
                                                "--group-socket", "off"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        #expect(rooms.lyred["Left"]!.stderr.contains("channels left"))
        #expect(rooms.lyred["Right"]!.stderr.contains("channels right"))
        for (room, own, other) in [("Left", 0, 1), ("Right", 1, 0)] {
            let mine = try await rooms.compare(sweep, room, referenceChannel: own)
            let theirs = try await rooms.compare(sweep, room, referenceChannel: other)
            let snr = (mine["snr_db"] as? Double ?? -100, theirs["snr_db"] as? Double ?? 100)
            #expect(snr.0 >= 20 && mine["gaps"] as? Int == 0, "\(room) against its own channel: \(mine)")
            #expect(snr.1 < 0, "\(room) must not carry the other channel: \(theirs)")
        }
    }

    /// `lyre group add` while the song plays: the new room starts within a second, in sync, and the room
    /// that was playing is not disturbed. `lyre group` lists both; `lyre group remove` takes one out.
    @Test func roomJoinsMidSongInSync() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 6)
        let play = try rooms.network.spawn(["lyre", "play", sweep, "--to", "Kitchen", "--group-socket", rooms.groupSocket])
        #expect(await eventually { rooms.lyred["Kitchen"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Kitchen"]!.stderr)")
        try await Task.sleep(for: .seconds(1.5))
        let asked = Self.monotonicNow()
        let add = try await rooms.network.run(["lyre", "group", "add", "Bedroom", "--socket", rooms.groupSocket])
        #expect(add.status == 0, "lyre group add: \(add.stderr)")
        let list = try await rooms.network.run(["lyre", "group", "--json", "--socket", rooms.groupSocket])
        let listing = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
        let names = (listing?["rooms"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["Kitchen", "Bedroom"], "lyre group: \(list.stdout) \(list.stderr)")
        // Plain rooms say so (pairing.md §6.1: `"encrypted": false`, `plain` in the table), and each room shows its
        // link's quality from its receiver's reports (streaming.md §4.2), Kitchen's within a report or two.
        #expect((listing?["rooms"] as? [[String: Any]])?.allSatisfy { $0["encrypted"] as? Bool == false } == true, "\(list.stdout)")
        var kitchen: [String: Any]?
        let reported = await eventually(timeout: 5) {
            let list = try? await rooms.network.run(["lyre", "group", "--json", "--socket", rooms.groupSocket])
            let listing = list.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }
            kitchen = (listing?["rooms"] as? [[String: Any]])?.first { $0["name"] as? String == "Kitchen" }
            return (kitchen?["quality"] as? [String: Any])?["lossPercent"] as? NSNumber != nil
        }
        #expect(reported, "Kitchen's quality: \(kitchen ?? [:])")
        let table = try await rooms.network.run(["lyre", "group", "--socket", rooms.groupSocket])
        let kitchenRow = table.stdout.split(separator: "\n").first { $0.hasPrefix("Kitchen ") }
        #expect(kitchenRow?.contains(" plain ") == true && kitchenRow?.contains("%") == true, "lyre group: \(table.stdout) \(table.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        // Unpaired, the room that joins is said to play in plain (pairing.md §6.1).
        #expect(play.stderr.contains("'Bedroom' joined (not paired: audio, now playing and artwork go unencrypted"), "\(play.stderr)")
        // The sender then told the new room what plays (streaming.md §9.2).
        #expect(rooms.lyred["Bedroom"]!.stderr.contains("now playing:"), "\(rooms.lyred["Bedroom"]!.stderr)")
        try await rooms.stop()
        // Kitchen played the whole sweep without a gap; Bedroom from when it joined, in step with it.
        StreamingTests.expectSameAudio(try await rooms.compare(sweep, "Kitchen"))
        Self.expectInSync(try await rooms.sync("Bedroom", "Kitchen"))
        // streaming.md §9.2: Bedroom starts a frame or two after it joins, not a whole latency (250 ms) later:
        // its first audio left its output less than the latency after the request, which came before the join
        // (117 ms seen: the request's process, the name resolved, the session set up).
        let firstAudio = try #require(try rooms.firstAudio("Bedroom"), "Bedroom played no audio")
        #expect(firstAudio > asked && firstAudio - asked < 250_000_000, "Bedroom's first audio \(Double(firstAudio - asked) / 1e6) ms after the request")
    }

    /// A room whose receiver goes away (lyred stopped) while another plays on is listed as returning; when
    /// its lyred is back it rejoins by itself ('is back', the route change `newDeviceAvailable`), in sync with
    /// the room that played on, whose output is untouched from first sample to last. Lost again, it comes back
    /// at another address (a new DHCP lease; here a lyred with the same state on another host): it is found
    /// there by mDNS and rejoins by itself, in sync (issue 27), while its old address never answers again.
    ///
    /// The rooms are on hosts of their own, found by the sender's embedded mDNS; a return found through
    /// avahi-daemon is aReturningRoomIsAddedOnceAndRemovingTheLastOneWaitedForStops's.
    @Test func aLostRoomComesBackByItselfInSyncAndAtANewAddress() async throws {
        var rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])], onHosts: true)
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 20, signal: "music")
        let play = try rooms.network.spawn(["lyre", "play", song, "--to", "Kitchen", "--to", "Bedroom", "--mdns", "embedded",
                                            "--interface", "lan0", "--group-socket", rooms.groupSocket, "--log-level", "info"])
        #expect(await eventually { rooms.lyred["Bedroom"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Bedroom"]!.stderr)")
        func said(_ line: String) -> Int { play.stderr.components(separatedBy: line).count - 1 }
        let (lostLine, backLine) = ("'Bedroom' is no longer available; playing on in 'Kitchen'; it rejoins when it is back", "'Bedroom' is back")
        /// Bedroom's lyred stopped, for the `time`th time, and the sender saying so.
        func lose(_ time: Int) async throws {
            rooms.lyred["Bedroom"]!.signal(SIGTERM)
            try await rooms.lyred["Bedroom"]!.waitForExit(timeout: 10)
            #expect(await eventually { said(lostLine) == time }, "lyre play: \(play.stderr)")
        }

        try await Task.sleep(for: .seconds(2))
        try await lose(1)
        let states = try await rooms.groupStates()
        #expect(states == ["Kitchen playing", "Bedroom returning"], "lyre group: \(String(describing: states))")
        // The first try, a second after the loss, fails and is told; it is started again once that is said, and
        // the tries that fail meanwhile are not told.
        let notBack = "'Bedroom' is not back yet"
        #expect(await eventually(timeout: 5) { said(notBack) == 1 }, "lyre play: \(play.stderr)")
        let restarted = Self.monotonicNow()
        try rooms.restart("Bedroom")
        #expect(await eventually(timeout: 10) { said(backLine) == 1 }, "lyre play: \(play.stderr)")
        #expect(said(notBack) == 1, "lyre play: \(play.stderr)")
        // Played on for 4 s (16 windows of the sync measure), then lost again and started on a host of its own,
        // its output and log kept apart (Bedroom-moved), with about 8 s of the song left.
        try await Task.sleep(for: .seconds(4))
        try await lose(2)
        let moved = try await rooms.network.addHost(9)
        // A new loss: its first failed try is told again.
        #expect(await eventually(timeout: 5) { said(notBack) == 2 }, "lyre play: \(play.stderr)")
        let restartedThere = Self.monotonicNow()
        try rooms.restart("Bedroom", outputAs: "Bedroom-moved", on: moved)
        #expect(await eventually(timeout: 10) { said(backLine) == 2 }, "lyre play: \(play.stderr)")
        try await rooms.expectPlayedWhole(play, song, in: "Kitchen")
        Self.expectInSync(try await rooms.sync("Bedroom", "Kitchen"))
        Self.expectInSync(try await rooms.sync("Bedroom-moved", "Kitchen"))
        // Its first audio left within 3.5 s of its lyred being started again (start-up, at most a second
        // until the next try, the join and the playback latency).
        let firstAudio = try #require(try rooms.firstAudio("Bedroom"), "Bedroom played no audio after it came back")
        let after = Double(Int64(firstAudio) - Int64(restarted)) / 1e9
        #expect(after > 0 && after < 3.5, "Bedroom's first audio \(after) s after its lyred was started again")
        // At the new address within 5 s (2.11 s measured: lyred's start-up and first announcement, the join, and
        // the playback latency).
        let firstThere = try #require(try rooms.firstAudio("Bedroom-moved"), "Bedroom played no audio at its new address")
        let afterThere = Double(Int64(firstThere) - Int64(restartedThere)) / 1e9
        print("Bedroom played again \(String(format: "%.2f", after)) s after its lyred started again, and at its new address \(String(format: "%.2f", afterThere)) s after")
        #expect(afterThere > 0 && afterThere < 5, "Bedroom's first audio \(afterThere) s after its lyred started at the new address")
    }

    /// Adding by hand a room that is returning: while its receiver is away the add fails and the room is still
    /// waited for; once it is back (by itself) it plays once, and adding it again is refused as already playing.
    /// A room removed while returning is no longer listed, and when its receiver is back it gets no session.
    /// Removing the only room left to wait for, while no room plays, stops the playback.
    @Test func aReturningRoomIsAddedOnceAndRemovingTheLastOneWaitedForStops() async throws {
        var rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 30, signal: "music")
        let play = try await rooms.playInKitchenAndBedroom(song)
        func states() async throws -> [String]? { try await rooms.groupStates() }
        rooms.lyred["Bedroom"]!.signal(SIGTERM)
        try await rooms.lyred["Bedroom"]!.waitForExit(timeout: 10)
        #expect(await eventually { play.stderr.contains("'Bedroom' is no longer available") }, "lyre play: \(play.stderr)")
        let early = try await rooms.network.run(["lyre", "group", "add", "Bedroom", "--socket", rooms.groupSocket])
        #expect(early.status != 0, "added while its receiver is away: \(early.stdout)")
        #expect(try await states() == ["Kitchen playing", "Bedroom returning"], "a failed add ended the wait")
        try rooms.restart("Bedroom")
        #expect(await eventually(timeout: 10) { play.stderr.contains("'Bedroom' is back") }, "lyre play: \(play.stderr)")
        #expect(await eventually { rooms.lyred["Bedroom"]!.stderr.contains("advertised as") }, "\(rooms.lyred["Bedroom"]!.stderr)")
        let again = try await rooms.network.run(["lyre", "group", "add", "Bedroom", "--socket", rooms.groupSocket])
        #expect(again.status != 0 && again.stderr.contains("already playing"), "\(again.stdout) \(again.stderr)")
        #expect(try await states() == ["Kitchen playing", "Bedroom playing"])

        // A room cannot be added twice at once. A receiver that takes the connection and never answers holds the
        // first add; a second add of it meanwhile is refused at once, and the first then fails by itself.
        let silent = try rooms.network.spawn(["python3", "-c", """
            import socket, time
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 7799)); s.listen()
            print("listening", flush=True); c, _ = s.accept(); print("accepted", flush=True); time.sleep(60)
            """], name: "silent-receiver")
        #expect(await eventually { silent.stdout.contains("listening") }, "\(silent.stderr)")
        let first = try rooms.network.spawn(["lyre", "group", "add", "127.0.0.1:7799", "--socket", rooms.groupSocket], name: "group-add-silent")
        #expect(await eventually { silent.stdout.contains("accepted") }, "the first add never connected: \(first.stderr)")
        let twice = try await rooms.network.run(["lyre", "group", "add", "127.0.0.1:7799", "--socket", rooms.groupSocket])
        #expect(twice.status != 0 && twice.stderr.contains("is already joining") && twice.stderr.split(separator: "\n").count == 1,
                "a second add while the first is joining: \(twice.stdout) \(twice.stderr)")
        try await first.waitForExit(timeout: 30)
        #expect(first.status != 0, "a receiver that never answers was added: \(first.stdout)")
        print("an add of a receiver that never answers: \(first.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        silent.signal(SIGTERM)
        #expect(try await states() == ["Kitchen playing", "Bedroom playing"])

        // Both go away: the playback waits for both; removing both from the wait stops it.
        for room in ["Kitchen", "Bedroom"] {
            rooms.lyred[room]!.signal(SIGTERM)
            try await rooms.lyred[room]!.waitForExit(timeout: 10)
        }
        #expect(await eventually { (try? await states()) == ["Kitchen returning", "Bedroom returning"] }, "lyre play: \(play.stderr)")
        #expect(play.stderr.contains("paused: ") && play.stderr.contains("are no longer available; it plays on when one is back"), "lyre play: \(play.stderr)")
        let removeOne = try await rooms.network.run(["lyre", "group", "remove", "Kitchen", "--socket", rooms.groupSocket])
        #expect(removeOne.status == 0 && play.isRunning, "\(removeOne.stderr) \(play.stderr)")
        #expect(try await states() == ["Bedroom returning"])
        // A room removed while returning never comes back on its own (issue 27): its receiver back, three
        // attempts' worth of time, it is not asked to play.
        try rooms.restart("Kitchen")
        #expect(await eventually { rooms.lyred["Kitchen"]!.stderr.contains("advertised as 'Kitchen'") }, "\(rooms.lyred["Kitchen"]!.stderr)")
        try await Task.sleep(for: .seconds(3))
        #expect(!play.stderr.contains("'Kitchen' is back"), "lyre play: \(play.stderr)")
        #expect(!rooms.lyred["Kitchen"]!.stderr.contains("session from"), "Kitchen: \(rooms.lyred["Kitchen"]!.stderr)")
        #expect(try await states() == ["Bedroom returning"])
        let removeLast = try await rooms.network.run(["lyre", "group", "remove", "Bedroom", "--socket", rooms.groupSocket])
        #expect(removeLast.status == 0, "\(removeLast.stderr)")
        try await play.waitForExit(timeout: 5)
        #expect(play.status == 0 && play.stderr.contains("no room left to play on or wait for; stopped"), "lyre play: \(play.stderr)")
    }

    /// streaming.md §9.1, §9.4: adding a room waited for ends the wait. Bedroom comes back where neither its
    /// known address nor mDNS finds it: on another port, with avahi-daemon stopped and its lyred (`--mdns
    /// avahi`) waiting for it, so the sender, which tries the known address every second, cannot bring it
    /// back by itself. `lyre group add` with its new address does, and the room, known by the id it answers
    /// as, is no longer waited for.
    @Test func addingARoomWaitedForEndsTheWait() async throws {
        var rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 30, signal: "music")
        let play = try await rooms.playInKitchenAndBedroom(song)
        rooms.lyred["Bedroom"]!.signal(SIGTERM)
        try await rooms.lyred["Bedroom"]!.waitForExit(timeout: 10)
        #expect(await eventually { (try? await rooms.groupStates()) == ["Kitchen playing", "Bedroom returning"] }, "lyre play: \(play.stderr)")
        #expect(try await rooms.network.run([TestNetwork.tools + "/avahi-ctl", "stop"]).status == 0)
        rooms.arguments["Bedroom"] = rooms.arguments["Bedroom"]!.map { $0 == "7731" ? "7741" : $0 } + ["--mdns", "avahi"]
        try rooms.restart("Bedroom")
        #expect(await eventually { rooms.lyred["Bedroom"]!.stderr.contains("waiting for it") }, "\(rooms.lyred["Bedroom"]!.stderr)")
        // Tried in vain at its known address meanwhile: still waited for.
        try await Task.sleep(for: .seconds(1.5))
        #expect(try await rooms.groupStates() == ["Kitchen playing", "Bedroom returning"])
        let added = try await rooms.network.run(["lyre", "group", "add", "127.0.0.1:7741", "--socket", rooms.groupSocket])
        #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
        let states = try await rooms.groupStates() ?? []
        #expect(states.count == 2 && states.first == "Kitchen playing" && !states.contains { $0.hasSuffix("returning") }, "\(states); lyre play: \(play.stderr)")
        #expect(await eventually { rooms.lyred["Bedroom"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Bedroom"]!.stderr)")
        play.signal(SIGINT)
    }

    /// The only room lost (its lyred stopped, as a reboot does) pauses the playback where that room stopped
    /// (issue 27): `lyre play` says so and waits, and `lyre group` lists the room as returning. When its lyred
    /// is back, the room rejoins by itself and the playback resumes from where it paused: the output before and
    /// the output after hold the song from its first sample to its last, and what was lost or played twice at
    /// the seam is measured.
    @Test func theOnlyRoomsReturnResumesThePlaybackWhereItPaused() async throws {
        var rooms = try await Rooms([("Kitchen", [])])
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 10, signal: "music")
        let play = try rooms.network.spawn(["lyre", "play", song, "--to", "Kitchen", "--group-socket", rooms.groupSocket])
        #expect(await eventually { rooms.lyred["Kitchen"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Kitchen"]!.stderr)")
        try await Task.sleep(for: .seconds(3))
        rooms.lyred["Kitchen"]!.signal(SIGTERM)
        try await rooms.lyred["Kitchen"]!.waitForExit(timeout: 10)
        let paused = await eventually { play.stderr.contains("paused: 'Kitchen' is no longer available; it plays on when it is back") }
        #expect(paused, "lyre play: \(play.stderr)")
        let states = try await rooms.groupStates()
        #expect(states == ["Kitchen returning"], "lyre group: \(String(describing: states))")
        try await Task.sleep(for: .seconds(2))
        #expect(play.isRunning, "lyre play ended while its room was away: \(play.stderr)")

        try rooms.restart("Kitchen", outputAs: "Kitchen-again")
        #expect(await eventually(timeout: 10) { play.stderr.contains("'Kitchen' is back") }, "lyre play: \(play.stderr)")
        try await play.waitForExit(timeout: 40)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        // After the return: the song from the seam to its last sample, without a gap. Through Opus at 128 kbit/s
        // this music reads about 20 dB anywhere, as ffmpeg's libopus does (its last 20 ms: 19.3 to 21.3 dB for
        // three starting points). Its head is the seam, measured below.
        let after = try await rooms.compare(song, "Kitchen-again", part: true)
        #expect((after["snr_db"] as? Double ?? -100) >= 17 && (after["gaps"] as? Int) == 0, "after the return: \(after)")
        #expect((after["tail_snr_db"] as? Double ?? -100) >= 15, "the song's end after the return: \(after)")
        // The two outputs joined with half a second of silence between them are the song with one pause in it:
        // how many samples of the song were never heard (> 0) or heard twice (< 0) at the seam.
        let joined = rooms.path("Kitchen-joined", "wav")
        let concat = try await rooms.network.run([
            "ffmpeg", "-v", "error", "-y", "-i", rooms.path("Kitchen", "wav"), "-f", "lavfi", "-t", "0.5", "-i", "anullsrc=r=48000:cl=stereo",
            "-i", rooms.path("Kitchen-again", "wav"), "-filter_complex", "[0:a][1:a][2:a]concat=n=3:v=0:a=1", "-c:a", "pcm_s16le", joined,
        ])
        #expect(concat.status == 0, "ffmpeg: \(concat.stderr)")
        let splice = try await rooms.json(["splice", song, joined])
        // From the seam's edges: the output stopped hard at the shutdown and starts hard at the resume (the fresh
        // encoder's priming and delay are not played, `Lyre-Start-At`), so the last sample before the seam and the
        // first after it place it to the sample. Measured 0 five times. (Matching the music through Opus run by
        // run instead reads anywhere from -9 to 33; before the priming the fresh encoder's first 6.5 ms were
        // played, a faded copy of the audio at the seam, and that reading went to -333.) The receiver said where
        // its output stopped (`Lyre-Stopped-At` with `session-end: shutdown`): without its word the sender's clock
        // estimate put 5386 samples (112 ms) twice, as a WAV output writes what is staged ahead of its time.
        let lost = splice["edges_lost"] as? Int ?? .max
        print("the seam at the room's return: \(lost) samples lost (> 0) or played twice (< 0): \(splice)")
        #expect(abs(lost) <= 1, "samples lost or played twice at the seam: \(splice)\nlyre play: \(play.stderr)")
        #expect((splice["resume_snr_db"] as? Double ?? -100) >= 15, "the first 50 ms after the seam: \(splice)")
    }

    /// `--no-resume`: the only room's return leaves the playback paused, and the room's own controls play it on
    /// from where it paused (issue 27: when a device comes back, the app decides).
    @Test func withNoResumeTheReturnedRoomWaitsForItsControls() async throws {
        var rooms = try await Rooms([("Kitchen", [])])
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 8, signal: "music")
        let play = try rooms.network.spawn(["lyre", "play", song, "--to", "Kitchen", "--no-resume", "--group-socket", rooms.groupSocket])
        #expect(await eventually { rooms.lyred["Kitchen"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Kitchen"]!.stderr)")
        try await Task.sleep(for: .seconds(2))
        rooms.lyred["Kitchen"]!.signal(SIGTERM)
        try await rooms.lyred["Kitchen"]!.waitForExit(timeout: 10)
        #expect(await eventually { play.stderr.contains("paused: 'Kitchen' is no longer available; waiting for it; its controls play on") },
                "lyre play: \(play.stderr)")
        try rooms.restart("Kitchen", outputAs: "Kitchen-again")
        #expect(await eventually(timeout: 10) { play.stderr.contains("'Kitchen' is back") }, "lyre play: \(play.stderr)")
        // Back, and paused: its receiver shows the song paused, and plays nothing.
        let socket = ["--socket", rooms.path("Kitchen", "sock")]
        func rate() async -> Double? {
            let shown = try? await rooms.network.run(["lyre", "remote", "now-playing", "--json"] + socket)
            return (shown.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) } as? [String: Any])?["rate"] as? Double
        }
        let shownPaused = await eventually { await rate() == 0 }
        #expect(shownPaused, "the returned room does not show the song paused")
        try await Task.sleep(for: .seconds(1.5))
        #expect(play.isRunning, "lyre play: \(play.stderr)")
        let asked = Self.monotonicNow()
        let command = try await rooms.network.run(["lyre", "remote", "play"] + socket)
        #expect(command.status == 0, "lyre remote play: \(command.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        // The output after the return began only when its controls said play (nothing before), and holds the
        // rest of the song to its last sample.
        let first = try #require(try rooms.firstAudio("Kitchen-again"), "nothing played after the return")
        #expect(first > asked, "audio left \(Double(asked) / 1e9 - Double(first) / 1e9) s before its controls said play")
        let after = try await rooms.compare(song, "Kitchen-again", part: true)
        #expect((after["snr_db"] as? Double ?? -100) >= 17 && (after["gaps"] as? Int) == 0, "after the return: \(after)")
        #expect((after["tail_snr_db"] as? Double ?? -100) >= 15, "the song's end after the return: \(after)")
    }

    /// CLOCK_MONOTONIC now, ns: the clock of the presentation logs.
    static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The sender stopped for 5 s (`SIGSTOP`: a laptop's lid) and continued (issue 27): every room plays again
    /// soon after (the time is printed), still in sync; no receiver takes the stall for a new session or times it out. What was
    /// due while the sender was stopped is skipped: the playback keeps its timeline, as a live one does, and the
    /// sender logs what it skipped.
    @Test func aSenderStoppedFor5SecondsPlaysOnInSync() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 16, signal: "music")
        let play = try await rooms.playInKitchenAndBedroom(song)
        try await Task.sleep(for: .seconds(3))
        play.signal(SIGSTOP)
        try await Task.sleep(for: .seconds(5))
        let continued = Self.monotonicNow()
        play.signal(SIGCONT)
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        for room in ["Kitchen", "Bedroom"] {
            let log = rooms.lyred[room]!.stderr
            #expect(log.components(separatedBy: "': opus, latency").count == 2 && !log.contains("timed out"), "\(room): \(log)")
            let again = try rooms.firstAudio(room, after: continued)
            let after = again.map { Double(Int64($0) - Int64(continued)) / 1e9 }
            // The issue's figure is 1 s; measured 0.21–0.33 s on a quiet machine, 1.06 s with the test pinned to
            // one CPU beside two busy loops. The bound guards against a hang, not a figure: printed for the record.
            print("\(room) played again \(after.map { String(format: "%.3f", $0) } ?? "never") s after the sender continued")
            #expect(after.map { $0 < 3 } ?? false, "\(room) played again \(String(describing: after)) s after the sender continued")
        }
        // In sync before the stall and after it: every window that matches is within the bound. The windows of
        // the gap, where neither plays, are not matched. A window at an edge of the gap may hold what the two
        // rooms did differently there (one did not match in a CI run): at most two, and only around the stall,
        // never in the music before or after it.
        let sync = try await rooms.sync("Bedroom", "Kitchen")
        #expect((sync["windows"] as? Int ?? 0) >= 20 && (sync["max_us"] as? Double ?? .infinity) < 500, "sync: \(sync)")
        let odd = (sync["unmatched_at"] as? [Int] ?? []).map { Double(Int64($0) - Int64(continued)) / 1e9 }
        #expect(odd.count <= 2 && odd.allSatisfy { $0 > -6 && $0 < 1.5 }, "windows unmatched at \(odd) s from the sender continuing: \(sync)")
        // The timeline kept: the song's last half second is where its first places it, and what is missing is
        // about the 5 s the sender was stopped (the receivers played out what they held first), less than 2 s more
        // (a loaded machine adds a few gaps around it).
        let kitchen = try await rooms.compare(song, "Kitchen")
        let (head, tail) = (kitchen["head_lag_samples"] as? Double ?? 0, kitchen["tail_lag_samples"] as? Double ?? 1)
        let missing = Double(kitchen["gaps"] as? Int ?? 0) * 0.01
        // The sender says what it skipped when it caught up (the frames whose time to play had passed) and
        // whether any passed in silence, its reader not there yet: printed, and the figures beside it. About the
        // stall less the latency and the lead (4.65 s), plus the time the catch-up took: up to the 3 s bound above.
        let caughtUp = play.stderr.split(separator: "\n").filter { $0.contains("could no longer play") }
        print("lyre play: \(caughtUp)")
        let skipped = caughtUp.first.flatMap { line in line.firstRange(of: " ms) could").flatMap { end in
            Int(line[..<end.lowerBound].split(separator: "(").last ?? "") } }
        #expect(caughtUp.count == 1 && (3500...8000).contains(skipped ?? 0), "lyre play: \(play.stderr)")
        #expect(abs(head - tail) < 2 && missing > 3.5 && missing < 7, "Kitchen: \(kitchen); lyre play: \(caughtUp)")
    }

    /// `lyre group remove` mid-song: the room removed stops cleanly (its output is the input from its first
    /// sample to where it stopped, as clean at that end as anywhere), and the room left plays the input whole,
    /// first sample to last, undisturbed.
    @Test func aRoomRemovedEndsCleanlyAndTheOtherPlaysOnWhole() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        let sweep = rooms.network.scratch.appendingPathComponent("hard.wav").path
        let made = try await rooms.network.run(["python3", MultiRoomTests.audioTool, "sweep", sweep, "--rate", "48000",
                                                "--seconds", "6", "--no-fade"])
        #expect(made.status == 0, "\(made.stderr)")
        let play = try rooms.network.spawn(["lyre", "play", sweep, "--to", "Kitchen", "--to", "Bedroom", "--group-socket", rooms.groupSocket])
        #expect(await eventually { rooms.lyred["Bedroom"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Bedroom"]!.stderr)")
        try await Task.sleep(for: .seconds(2))
        let remove = try await rooms.network.run(["lyre", "group", "remove", "Bedroom", "--socket", rooms.groupSocket])
        #expect(remove.status == 0, "lyre group remove: \(remove.stderr)")
        // The last room cannot be removed (streaming.md §9.4): one line saying to stop instead, and it plays on.
        let last = try await rooms.network.run(["lyre", "group", "remove", "Kitchen", "--socket", rooms.groupSocket])
        #expect(last.status != 0 && last.stderr.contains("is the only room; stop the playback instead")
                && last.stderr.split(separator: "\n").count == 1, "lyre group remove Kitchen: \(last.stdout) \(last.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        let kitchen = try await rooms.compare(sweep, "Kitchen")
        StreamingTests.expectSameAudio(kitchen)
        StreamingTests.expectWhole(kitchen, lags: false)
        let bedroom = try await rooms.compare(sweep, "Bedroom", part: true)
        StreamingTests.expectSameAudio(bedroom)
        StreamingTests.expectWhole(bedroom, lags: false)
        let played = bedroom["matched_seconds"] as? Double ?? 0
        #expect(played > 1 && played < 5, "Bedroom held \(played) s of the 6 s song, removed after about 2: \(bedroom)")
    }

    /// streaming.md §7, a group ducks alike: music plays to Kitchen and Bedroom, and an announcement from
    /// another sender goes to both with `--duck`. In each room's output, separated into music and chime
    /// (Tools/peers/audio.py separate), the music is 15 dB down under the chime, down by its first sample and
    /// back over 300 ms after its last, the ramps placed alike against the chime (within two of the 10 ms
    /// windows the levels are read in, whose grid falls differently in each room; DuckEnvelopeTests holds the
    /// envelope to the sample); and the two outputs, chime and ducked music together, leave the rooms at the same instant.
    @Test func aGroupDucksAlikeInEveryRoom() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        // The chime from about 2.5 s to 4.5 s, and 4.5 s of the music after it.
        let song = try await StreamingTests.sweep(rooms.network, rate: 48000, seconds: 9, signal: "music")
        let chime = try await StreamingTests.sweep(rooms.network, rate: 48000, seconds: 2, signal: "full")
        let music = try await rooms.playInKitchenAndBedroom(song)
        try await Task.sleep(for: .seconds(2))
        let announce = try await rooms.network.run(["lyre", "play", chime, "--to", "Kitchen", "--to", "Bedroom", "--duck", "--name", "Doorbell",
                                                    "--group-socket", "off"], timeout: 30)
        #expect(announce.status == 0, "the announcement: \(announce.stderr)")
        try await music.waitForExit(timeout: 30)
        #expect(music.status == 0, "the music: \(music.stderr)")
        try await rooms.stop()
        var parts: [String: [String: Any]] = [:]
        for room in ["Kitchen", "Bedroom"] {
            #expect(rooms.lyred[room]!.stderr.contains("'Doorbell'") && rooms.lyred[room]!.stderr.contains("ducking it 15.0 dB")
                    && !rooms.lyred[room]!.stderr.contains("takes over"), "\(room): \(rooms.lyred[room]!.stderr)")
            let separated = try await rooms.json(["separate", song, chime, rooms.path(room, "wav")])
            print("\(room): the output separated: \(separated)")
            parts[room] = separated
            func figure(_ key: String) -> Double { separated[key] as? Double ?? .nan }
            #expect(abs(figure("main_db_before")) < 0.5 && abs(figure("main_db_after")) < 0.5, "\(room): \(separated)")
            #expect(abs(figure("main_db_during") + 15) < 0.5 && abs(figure("announce_gain_db")) < 0.5, "\(room): \(separated)")
            #expect(figure("ramp_down_ms") <= 10 && figure("ramp_up_ms") > 200 && figure("ramp_up_ms") < 400, "\(room): \(separated)")
        }
        for key in ["ramp_down_ms", "ramp_up_ms"] {
            let (kitchen, bedroom) = (parts["Kitchen"]?[key] as? Double ?? .nan, parts["Bedroom"]?[key] as? Double ?? -.infinity)
            #expect(abs(kitchen - bedroom) <= 20, "\(key): Kitchen \(kitchen), Bedroom \(bedroom)")
        }
        Self.expectInSync(try await rooms.sync("Kitchen", "Bedroom"))
    }

    /// A room's name is the user's text: one with a space, quotes and `=` joins, takes a volume and leaves a
    /// running playback through `lyre group` (each word crosses the group socket whole, streaming.md §9.4).
    @Test func roomNamesWithSpacesQuotesAndEqualsSignsWorkInAGroup() async throws {
        let odd = "Bed \"Room\" = 2"
        let rooms = try await Rooms([("Kitchen", []), (odd, [])])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 8)
        let play = try rooms.network.spawn(["lyre", "play", sweep, "--to", "Kitchen", "--group-socket", rooms.groupSocket])
        #expect(await eventually { rooms.lyred["Kitchen"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Kitchen"]!.stderr)")
        func listing() async throws -> [[String: Any]] {
            let list = try await rooms.network.run(["lyre", "group", "--json", "--socket", rooms.groupSocket])
            let object = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
            return try #require(object?["rooms"] as? [[String: Any]], "lyre group: \(list.stdout) \(list.stderr)")
        }
        let add = try await rooms.network.run(["lyre", "group", "add", odd, "--socket", rooms.groupSocket])
        #expect(add.status == 0, "lyre group add: \(add.stderr)")
        #expect(try await listing().compactMap { $0["name"] as? String } == ["Kitchen", odd])
        let volume = try await rooms.network.run(["lyre", "group", "volume", odd, "-10", "--socket", rooms.groupSocket])
        #expect(volume.status == 0, "lyre group volume: \(volume.stderr)")
        let level = try await listing().first { $0["name"] as? String == odd }?["volume"] as? Double
        #expect(level == -10, "\(String(describing: level))")
        // The group's volume is the loudest room's (streaming.md §9): Kitchen's 0 dB.
        let before = try await rooms.network.run(["lyre", "group", "--socket", rooms.groupSocket])
        #expect(before.stdout.hasPrefix("group volume 0.0 dB"), "\(before.stdout)")
        // The group's volume, a negative number alone, is a request word too, not an option.
        let groupVolume = try await rooms.network.run(["lyre", "group", "volume", "-3", "--socket", rooms.groupSocket])
        #expect(groupVolume.status == 0, "lyre group volume -3: \(groupVolume.stderr)")
        let table = try await rooms.network.run(["lyre", "group", "--socket", rooms.groupSocket])
        #expect(table.stdout.hasPrefix("group volume -3.0 dB") && table.stdout.contains(odd), "\(table.stdout)")
        // Moving it moves every room by the same 3 dB.
        let moved = try await listing()
        #expect(moved.first { $0["name"] as? String == "Kitchen" }?["volume"] as? Double == -3
                && moved.first { $0["name"] as? String == odd }?["volume"] as? Double == -13, "\(moved)")
        // A room's own volume key steps that room only (§9): Kitchen's `volume down`, one step of 1.875 dB.
        let key = try await rooms.network.run(["lyre", "remote", "volume", "down", "--socket", rooms.path("Kitchen", "sock")])
        #expect(key.status == 0, "lyre remote volume down: \(key.stderr)")
        let stepped = try await listing()
        #expect(stepped.first { $0["name"] as? String == "Kitchen" }?["volume"] as? Double == -4.875
                && stepped.first { $0["name"] as? String == odd }?["volume"] as? Double == -13, "\(stepped)")
        let remove = try await rooms.network.run(["lyre", "group", "remove", odd, "--socket", rooms.groupSocket])
        #expect(remove.status == 0, "lyre group remove: \(remove.stderr)")
        #expect(try await listing().compactMap { $0["name"] as? String } == ["Kitchen"])
        // Added again with a channel map (README: `lyre group add Bedroom=mono`): its receiver plays (L + R) / 2.
        let mono = try await rooms.network.run(["lyre", "group", "add", odd + "=mono", "--socket", rooms.groupSocket])
        #expect(mono.status == 0, "lyre group add \(odd)=mono: \(mono.stderr)")
        #expect(try await listing().compactMap { $0["name"] as? String } == ["Kitchen", odd])
        #expect(await eventually { rooms.lyred[odd]!.stderr.contains("channels mono") }, "\(rooms.lyred[odd]!.stderr)")
        #expect(try await rooms.network.run(["lyre", "group", "remove", odd, "--socket", rooms.groupSocket]).status == 0)
        // A quote left open is refused with a line that says how to write one.
        let open = try await rooms.network.run(["python3", "-c", """
            import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'remove "Bed\\n')
            print(s.makefile().readline().strip())
            """, rooms.groupSocket])
        #expect(open.stdout.hasPrefix("error") && open.stdout.contains("quoted word is not closed"), "\(open.stdout) \(open.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        #expect(play.stderr.contains("'\(odd)' joined") && play.stderr.contains("'\(odd)' removed"), "\(play.stderr)")
    }

    /// streaming.md §9.1: a room that another sender takes over leaves this playback (`takenOver`, said with
    /// who took it) and is not waited for; the other room plays on to the end, whole.
    @Test func aRoomTakenOverLeavesTheGroupAlone() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Bedroom", [])])
        defer { rooms.network.close() }
        let song = try await rooms.sweep(seconds: 8)
        let play = try await rooms.playInKitchenAndBedroom(song)
        let chime = try await rooms.sweep(seconds: 1, signal: "music")
        let other = try await rooms.network.run(["lyre", "play", chime, "--to", "Bedroom", "--name", "Bob", "--group-socket", "off"])
        #expect(other.status == 0, "the other sender: \(other.stderr)")
        #expect(play.stderr.contains("'Bob' took over 'Bedroom'"), "lyre play: \(play.stderr)")
        #expect(try await rooms.groupStates() == ["Kitchen playing"], "a room taken over is not waited for")
        try await rooms.expectPlayedWhole(play, song, in: "Kitchen")
    }

    /// One room killed while the song plays: it leaves the playback alone, and the other plays on to the
    /// end without a gap.
    @Test func roomLostLeavesTheOthersPlaying() async throws {
        let rooms = try await Rooms([("Kitchen", []), ("Garage", [])])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 5)
        let play = try rooms.network.spawn(["lyre", "play", sweep, "--to", "Kitchen", "--to", "Garage", "--group-socket", "off"])
        #expect(await eventually { rooms.lyred["Garage"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Garage"]!.stderr)")
        try await Task.sleep(for: .seconds(1.5))
        rooms.lyred["Garage"]!.signal(SIGKILL)
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        #expect(play.stderr.contains("'Garage' is no longer available; playing on in 'Kitchen'"), "\(play.stderr)")
        try await rooms.stop()
        StreamingTests.expectSameAudio(try await rooms.compare(sweep, "Kitchen"))
    }

    /// The rooms' RTP leaves from one socket; a send that fails for one room (a route that prohibits its
    /// address: EACCES, which makes NIO close the socket) must not silence the others, which go on from their
    /// own sockets. The prohibited room stops; the other plays to the end without a gap.
    @Test func aRoomWhoseSendsFailLeavesTheOthersPlaying() async throws {
        let rooms = try await Rooms([("Porch", []), ("Shed", [])], onHosts: true)
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 6)
        let (porch, shed) = try (#require(rooms.hosts["Porch"]), #require(rooms.hosts["Shed"]))
        let play = try rooms.network.spawn(["lyre", "play", sweep, "--host", "\(porch.ipv4):7730", "--host", "\(shed.ipv4):7731",
                                            "--group-socket", "off", "--log-level", "info"])
        #expect(await eventually { rooms.lyred["Shed"]!.stderr.contains("now playing:") }, "\(rooms.lyred["Shed"]!.stderr)")
        try await Task.sleep(for: .seconds(1.5))
        let prohibit = try await rooms.network.shell("ip route add prohibit \(shed.ipv4)/32")
        #expect(prohibit.status == 0, "\(prohibit.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        StreamingTests.expectSameAudio(try await rooms.compare(sweep, "Porch"))
        // The route did cut Shed off: it played only the part before it.
        let cut = try await rooms.compare(sweep, "Shed")
        #expect((cut["gaps"] as? Int ?? 0) > 0, "Shed played on after its address was prohibited: \(cut)")
    }

    /// `--output-delay`, changed at run time through the control socket: that room plays exactly that much
    /// earlier than the other, so that what is plugged into it (an AV receiver) brings it back in sync.
    /// discovery.md §1: an embedded responder whose host name another host holds (with other addresses) takes
    /// avahi's alternative. Two hosts of the test network share this machine's host name; each receiver runs
    /// its own embedded responder, so one of them becomes HOST-2.local.
    @Test func embeddedRespondersOnTwoHostsOfOneNameTakeTheAlternative() async throws {
        let rooms = try await Rooms([("Den", []), ("Hall", [])], onHosts: true)
        defer { rooms.network.close() }
        let host = try await rooms.network.run(["hostname"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let renamed = await eventually {
            rooms.lyred.values.filter { $0.stderr.contains("host name '\(host)' is taken; using '\(host)-2'") }.count == 1
        }
        #expect(renamed, "\(rooms.lyred.mapValues(\.stderr))")
    }

    /// streaming.md §6.3: an output delay changed while a room plays takes effect at the next block, as a jump:
    /// in the presentation log every block before the change is scheduled when it leaves, every block from
    /// the next one on 40 ms after it leaves, and none in between.
    @Test func anOutputDelayChangedWhilePlayingJumpsAtTheNextBlock() async throws {
        let rooms = try await Rooms([("Lounge", [])])
        defer { rooms.network.close() }
        let sweep = try await rooms.sweep(seconds: 5)
        let play = try rooms.network.spawn(["lyre", "play", sweep, "--to", "Lounge", "--group-socket", "off"])
        #expect(await eventually { (try? rooms.firstAudio("Lounge")) != nil }, "\(rooms.lyred["Lounge"]!.stderr)")
        try await Task.sleep(for: .seconds(1.5))
        let asked = Self.monotonicNow()
        let set = try await rooms.network.run(["lyre", "remote", "output-delay", "40", "--socket", rooms.path("Lounge", "sock")])
        let answered = Self.monotonicNow()
        #expect(set.status == 0, "lyre remote output-delay: \(set.stdout) \(set.stderr)")
        try await play.waitForExit(timeout: 30)
        try await rooms.stop()
        let blocks = PresentedBlock.parse(try String(contentsOfFile: rooms.path("Lounge", "csv"), encoding: .utf8))
            .filter { $0.audioFrames > 0 }.map { ($0.presented, $0.scheduled - Int64($0.presented)) }
        let ms: Int64 = 1_000_000
        // The WAV sink makes each block 10 ms before it leaves (WAVFileOutput.outputLatency), and lyred reads the
        // delay as it makes the block: a block that leaves over 10 ms after the answer was made after the change.
        // (Until 2026-12-07 lyred read it before waiting for room, a 50 ms block earlier: in a fresh clone's run
        // the block 52 ms after the answer still carried the old delay.)
        let before = blocks.filter { $0.0 < asked }, after = blocks.filter { $0.0 > answered + 11 * UInt64(ms) }
        #expect(before.count > 10 && before.allSatisfy { abs($0.1) < ms }, "before: \(before.map(\.1).max() ?? 0) ns at most")
        #expect(after.count > 10 && after.allSatisfy { abs($0.1 - 40 * ms) < ms }, "after: \(after.map { "\(($0.0 - answered) / UInt64(ms)):\($0.1 / 1000)" })")
        #expect(blocks.allSatisfy { abs($0.1) < ms || abs($0.1 - 40 * ms) < ms }, "a block between the two: \(blocks.map(\.1).filter { $0 >= ms && $0 <= 39 * ms })")
    }

    @Test func outputDelayMovesTheRoomByThatMuch() async throws {
        let rooms = try await Rooms([("Den", []), ("Lounge", ["--output-delay", "25"])])
        defer { rooms.network.close() }
        let set = try await rooms.network.run(["lyre", "remote", "output-delay", "40", "--socket", rooms.path("Lounge", "sock")])
        #expect(set.status == 0 && set.stdout.contains("40"), "lyre remote output-delay: \(set.stdout) \(set.stderr)")
        let sweep = try await rooms.sweep(seconds: 4)
        let play = try await rooms.network.run(["lyre", "play", sweep, "--to", "Den", "--to", "Lounge", "--group-socket", "off"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rooms.stop()
        Self.expectInSync(try await rooms.sync("Den", "Lounge", expectMilliseconds: -40), expectMean: -40_000)
    }
}
