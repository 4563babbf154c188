import Foundation
import Testing

/// Now playing and remote control end to end (Protocol/now-playing.md), with real clients: `lyre play` as
/// the sender, lyred with its control socket and MPRIS on the test network's own D-Bus session bus,
/// `lyre remote`, playerctl and dbus-send at the receiver's side, and a raw RTSP peer for bad input.
@Suite(.serialized)
struct RemoteControlTests {
    static let audioTool = TestNetwork.tools + "/peers/audio.py"

    struct Rig {
        let network: TestNetwork
        let lyred: Spawned
        let presentationLog: String

        init() async throws {
            for tool in ["playerctl", "dbus-send", "ffmpeg"] where TestNetwork.which(tool) == nil {
                throw TestNetworkError("\(tool) is missing: run Tools/test, which installs everything the tests need")
            }
            network = try TestNetwork()
            presentationLog = network.scratch.appendingPathComponent("presentation.csv").path
            let wav = network.scratch.appendingPathComponent("out.wav").path
            lyred = try network.spawn(
                [TestNetwork.binaries + "/lyred", "--name", "Speaker", "--port", "7730", "--state-dir", "/run/lyred",
                 "--output", "wav:\(wav)", "--presentation-log", presentationLog, "--mpris", "session", "--log-level", "info"],
                name: "lyred")
            let up = await eventually { lyred.stderr.contains("advertised as") && lyred.stderr.contains("MPRIS on the session bus") }
            #expect(up, "lyred did not come up with MPRIS: \(lyred.stderr)")
        }

        /// `lyre remote WORDS...`.
        func remote(_ words: String...) async throws -> Spawned {
            try await network.run(["lyre", "remote"] + words, timeout: 15)
        }

        /// The receiver's now-playing JSON.
        func nowPlaying() async throws -> [String: Any] {
            let result = try await remote("now-playing", "--json")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            return try #require(json, "now-playing: \(result.stdout) \(result.stderr)")
        }

        func waitForNowPlaying(timeout: Double = 10, _ condition: ([String: Any]) -> Bool) async -> [String: Any]? {
            var last: [String: Any]?
            let held = await eventually(timeout: timeout) {
                last = try? await nowPlaying()
                return last.map(condition) ?? false
            }
            return held ? last : nil
        }

        func playerctl(_ arguments: String...) async throws -> Spawned {
            try await network.run(["playerctl", "-p", "lyred"] + arguments, timeout: 15)
        }

        func mprisPropertyContains(_ name: String, _ text: String) async -> Bool {
            guard let value = try? await mprisProperty(name) else { return false }
            return value.contains(text)
        }

        func playerctlPrints(_ arguments: [String], prefix: String) async -> Bool {
            guard let result = try? await network.run(["playerctl", "-p", "lyred"] + arguments, timeout: 15) else { return false }
            return result.stdout.hasPrefix(prefix)
        }

        /// An MPRIS property, as dbus-send prints it.
        func mprisProperty(_ name: String) async throws -> String {
            let result = try await network.run([
                "dbus-send", "--session", "--print-reply", "--dest=org.mpris.MediaPlayer2.lyred", "/org/mpris/MediaPlayer2",
                "org.freedesktop.DBus.Properties.Get", "string:org.mpris.MediaPlayer2.Player", "string:\(name)",
            ])
            return result.stdout.split(separator: "\n").dropFirst().joined(separator: " ").trimmingCharacters(in: .whitespaces)
        }
    }

    /// Tagged FLAC tracks of a tone, 44.1 kHz (so resampling is on the path); the first with a PNG cover
    /// embedded. Returns the files and the cover.
    static func makeTracks(_ network: TestNetwork, seconds: [Int]) async throws -> (files: [String], cover: String) {
        let dir = network.scratch.path
        let cover = dir + "/cover.png"
        var script = "set -e; cd '\(dir)'; ffmpeg -v error -y -f lavfi -i color=c=red:s=48x48 -frames:v 1 cover.png\n"
        let names = ["One", "Two", "Three", "Four"]
        for (i, length) in seconds.enumerated() {
            script += """
                ffmpeg -v error -y -f lavfi -i sine=frequency=\(330 + 110 * i):duration=\(length):sample_rate=44100 -ac 2 \
                -metadata title=\(names[i]) -metadata artist=Ann -metadata album=Tests -metadata tracknumber=\(i + 1)/\(seconds.count) t\(i).flac

                """
        }
        script += "ffmpeg -v error -y -i t0.flac -i cover.png -map 0:a -map 1:v -c copy -disposition:v attached_pic t0c.flac && mv t0c.flac t0.flac\n"
        let made = try await network.shell(script, timeout: 60)
        #expect(made.status == 0, "ffmpeg: \(made.stderr)")
        return ((0..<seconds.count).map { "\(dir)/t\($0).flac" }, cover)
    }

    static func position(_ nowPlaying: [String: Any]?) -> Double { nowPlaying?["position"] as? Double ?? -1 }

    @Test func nowPlayingArrivesWithExactArtworkAndAPositionThatNeedsNoUpdates() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (files, cover) = try await Self.makeTracks(rig.network, seconds: [14, 4])
        let play = try rig.network.spawn(["lyre", "play"] + files + ["--to", "Speaker", "--latency", "100"], name: "lyre-play")

        let first = await rig.waitForNowPlaying { $0["title"] as? String == "One" }
        #expect(first != nil, "no now-playing at the receiver: \(rig.lyred.stderr)")
        #expect(first?["artist"] as? String == "Ann" && first?["album"] as? String == "Tests", "\(first ?? [:])")
        #expect(first?["queueCount"] as? Int == 2 && first?["state"] as? String == "playing", "\(first ?? [:])")
        // The track number and count from the file's tags, and its length.
        #expect(first?["trackNumber"] as? Int == 1 && first?["trackCount"] as? Int == 2, "\(first ?? [:])")
        #expect(abs((first?["duration"] as? Double ?? 0) - 14) < 0.05, "length: \(first ?? [:])")
        #expect(rig.lyred.stderr.contains("now playing: 'One' by Ann"), "the log shows what plays")

        // MPRIS, read by playerctl: tags, length, and the artwork file, byte for byte.
        let metadata = try await rig.playerctl("metadata", "--format", "{{title}}|{{artist}}|{{album}}|{{mpris:length}}|{{mpris:artUrl}}")
        let fields = metadata.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 5 && Array(fields.prefix(4)) == ["One", "Ann", "Tests", "14000000"], "playerctl: \(metadata.stdout) \(metadata.stderr)")
        let artURL = fields.count == 5 ? fields[4] : ""
        #expect(artURL.hasPrefix("file://"), "mpris:artUrl: \(artURL)")
        let same = try await rig.network.run(["cmp", cover, String(artURL.dropFirst("file://".count))])
        #expect(same.status == 0, "the artwork lyred wrote differs from the cover: \(same.stdout) \(same.stderr)")
        let status = try await rig.playerctl("status")
        #expect(status.stdout.hasPrefix("Playing"), "playerctl status: \(status.stdout) \(status.stderr)")

        // After 10 s, the extrapolated position matches what was heard: the receiver's position at the
        // moment frame 10 s × 48000 was presented is within 50 ms of 10 s, from the one update sent at start.
        let late = await rig.waitForNowPlaying(timeout: 20) { Self.position($0) >= 10.6 }
        let sample = try #require(late, "the position never passed 10 s")
        let heardRun = try await rig.network.run(["python3", Self.audioTool, "heard", rig.presentationLog, "--frame", "480000"])
        let heard = try #require((try? JSONSerialization.jsonObject(with: Data(heardRun.stdout.utf8))) as? [String: Any], "audio.py heard: \(heardRun.stderr)")
        let heardAt = try #require(heard["presented_ns"] as? Int)
        let at = try #require(sample["at"] as? Int)
        let estimate = Self.position(sample) - Double(at - heardAt) / 1e9
        #expect(abs(estimate - 10) < 0.05, "position at the moment 10.000 s was heard: \(estimate) s")
        #expect(sample["updates"] as? Int == 1, "the progress bar needed updates: \(sample)")

        // The next item is shown when it starts to play, with its own tags.
        let second = await rig.waitForNowPlaying(timeout: 10) { $0["title"] as? String == "Two" }
        #expect(second?["queueIndex"] as? Int == 1 && Self.position(second) < 3, "\(second ?? [:])")
        try await play.waitForExit(timeout: 20)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        let idle = await rig.waitForNowPlaying { $0["state"] as? String == "idle" }
        #expect(idle != nil, "the receiver still shows a session")
    }

    /// An MP3's cover (ID3v2 APIC) is sent byte for byte, and --title / --artist override its tags.
    @Test func mp3CoverArtAndOverrides() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let dir = rig.network.scratch.path
        let made = try await rig.network.shell("""
            set -e; cd '\(dir)'
            ffmpeg -v error -y -f lavfi -i color=c=blue:s=40x40 -frames:v 1 picture.jpg
            ffmpeg -v error -y -f lavfi -i sine=frequency=500:duration=6:sample_rate=44100 -i picture.jpg -map 0:a -map 1:v \
              -c:a libmp3lame -c:v copy -id3v2_version 3 -disposition:v attached_pic -metadata title=Tagged song.mp3
            """, timeout: 60)
        #expect(made.status == 0, "ffmpeg: \(made.stderr)")
        let play = try rig.network.spawn(["lyre", "play", dir + "/song.mp3", "--to", "Speaker", "--title", "Given", "--artist", "Someone",
                                          "--album", "Given Album", "--name", "Den Laptop"], name: "lyre-play")
        let shown = await rig.waitForNowPlaying { $0["title"] as? String == "Given" && $0["artwork"] != nil }
        #expect(shown?["artist"] as? String == "Someone" && shown?["album"] as? String == "Given Album", "\(shown ?? [:]) \(play.stderr)")
        #expect(shown?["artworkType"] as? String == "image/jpeg")
        // now-playing.md §5: who plays, what it accepts and its skip interval (§4.1: announced with the list;
        // lyre play's is 15 s).
        #expect(shown?["sender"] as? String == "Den Laptop", "\(shown ?? [:])")
        let commands = shown?["commands"] as? [String] ?? []
        #expect(Set(["play", "pause", "togglePlayPause", "changePlaybackPosition", "skipForward", "skipBackward"]).isSubset(of: commands), "\(commands)")
        #expect((shown?["skipInterval"] as? NSNumber)?.doubleValue == 15, "\(shown ?? [:])")
        // And as one line for a person: `▶ Title — Artist (Album)  0:01 / 0:06  from Sender`.
        let line = try await rig.remote("now-playing")
        #expect(line.status == 0 && line.stdout.wholeMatch(of: /▶ Given — Someone \(Given Album\)  0:0\d \/ 0:06  from Den Laptop\n/) != nil,
                "lyre remote now-playing: \(line.stdout) \(line.stderr)")
        let same = try await rig.network.run(["cmp", dir + "/picture.jpg", shown?["artwork"] as? String ?? "/nonexistent"])
        #expect(same.status == 0, "the MP3's cover differs from what lyred wrote: \(same.stdout) \(same.stderr)")
        // now-playing.md §2: the file is readable only by lyred's user, named by a hash of its bytes (FNV-1a,
        // so a changed image gets a new name), and removed when the session ends.
        let artwork = shown?["artwork"] as? String ?? "/nonexistent"
        let mode = try await rig.network.run(["stat", "-c", "%a", artwork])
        #expect(mode.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "600", "artwork mode \(mode.stdout)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/picture.jpg")))
        let hash = bytes.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        #expect(artwork.hasSuffix("/artwork-\(String(hash, radix: 16)).jpg"), "\(artwork)")
        try await play.waitForExit(timeout: 20)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        #expect(await eventually { !FileManager.default.fileExists(atPath: artwork) }, "\(artwork) is still there after the session")
    }

    @Test func pauseSetsRateZeroAndFreezesThePosition() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (files, _) = try await Self.makeTracks(rig.network, seconds: [30])
        let play = try rig.network.spawn(["lyre", "play"] + files + ["--to", "Speaker"], name: "lyre-play")
        #expect(await rig.waitForNowPlaying { Self.position($0) > 1.5 } != nil, "not playing: \(play.stderr)")

        let pause = try await rig.remote("pause")
        #expect(pause.status == 0, "lyre remote pause: \(pause.stderr)")
        let paused = await rig.waitForNowPlaying { $0["state"] as? String == "paused" }
        #expect(paused?["rate"] as? Double == 0, "\(paused ?? [:])")
        let frozen = Self.position(paused)
        let statsBefore = try await rig.remote("stats")
        // Paused for 12 s, past the 10 s a receiver waits for a silent sender: the sender keeps its session with
        // GET_PARAMETER (streaming.md §7), so it is not timed out.
        try await Task.sleep(for: .seconds(12))
        #expect(!rig.lyred.stderr.contains("timed out") && !rig.lyred.stderr.contains("ended:"), "\(rig.lyred.stderr)")
        let later = try await rig.nowPlaying()
        #expect(abs(Self.position(later) - frozen) < 0.001, "the position moved while paused: \(frozen) → \(Self.position(later))")
        let mprisStatus = try await rig.playerctl("status")
        #expect(mprisStatus.stdout.hasPrefix("Paused"), "playerctl status: \(mprisStatus.stdout) \(mprisStatus.stderr)")
        let mprisPosition = try await rig.playerctl("position")
        #expect(abs((Double(mprisPosition.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1) - frozen) < 0.01,
                "MPRIS Position \(mprisPosition.stdout) vs \(frozen)")
        // No audio flows while paused.
        let statsAfter = try await rig.remote("stats")
        #expect(Self.received(statsBefore.stdout) == Self.received(statsAfter.stdout), "\(statsBefore.stdout) → \(statsAfter.stdout)")

        #expect(try await rig.remote("play").status == 0)
        let resumed = await rig.waitForNowPlaying { $0["state"] as? String == "playing" && Self.position($0) > frozen + 0.5 }
        #expect(resumed?["rate"] as? Double == 1, "did not resume: \(resumed ?? [:])")
        #expect(abs(Self.position(resumed) - frozen) < 3, "resumed elsewhere: \(frozen) → \(Self.position(resumed))")
        #expect(try await rig.remote("stop").status == 0)
        try await play.waitForExit(timeout: 10)
        #expect(play.status == 0, "lyre play after stop: \(play.stderr)")
    }

    static func received(_ stats: String) -> Int? {
        stats.split(separator: " ").first { $0.hasPrefix("received=") }.flatMap { Int($0.dropFirst(9).trimmingCharacters(in: CharacterSet(charactersIn: ";,"))) }
    }

    /// And now-playing.md's opening: the commands travel on the session's own RTSP connection, with no port of
    /// the sender's own and no bearer token. tcpdump prints what lyred sends on that connection: each command is a
    /// SET_PARAMETER with no header but CSeq, Session, Content-Type and Content-Length; and `lyre play` listens on
    /// no TCP port (ss).
    @Test func everyCommandFromLyreRemoteReachesTheSender() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (files, _) = try await Self.makeTracks(rig.network, seconds: [40, 40, 40])
        let tcpdump = try rig.network.spawn(["tcpdump", "-i", "lo", "-l", "-A", "-s", "0", "tcp src port 7730"], name: "tcpdump")
        #expect(await eventually { tcpdump.stderr.contains("listening on") }, "\(tcpdump.stderr)")
        let play = try rig.network.spawn(["lyre", "play"] + files + ["--to", "Speaker"], name: "lyre-play")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "One" && Self.position($0) > 0.5 } != nil, "\(play.stderr)")
        let listening = try await rig.network.run(["ss", "-Htlnp"])
        #expect(listening.status == 0 && listening.stdout.contains("\"lyred\"") && !listening.stdout.contains("((\"lyre\","),
                "lyre play listens on a TCP port: \(listening.stdout) \(listening.stderr)")

        func expectOK(_ words: String..., sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let result = try await rig.network.run(["lyre", "remote"] + words, timeout: 15)
            #expect(result.status == 0, "lyre remote \(words.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
        }
        try await expectOK("next")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "Two" } != nil, "next did not move on")
        try await expectOK("previous")  // at the start of an item: the one before
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "One" } != nil, "previous did not go back")
        try await expectOK("seek", "20")
        #expect(await rig.waitForNowPlaying { abs(Self.position($0) - 20) < 1 } != nil, "seek 20")
        try await expectOK("skip", "+5")
        #expect(await rig.waitForNowPlaying { abs(Self.position($0) - 25) < 1.5 } != nil, "skip +5")
        try await expectOK("skip", "-10")
        #expect(await rig.waitForNowPlaying { abs(Self.position($0) - 15) < 1.5 } != nil, "skip -10")
        try await expectOK("toggle")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "paused" } != nil, "toggle to pause")
        try await expectOK("toggle")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "playing" } != nil, "toggle to play")
        try await expectOK("volume", "down")
        #expect(await rig.waitForNowPlaying { $0["volume"] as? Double == -1.875 } != nil, "volume down: the sender sets the volume")
        try await expectOK("volume", "up")
        #expect(await rig.waitForNowPlaying { $0["volume"] as? Double == 0 } != nil, "volume up")

        // Refused: a command the sender has disabled (lyre play cannot change the rate) and a bad argument.
        let rate = try await rig.remote("rate", "1.5")
        #expect(rate.status != 0 && rate.stderr.contains("does not accept changePlaybackRate"), "rate: \(rate.stderr)")
        let seekPast = try await rig.remote("seek", "500")
        #expect(seekPast.status != 0 && seekPast.stderr.contains("commandFailed"), "seek past the end: \(seekPast.stderr)")
        let unknown = try await rig.remote("frobnicate")
        #expect(unknown.status != 0 && unknown.stderr.contains("unknown command 'frobnicate'"), "\(unknown.stderr)")

        // On the last item there is no next: the sender withdraws it, and the receiver refuses it.
        try await expectOK("next")
        try await expectOK("next")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "Three" } != nil)
        let noNextOffered = await eventually { await rig.mprisPropertyContains("CanGoNext", "boolean false") }
        #expect(noNextOffered, "CanGoNext stays true")
        let noNext = try await rig.remote("next")
        #expect(noNext.status != 0 && noNext.stderr.contains("does not accept nextTrack"), "\(noNext.stderr)")

        try await expectOK("stop")
        try await play.waitForExit(timeout: 10)
        #expect(play.status == 0, "lyre play after stop: \(play.stderr)")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "idle" } != nil)

        tcpdump.signal(SIGKILL)
        try await tcpdump.waitForExit(timeout: 10)
        // Each SET_PARAMETER lyred sent that carries a command, as tcpdump -A prints it: its header names.
        let commands = tcpdump.stdout.components(separatedBy: "SET_PARAMETER rtsp").dropFirst().filter { $0.contains("remote-command:") }
        let names = commands.map { request in
            Set(request.split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
                .prefix { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
                .compactMap { $0.split(separator: ":").first.map { $0.lowercased() } })
        }
        #expect(commands.count >= 10, "commands on the session's connection: \(commands.count)")
        #expect(names.allSatisfy { $0.isSubset(of: ["cseq", "session", "content-type", "content-length"]) && $0.contains("session") },
                "a command's headers: \(Set(names.flatMap { $0 }).sorted())")
    }

    @Test func mprisClientsDriveTheSender() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (files, _) = try await Self.makeTracks(rig.network, seconds: [40, 40])
        let play = try rig.network.spawn(["lyre", "play"] + files + ["--to", "Speaker", "--log-level", "info"], name: "lyre-play")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "One" && Self.position($0) > 0.5 } != nil, "\(play.stderr)")
        #expect(try await rig.mprisProperty("CanGoNext").contains("boolean true"))
        #expect(try await rig.mprisProperty("CanSeek").contains("boolean true"))

        func expectOK(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let result = try await rig.network.run(["playerctl", "-p", "lyred"] + arguments, timeout: 15)
            #expect(result.status == 0, "playerctl \(arguments.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
        }
        try await expectOK("next")
        let next = await rig.waitForNowPlaying { $0["title"] as? String == "Two" } != nil
        #expect(next, "Next; lyred: \(rig.lyred.stderr.suffix(4000))\nlyre play: \(play.stderr.suffix(4000))\n\(next ? "" : play.threadStacks())")
        let titleShown = await eventually { await rig.playerctlPrints(["metadata", "title"], prefix: "Two") }
        #expect(titleShown, "MPRIS metadata after Next")
        // Previous as media players do it: more than 3 s into an item it starts the item again; within 3 s it
        // goes back to the item before.
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "Two" && Self.position($0) > 3.2 } != nil, "Two plays on")
        try await expectOK("previous")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "Two" && Self.position($0) < 2 } != nil, "Previous restarts Two")
        try await expectOK("previous")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "One" } != nil, "Previous again")
        try await expectOK("pause")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "paused" } != nil, "Pause")
        try await expectOK("play")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "playing" } != nil, "Play")
        try await expectOK("play-pause")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "paused" } != nil, "PlayPause")
        try await expectOK("play-pause")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "playing" } != nil, "PlayPause again")
        try await expectOK("position", "20")  // SetPosition
        #expect(await rig.waitForNowPlaying { abs(Self.position($0) - 20) < 1 } != nil, "SetPosition 20")
        try await expectOK("position", "5-")  // Seek −5 s
        #expect(await rig.waitForNowPlaying { abs(Self.position($0) - 15) < 1.5 } != nil, "Seek -5")
        let seek = try await rig.network.run([
            "dbus-send", "--session", "--print-reply", "--dest=org.mpris.MediaPlayer2.lyred", "/org/mpris/MediaPlayer2",
            "org.mpris.MediaPlayer2.Player.Seek", "int64:10000000",
        ])
        #expect(seek.status == 0, "dbus-send Seek: \(seek.stderr)")
        #expect(await rig.waitForNowPlaying { abs(Self.position($0) - 25) < 1.5 } != nil, "Seek +10")
        // Volume set by a client is the receiver's slider (changeVolume): 0.5 is -15 dB, read back from both sides.
        try await expectOK("volume", "0.5")
        #expect(await rig.waitForNowPlaying { ($0["volume"] as? Double).map { abs($0 + 15) < 0.01 } ?? false } != nil, "Volume 0.5")
        #expect(await eventually { await rig.mprisPropertyContains("Volume", "double 0.5") }, "MPRIS Volume after setting it")

        // A refused command is a D-Bus error: Next on the last item, which the sender has disabled.
        try await expectOK("next")
        let lastHasNoNext = await eventually { await rig.mprisPropertyContains("CanGoNext", "boolean false") }
        #expect(lastHasNoNext, "CanGoNext on the last item")
        let refused = try await rig.network.run([
            "dbus-send", "--session", "--print-reply", "--dest=org.mpris.MediaPlayer2.lyred", "/org/mpris/MediaPlayer2",
            "org.mpris.MediaPlayer2.Player.Next",
        ])
        #expect(refused.status != 0 && refused.stderr.contains("org.mpris.MediaPlayer2.Lyre.CommandDisabled"), "Next: \(refused.stderr)")

        try await expectOK("stop")
        try await play.waitForExit(timeout: 10)
        #expect(play.status == 0, "lyre play after Stop: \(play.stderr)")
    }

    @Test func badInputIsRefusedAndTheStreamGoesOn() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        // Only lyred's user may use its control socket.
        let mode = try await rig.network.run(["stat", "-c", "%a %F", "/run/lyred/control.sock"])
        #expect(mode.stdout.hasPrefix("600 socket"), "control socket: \(mode.stdout) \(mode.stderr)")

        let abuse = try await rig.network.run(["python3", TestNetwork.tools + "/peers/now-playing-abuse.py", "127.0.0.1", "7730"], timeout: 60)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(abuse.stdout.utf8)) as? [String: Any], "\(abuse.stderr)")
        let results = try #require(report["results"] as? [String: [String: Any]])
        let expected = ["artwork_over_cap": 413, "artwork_not_image": 415, "invalid_utf8": 400, "huge_body": 413, "not_json": 400,
                        "missing_rate": 400, "unknown_command": 451, "command_to_receiver": 403, "good": 200]
        for (name, status) in expected {
            #expect(results[name]?["status"] as? Int == status, "\(name): \(results[name] ?? [:])")
            let reason = results[name]?["reason"] as? String ?? ""
            if status != 200 { #expect(reason.count > 0, "\(name) has no Lyre-Error") }
        }
        #expect(report["connection_alive"] as? Bool == true, "\(report)")
        #expect(rig.lyred.stderr.contains("now playing: 'Still here'"), "the good update after the bad ones was not taken")
        // The stream was unaffected: everything sent was received, nothing late or lost.
        let stats = rig.lyred.stderr.split(separator: "\n").last { $0.contains("session from 'abuser' stats") }.map(String.init) ?? ""
        let sent = report["packets_sent"] as? Int ?? 0
        #expect(sent > 100 && stats.contains("received=\(sent)") && stats.contains("late=0") && stats.contains("lost=0"),
                "sent \(sent); \(stats)")

        // The sender refuses artwork over the cap before sending anything.
        let sound = rig.network.scratch.appendingPathComponent("short.wav").path
        #expect(try await rig.network.run(["python3", Self.audioTool, "sweep", sound, "--seconds", "1"]).status == 0)
        let big = rig.network.scratch.appendingPathComponent("big.png").path
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += [UInt8](repeating: 0, count: 1_200_000)
        try Data(png).write(to: URL(fileURLWithPath: big))
        let refused = try await rig.network.run(["lyre", "play", sound, "--artwork", big, "--to", "Speaker"])
        #expect(refused.status != 0 && refused.stderr.contains("over the limit of 1048576"), "\(refused.stderr)")
    }

    /// A receiver renamed while it runs (the page, `lyre remote name`) is renamed on D-Bus too: MPRIS clients
    /// read the new `Identity`, and are told with `PropertiesChanged`.
    @Test func aRenamedReceiverIsRenamedOnMPRIS() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        func identity() async throws -> String {
            let result = try await rig.network.run([
                "dbus-send", "--session", "--print-reply", "--dest=org.mpris.MediaPlayer2.lyred", "/org/mpris/MediaPlayer2",
                "org.freedesktop.DBus.Properties.Get", "string:org.mpris.MediaPlayer2", "string:Identity",
            ])
            return result.stdout
        }
        #expect(try await identity().contains("\"Lyre receiver Speaker\""))
        let monitor = try rig.network.spawn(["dbus-monitor", "--session", "type='signal',interface='org.freedesktop.DBus.Properties'"], name: "dbus-monitor")
        try await Task.sleep(for: .milliseconds(500))
        let renamed = try await rig.network.run(["lyre", "remote", "name", "Den \"Two\"", "--socket", "/run/lyred/control.sock"])
        #expect(renamed.status == 0, "lyre remote name: \(renamed.stderr)")
        let shown = try await eventually { try await identity().contains("Lyre receiver Den \"Two\"") }
        let now = try await identity()
        #expect(shown, "Identity: \(now)")
        #expect(await eventually { monitor.stdout.contains("Identity") && monitor.stdout.contains("Lyre receiver Den") }, "dbus-monitor: \(monitor.stdout)")
    }

    /// The session bus restarted while a file plays (issue 27): lyred's MPRIS player is back on the new bus,
    /// showing what plays, and takes commands again; the playback is not touched.
    @Test func theMPRISPlayerComesBackWhenTheBusRestarts() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (files, _) = try await Self.makeTracks(rig.network, seconds: [20])
        let play = try rig.network.spawn(["lyre", "play"] + files + ["--to", "Speaker"], name: "lyre-play")
        #expect(await rig.waitForNowPlaying { $0["title"] as? String == "One" } != nil, "\(play.stderr)")
        #expect(try await rig.network.run(["playerctl", "-p", "lyred", "status"]).stdout.contains("Playing"))
        let bus = "/run/lyre-netns/session-bus"
        // The old daemon killed outright (it ignores SIGTERM here); a new one on the same address, in the foreground
        // (the network ends it).
        let killed = try await rig.network.shell("p=$(pgrep -f 'dbus-daemon --[s]ession'); [ -n \"$p\" ] || exit 3; kill -KILL $p; sleep 0.5; rm -f \(bus)")
        #expect(killed.status == 0, "stopping the bus: \(killed.stderr)")
        let daemon = try rig.network.spawn(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=unix:path=\(bus)"])
        #expect(await eventually { rig.lyred.stderr.contains("MPRIS back on the session bus") }, "lyred: \(rig.lyred.stderr)")
        #expect(daemon.isRunning, "dbus-daemon: \(daemon.stderr)")
        #expect(await eventually { await rig.playerctlPrints(["metadata", "title"], prefix: "One") }, "MPRIS metadata on the new bus")
        try await Task.sleep(for: .milliseconds(300))
        let pause = try await rig.network.run(["playerctl", "-p", "lyred", "pause"], timeout: 15)
        #expect(pause.status == 0, "playerctl pause: \(pause.stderr)")
        #expect(await rig.waitForNowPlaying { $0["state"] as? String == "paused" } != nil, "Pause on the new bus")
        #expect(play.isRunning, "lyre play: \(play.stderr)")
        play.signal(SIGINT)
        try await play.waitForExit(timeout: 10)
    }

    /// control-api.md §3.1: a setting lyred's user cannot write to its config file is in effect but `notKept`:
    /// `lyre remote` warns with the reason and exits 0, and the file is untouched. lyred runs as nobody, its
    /// config file root's (mode 644).
    @Test func aSettingLyredCannotWriteIsInEffectButNotKept() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let config = "name = Den\nport = 7730\n"
        let made = try await network.shell("""
            mkdir -p /run/nobody/bin /run/cfg /run/ns && cp \(TestNetwork.binaries)/lyred \(TestNetwork.binaries)/lyre /run/nobody/bin/ \
              && chmod -R a+rX /run/nobody \
              && printf '\(config.replacingOccurrences(of: "\n", with: "\\n"))' > /run/cfg/lyred.conf && chmod 644 /run/cfg/lyred.conf \
              && chown 65534:65534 /run/ns
            """)
        #expect(made.status == 0, "\(made.stderr)")
        let socket = "/run/ns/control.sock"
        let lyred = try network.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/run/nobody/bin/lyred",
                                       "--config", "/run/cfg/lyred.conf", "--state-dir", "/run/ns", "--output", "null", "--mpris", "off",
                                       "--web", "off", "--mdns", "embedded", "--control-socket", socket], name: "lyred")
        #expect(await eventually { lyred.stderr.contains("advertised as 'Den'") }, "\(lyred.stderr)")
        // Asked as lyred's user: the socket and its directory are that user's alone.
        func remote(_ words: [String]) async throws -> Spawned {
            try await network.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/run/nobody/bin/lyre", "remote", "--socket", socket] + words,
                                  timeout: 15)
        }
        let renamed = try await remote(["name", "Study"])
        #expect(renamed.status == 0, "\(renamed.stdout) \(renamed.stderr)")
        #expect(renamed.stderr.hasPrefix("lyre: warning: changed until lyred restarts: ") && renamed.stderr.contains("/run/cfg/lyred.conf")
                && renamed.stderr.contains("lyred's user must be able to write it"), "\(renamed.stderr)")
        #expect(try await remote(["name"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "Study")
        #expect(try await network.shell("cat /run/cfg/lyred.conf").stdout == config)
        #expect(lyred.isRunning)
    }

    /// The control socket is this user's alone: lyred refuses a directory another user made or may write in
    /// (a `/tmp/lyred-UID` planted first), and closes a connection from another user unanswered even when
    /// the socket's mode would let it in (`SO_PEERCRED`).
    @Test func theControlSocketIsThisUsersAlone() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let made = try await network.shell("""
            mkdir -m 777 /run/open && mkdir -m 700 /run/theirs && chown 65534:65534 /run/theirs \
              && mkdir -p /run/nobody/bin && cp \(TestNetwork.binaries)/lyre /run/nobody/bin/ && chmod -R a+rX /run/nobody
            """)
        #expect(made.status == 0, "\(made.stderr)")
        for (directory, why) in [("/run/open", "others may write in it (mode 777)"), ("/run/theirs", "it belongs to user 65534")] {
            let refused = try await network.run(
                ["lyred", "--name", "Den", "--port", "0", "--state-dir", "/run/s", "--output", "null", "--mpris", "off",
                 "--control-socket", "\(directory)/control.sock"], timeout: 20)
            #expect(refused.status != 0, "lyred ran with its socket in \(directory)")
            #expect(refused.stderr.contains("refusing a control socket in \(directory): \(why)"), "\(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        }
        let socket = "/run/ctl/control.sock"
        let lyred = try network.spawn(
            ["lyred", "--name", "Den", "--port", "0", "--state-dir", "/run/s", "--output", "null", "--mpris", "off", "--control-socket", socket],
            name: "lyred")
        #expect(await eventually { lyred.stderr.contains("control socket \(socket)") }, "\(lyred.stderr)")
        let mine = try await network.run(["lyre", "remote", "--socket", socket, "stats"])
        #expect(mine.status == 0, "\(mine.stderr)")
        // Opened to everyone on the file system: the kernel's word on who connects still keeps them out.
        #expect(try await network.shell("chmod 755 /run/ctl && chmod 666 \(socket)").status == 0)
        let theirs = try await network.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                            "/run/nobody/bin/lyre", "remote", "--socket", socket, "stats"])
        #expect(theirs.status != 0, "another user was answered: \(theirs.stdout)")
        #expect(theirs.stderr.contains("closed its control socket"), "\(theirs.stderr)")
        #expect(lyred.isRunning)
    }

    /// now-playing.md §6: `--mpris system` puts the player on the system bus, `--mpris off` on none. The system
    /// bus here is dbus-daemon with Debian's own system.conf, and with the policy the lyred package installs
    /// (Tools/package.d/lyred.dbus.conf): without that file, the system bus lets no one own the player's name.
    @Test func theMPRISPlayerIsOnTheSystemBusOrOnNone() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        func systemBus(_ name: String, policy: Bool) async throws -> String {
            let config = network.scratch.appendingPathComponent("\(name).conf").path
            let includes = ["/usr/share/dbus-1/system.conf"] + (policy ? [TestNetwork.tools + "/package.d/lyred.dbus.conf"] : [])
            try Data(("<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" "
                + "\"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>"
                + includes.map { "<include>\($0)</include>" }.joined() + "</busconfig>\n").utf8).write(to: URL(fileURLWithPath: config))
            let socket = network.scratch.appendingPathComponent("\(name).socket").path
            let daemon = try network.spawn(["dbus-daemon", "--config-file=\(config)", "--address=unix:path=\(socket)", "--nopidfile", "--nofork"],
                                           name: "dbus-daemon-\(name)")
            #expect(await eventually { FileManager.default.fileExists(atPath: socket) }, "dbus-daemon: \(daemon.stderr)")
            return "unix:path=" + socket
        }
        func names(_ bus: String) async throws -> String {
            try await network.run(["dbus-send", bus, "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus.ListNames"]).stdout
        }
        func lyred(_ mode: String, bus: String) throws -> Spawned {
            try network.spawn(["env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus)", TestNetwork.binaries + "/lyred", "--name", "Den-\(mode)", "--port", "0",
                               "--state-dir", "/run/lyred-\(mode)", "--output", "null", "--mpris", mode, "--web", "off",
                               "--control-socket", "off", "--log-level", "info"], name: "lyred-\(mode)")
        }
        let system = try await systemBus("system", policy: true)
        let onSystem = try lyred("system", bus: system)
        #expect(await eventually { onSystem.stderr.contains("MPRIS on the system bus as org.mpris.MediaPlayer2.lyred") }, "\(onSystem.stderr)")
        let identity = try await network.run(["dbus-send", "--bus=\(system)", "--print-reply", "--dest=org.mpris.MediaPlayer2.lyred",
                                              "/org/mpris/MediaPlayer2", "org.freedesktop.DBus.Properties.Get",
                                              "string:org.mpris.MediaPlayer2", "string:Identity"])
        #expect(identity.stdout.contains("Lyre receiver Den-system"), "\(identity.stdout) \(identity.stderr)")
        let session = try await names("--session")
        #expect(!session.contains("org.mpris.MediaPlayer2.lyred"), "\(session)")
        onSystem.signal(SIGTERM)
        try await onSystem.waitForExit(timeout: 10)

        // `off`: on neither bus.
        let off = try lyred("off", bus: system)
        #expect(await eventually { off.stderr.contains("advertised as") }, "\(off.stderr)")
        let (onSystemBus, onSessionBus) = (try await names("--bus=\(system)"), try await names("--session"))
        #expect(!onSystemBus.contains("org.mpris") && !onSessionBus.contains("org.mpris"), "\(onSystemBus) \(onSessionBus)")
        off.signal(SIGTERM)
        try await off.waitForExit(timeout: 10)

        // Debian's system bus without the package's policy: the name cannot be owned, and lyred says so.
        let bare = try await systemBus("bare", policy: false)
        let refused = try lyred("system", bus: bare)
        try await refused.waitForExit(timeout: 10)
        #expect(refused.status != 0 && refused.stderr.contains("not allowed to own"), "\(refused.stderr)")
    }
}
