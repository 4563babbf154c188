import Foundation
import Testing

/// Streaming end to end with real components: lyred playing into its WAV sink or ALSA's file plugin,
/// `lyre play`, ffmpeg's RTSP publisher, and a bad-input generator. Audio is checked by
/// Tools/peers/audio.py (alignment by cross-correlation, SNR, dropouts).
@Suite(.serialized)
struct StreamingTests {
    static let audioTool = TestNetwork.tools + "/peers/audio.py"

    /// A receiver in its own network, writing what it plays to `out.wav` in the scratch directory.
    struct Rig {
        let network: TestNetwork
        let lyred: Spawned
        let output: String
        let port = 7720

        /// `arguments`: more of lyred's options.
        init(name: String = "Speaker", output: String? = nil, environment: [String] = [], arguments: [String] = []) async throws {
            network = try TestNetwork()
            let wav = network.scratch.appendingPathComponent("out.wav").path
            self.output = output ?? wav
            lyred = try network.spawn(
                ["env"] + environment + [TestNetwork.binaries + "/lyred", "--name", name, "--port", "7720", "--state-dir", "/run/lyred",
                 "--output", output == nil ? "wav:\(wav)" : output!, "--log-level", "info"] + arguments,
                name: "lyred")
            let up = await eventually { lyred.stderr.contains("advertised as") }
            #expect(up, "lyred did not come up: \(lyred.stderr)")
        }

        /// Stops lyred so the output is complete.
        func stop() async throws {
            lyred.signal(SIGTERM)
            try await lyred.waitForExit(timeout: 10)
        }
    }

    /// What the receiver's web API (port 7780, control-api.md §2) shows playing over the session: each overlay
    /// as "SENDER HOW" or "SENDER duck DB".
    static func overlaysShown(_ network: TestNetwork) async throws -> [String]? {
        let state = try await network.run(["curl", "-s", "--max-time", "5", "http://127.0.0.1:7780/api/state"])
        let snapshot = try? JSONSerialization.jsonObject(with: Data(state.stdout.utf8)) as? [String: Any]
        let overlays = (snapshot?["receiver"] as? [String: Any])?["overlays"] as? [[String: Any]]
        return overlays?.map { overlay in
            ["\(overlay["sender"] ?? "")", "\(overlay["how"] ?? "")"].joined(separator: " ") + ((overlay["duckDB"] as? Double).map { " \($0)" } ?? "")
        }
    }

    /// The output at `output` as `main` (ducked while `announce` plays) plus `announce`, each found by its
    /// known signal (Tools/peers/audio.py separate), printed after `label`.
    struct Separated: CustomStringConvertible {
        let parts: [String: Any]
        /// A figure of audio.py's, NaN when it gave none.
        subscript(key: String) -> Double { parts[key] as? Double ?? .nan }
        var description: String { "\(parts)" }
    }

    /// `then`: the announcement's audio came again later, this signal (audio.py separate --then).
    static func separate(_ network: TestNetwork, main: String, announce: String, then: String? = nil, output: String,
                         label: String) async throws -> Separated {
        let run = try await network.run(["python3", audioTool, "separate", main, announce, output] + (then.map { ["--then", $0] } ?? []))
        let parts = try #require(try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "audio.py: \(run.stdout) \(run.stderr)")
        print("\(label), the output separated: \(parts)")
        return Separated(parts: parts)
    }

    /// `audio.py sweep` into the scratch directory: a 100 Hz–8 kHz sweep, or `signal` "full" (20 Hz–20 kHz)
    /// or "music" (music-like material).
    /// `hardEnds`: the signal starts and ends at full level (no fade), as a chime that ends loud.
    static func sweep(_ network: TestNetwork, rate: Int, seconds: Double = 3, signal: String = "sweep", hardEnds: Bool = false) async throws -> String {
        let path = network.scratch.appendingPathComponent("\(signal)-\(rate)-\(seconds)\(hardEnds ? "-hard" : "").wav").path
        let made = try await network.run(["python3", audioTool, "sweep", path, "--rate", String(rate), "--seconds", String(seconds),
                                          "--signal", signal] + (hardEnds ? ["--no-fade"] : []))
        #expect(made.status == 0, "\(made.stderr)")
        return path
    }

    /// An ALSA configuration in `directory` whose PCM `lyrefile` writes what it plays to the raw file `raw`
    /// (s16le, as opened), for `ALSA_CONFIG_PATH`: a real ALSA output whose every sample can be checked.
    static func filePCM(in directory: URL, raw: String) throws -> (raw: String, config: String) {
        let path = directory.appendingPathComponent(raw).path
        let config = directory.appendingPathComponent("asound.conf").path
        try """
            </usr/share/alsa/alsa.conf>
            pcm.lyrefile { type file slave.pcm "null" file "\(path)" format "raw" }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        return (path, config)
    }

    /// `audio.py compare` as a dictionary; `part`: the output holds a stretch of the reference only (a stop).
    static func compare(_ network: TestNetwork, reference: String, output: String, format: String = "wav", part: Bool = false) async throws -> [String: Any] {
        let result = try await network.run(["python3", audioTool, "compare", reference, output, "--out-format", format] + (part ? ["--part"] : []))
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return try #require(json, "audio.py compare failed: \(result.stderr)")
    }

    /// The output is the input (`floor`: the SNR it must reach, 20 dB unless the caller measured another) with
    /// no dropout.
    static func expectSameAudio(_ comparison: [String: Any], floor: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) {
        let snr = comparison["snr_db"] as? Double ?? -100
        let gaps = comparison["gaps"] as? Int ?? -1
        #expect(snr >= floor, "SNR \(snr) dB: \(comparison)", sourceLocation: sourceLocation)
        #expect(gaps == 0, "dropouts: \(comparison)", sourceLocation: sourceLocation)
    }

    /// The output holds the input from its first sample to its last: the first and last 20 ms of the input
    /// are in the output as cleanly as the rest, and (`lags`) the first and last half second lie at the same
    /// lag, to half a sample, so no sample was lost or added between them. The lags need a signal alike at
    /// both ends, such as music: Opus's 3 Hz high-pass moves a 100 Hz tone a sample earlier than 8 kHz.
    static func expectWhole(_ comparison: [String: Any], lags: Bool = true, floor: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) {
        for edge in ["head_snr_db", "tail_snr_db"] {
            let snr = comparison[edge] as? Double ?? -100
            #expect(snr >= floor, "\(edge) \(snr) dB: \(comparison)", sourceLocation: sourceLocation)
        }
        guard lags else { return }
        let head = comparison["head_lag_samples"] as? Double ?? 0, tail = comparison["tail_lag_samples"] as? Double ?? .infinity
        #expect(abs(head - tail) < 0.5, "samples lost or added between the start and the end: \(comparison)", sourceLocation: sourceLocation)
    }

    /// A signal that ends at full level, at 48 kHz in whole packets (5, 10 and 20 ms), and at 44.1 kHz (the
    /// sender's resampling is then part of what is checked) with a length that is not a whole number of
    /// packets: the last part packet and the Opus encoder's look-ahead (6.5 ms, 2.5 ms for 5 ms frames) after it
    /// must go out, and the output hold the input to its last sample. At `--latency 10`, the shortest (issue 30:
    /// 5 ms frames), no packet is lost or late and no sample concealed either (below: a known issue under
    /// load). (`Tools/bench streaming --latency 10` shows its end-to-end latency.)
    /// (The 48 kHz signal at 250 ms is rawPCMOnStandardInputPlaysWhole's, from a pipe rather than a file.)
    @Test(arguments: [(10, 48000, 3.0), (20, 48000, 3.0), (250, 44100, 3.0117)])
    func lyrePlayArrivesIntact(latency: Int, rate: Int, seconds: Double) async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: rate, seconds: seconds, hardEnds: true)
        let play = try await rig.network.run(["lyre", "play", sweep, "--to", "Speaker", "--latency", String(latency)])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: sweep, output: rig.output)
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison, lags: false)
        // The session's last stats line (lyred logs it as the session ends).
        let stats = try #require(rig.lyred.stderr.matches(of: /session from .* stats: (.*)/).last.map { String($0.1) }, "\(rig.lyred.stderr)")
        func counter(_ name: String) -> Int? { stats.firstMatch(of: try! Regex(" ?\(name)=(\\d+)")).flatMap { Int($0.output[1].substring ?? "") } }
        #expect(counter("late") == 0, "\(stats)")
        guard latency == 10 else { return }
        #expect(counter("lost") == 0, "\(stats)")
        #expect(rig.lyred.stderr.contains("latency 10 ms"), "\(rig.lyred.stderr)")
        // Nothing concealed: a frame comes 10 ms before its block is made (sent 15 ms before it plays, made 5 ms
        // before). In a fresh clone's suite (2026-12-07) 7 frames were, with nothing lost or late: a packet came
        // just after its block was made. The cause is not found; the likely one is a busy 2-core machine holding
        // lyre play's pacer or lyred's media loop for over 10 ms, as no thread of either runs at real-time
        // priority. Until that is built, a concealment is a known issue when it happens, but never more than one
        // 5 ms frame: more would be no hiccup.
        let concealed = counter("concealed") ?? .max
        #expect(concealed < 240, "\(stats)")
        withKnownIssue("at --latency 10 a busy machine can hold a packet past its block (no real-time priority)", isIntermittent: true) {
            #expect(concealed == 0, "\(stats)")
        }
    }

    /// `lyre play` reads a WAV without loading FFmpeg's libraries (they and what they load were 25 MB of its
    /// 66 MB: AudioFileReader), and a FLAC with them, which shows that the check sees them: read from the
    /// running sender's /proc/PID/maps. It maps libpulse in neither case (Sources/CPulseShim: 1.7 MB). The
    /// output is the input from first sample to last either way.
    @Test(arguments: ["wav", "flac"])
    func aWAVIsPlayedWithoutLoadingFFmpeg(container: String) async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let music = try await Self.sweep(rig.network, rate: 48000, seconds: 4, signal: "music")
        var input = music
        if container == "flac" {
            input = rig.network.scratch.appendingPathComponent("music.flac").path
            let made = try await rig.network.run(["ffmpeg", "-v", "error", "-y", "-i", music, input])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let play = try rig.network.spawn(["lyre", "play", input, "--to", "Speaker", "--group-socket", "off"])
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        let pid = try #require(play.commandPIDs.first, "lyre play is not running: \(play.stderr)")
        // Read to its end: /proc files say they are empty, and String(contentsOfFile:) read only their first page.
        let maps = String(decoding: try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps")).readDataToEndOfFile(), as: UTF8.self)
        let mapped = Set(maps.split(separator: "\n").compactMap { $0.split(separator: "/").last.map(String.init) })
        let loaded = mapped.filter { name in
            ["libavformat.", "libavcodec.", "libavutil.", "libswresample."].contains { name.hasPrefix($0) }
        }
        #expect(maps.contains("libopus"), "not lyre play's maps: \(maps.prefix(500))")
        #expect(loaded.isEmpty == (container == "wav"), "FFmpeg's libraries mapped while playing a \(container): \(loaded.sorted())")
        // Nor libpulse (and libpulsecommon, which it loads) either way: only lyre sink opens it.
        let pulse = mapped.filter { $0.hasPrefix("libpulse") }
        #expect(pulse.isEmpty, "lyre play maps libpulse: \(pulse.sorted())")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: music, output: rig.output)
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison)
    }

    /// `lyre play - --format s16le:48000:2` plays raw PCM from its standard input (read by libsndfile): the
    /// output holds the input from its first sample to its last.
    @Test func rawPCMOnStandardInputPlaysWhole() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 3, hardEnds: true)
        let raw = rig.network.scratch.appendingPathComponent("sweep.s16le").path
        let made = try await rig.network.run(["ffmpeg", "-v", "error", "-y", "-i", sweep, "-f", "s16le", raw])
        #expect(made.status == 0, "\(made.stderr)")
        let play = try await rig.network.run(["sh", "-c", "exec \"$0\" play - --format s16le:48000:2 --to Speaker < \"$1\"",
                                              TestNetwork.binaries + "/lyre", raw])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: sweep, output: rig.output)
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison, lags: false)
        #expect(rig.lyred.stderr.contains("late=0"), "\(rig.lyred.stderr)")
    }

    /// A queue of two files cut from one signal at a sample that is not a packet boundary plays gapless: the
    /// output is the whole signal, no sample lost or added where the tracks meet.
    @Test func aQueuePlaysGaplessFromFirstSampleToLast() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let whole = try await Self.sweep(rig.network, rate: 48000, seconds: 4, signal: "music")
        let first = rig.network.scratch.appendingPathComponent("first.wav").path
        let second = rig.network.scratch.appendingPathComponent("second.wav").path
        let cut = try await rig.network.run(["python3", "-c", """
            import sys, wave
            r = wave.open(sys.argv[1]); p = r.getparams(); n = r.getnframes(); a = r.readframes(104_123); b = r.readframes(n)
            for path, data in ((sys.argv[2], a), (sys.argv[3], b)):
                w = wave.open(path, "wb"); w.setparams(p); w.writeframes(data); w.close()
            """, whole, first, second])
        #expect(cut.status == 0, "\(cut.stderr)")
        let play = try await rig.network.run(["lyre", "play", first, second, "--to", "Speaker"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: whole, output: rig.output)
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison)
    }

    /// Paused at the receiver and played again, the output goes on from exactly the sample where it stopped:
    /// none lost (the encoder's look-ahead before the pause), none played twice (what the receiver had put out
    /// when the pause came). The end is whole too.
    @Test func pauseAndPlayResumeAtTheSampleWhereTheOutputStopped() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 5, hardEnds: true)
        let play = try rig.network.spawn(["lyre", "play", sweep, "--to", "Speaker", "--group-socket", "off"])
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(1.7))
        let pause = try await rig.network.run(["lyre", "remote", "pause"])
        #expect(pause.status == 0, "lyre remote pause: \(pause.stderr)")
        try await Task.sleep(for: .seconds(1))
        let resume = try await rig.network.run(["lyre", "remote", "play"])
        #expect(resume.status == 0, "lyre remote play: \(resume.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        let result = try await rig.network.run(["python3", Self.audioTool, "splice", sweep, rig.output])
        let splice = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        // From the pause's edges: the output stops and starts hard, so the last sample before the pause and the
        // first after it place it to the sample. Measured 0 each time. (Taken from where the whole song lies, it
        // read -1 each time and once -4: the output's first bend into tune moves it a sample, so the lag at the
        // song's start is not the lag at the pause.)
        let lost = splice["edges_lost"] as? Int ?? .max
        print("the seam at the pause: \(lost) samples lost (> 0) or played twice (< 0): \(splice)")
        #expect(abs(lost) <= 1, "samples lost (> 0) or played twice (< 0) at the pause: \(splice)\nlyre play: \(play.stderr)\nlyred: \(rig.lyred.stderr.suffix(2000))")
        #expect((splice["pause_seconds"] as? Double ?? 0) > 0.5, "\(splice)")
        // And the audio after the resume is as clean at once as anywhere (not the old stream's decoder state).
        #expect((splice["resume_snr_db"] as? Double ?? -100) >= 20, "\(splice)")
    }

    /// Stopped at the receiver (`lyre remote stop`) mid-song: what played is the input from its first sample to
    /// the one where the output stopped, as cleanly at that end as anywhere, and nothing after it.
    @Test func aStopEndsTheOutputCleanly() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 6, hardEnds: true)
        let play = try rig.network.spawn(["lyre", "play", sweep, "--to", "Speaker", "--group-socket", "off"])
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(2))
        let stop = try await rig.network.run(["lyre", "remote", "stop"])
        #expect(stop.status == 0, "lyre remote stop: \(stop.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: sweep, output: rig.output, part: true)
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison, lags: false)
        let played = comparison["matched_seconds"] as? Double ?? 0
        #expect(played > 1 && played < 5, "the output held \(played) s of the 6 s song, stopped after about 2: \(comparison)")
    }

    /// Neither end needs root: lyred and `lyre play` run as an unprivileged user (nobody, no capabilities),
    /// as a service's own user and a desktop's user do, and the file plays whole. (Both once set SO_DEBUG,
    /// which needs CAP_NET_ADMIN, where they meant TCP_NODELAY: run as root by every other test, the
    /// receiver closed every connection of a real installation without a word.)
    @Test func bothEndsRunAsAnUnprivilegedUser() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 4, signal: "music")
        let home = "/run/nobody"
        // The binaries are copied where nobody can reach them: a clone's directory may be closed to other users.
        let made = try await network.shell("""
            mkdir -p \(home)/bin && cp \(TestNetwork.binaries)/lyred \(TestNetwork.binaries)/lyre \(sweep) \(home)/bin/ \
              && chown -R 65534:65534 \(home) && chmod -R a+rX \(home)
            """)
        #expect(made.status == 0, "\(made.stderr)")
        let asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=\(home)", "XDG_RUNTIME_DIR=\(home)",
                        "XDG_STATE_HOME=\(home)/state", "XDG_CONFIG_HOME=\(home)/config"]
        let lyred = try network.spawn(
            asNobody + ["\(home)/bin/lyred", "--name", "Attic", "--port", "7721", "--access", "open", "--state-dir", "\(home)/state",
                        "--output", "wav:\(home)/out.wav", "--mpris", "off"], name: "lyred")
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        let copy = "\(home)/bin/" + (sweep as NSString).lastPathComponent
        let play = try await network.run(asNobody + ["\(home)/bin/lyre", "play", copy, "--to", "Attic"], timeout: 30)
        #expect(play.status == 0, "lyre play as nobody: \(play.stderr)")
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 10)
        #expect(!lyred.stderr.contains("TCP_NODELAY"), "\(lyred.stderr)")
        let comparison = try await Self.compare(network, reference: sweep, output: "\(home)/out.wav")
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison)
    }

    /// SIGHUP (`systemctl reload lyred`) re-reads the config file while a song plays: the output delay and
    /// who may play change at once and the session goes on to its end; a changed name is logged as needing a
    /// restart; a file with a mistake is refused and the running settings stay.
    /// SIGHUP re-reads the config file: the name, the maximum volume, the output delay and the access change at
    /// once and the playing session goes on (the maximum volume measured from the output: the song's first
    /// second at full level, its last 12 dB down); a file with a mistake is refused whole.
    @Test func aReloadChangesTheNameVolumeOutputDelayAndAccessWithoutEndingTheSession() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        func write(_ lines: String) async throws {
            let written = try await network.shell("printf '\(lines)' > /run/reload.conf")
            #expect(written.status == 0, "\(written.stderr)")
        }
        try await write("name = Loft\\naccess = open\\noutput-delay = 0\\n")
        let wav = network.scratch.appendingPathComponent("out.wav").path
        let lyred = try network.spawn(["lyred", "--config", "/run/reload.conf", "--port", "7722", "--state-dir", "/run/r", "--output", "wav:\(wav)"], name: "lyred",
            defaultAccess: true)  // (the access is the file's, not the tests' --access open)
        #expect(await eventually { lyred.stderr.contains("advertised as 'Loft'") }, "\(lyred.stderr)")
        // A sweep: its level is the same from start to end, so a change of level is the reload's.
        let song = try await Self.sweep(network, rate: 48000, seconds: 6)
        let play = try network.spawn(["lyre", "play", song, "--to", "Loft", "--group-socket", "off"])
        #expect(await eventually { lyred.stderr.contains("now playing:") }, "\(lyred.stderr)")
        // Past the song's first second at the output (its latency is 250 ms), so that the second is unchanged.
        try await Task.sleep(for: .seconds(2))

        try await write("name = Loft Two\\naccess = paired\\noutput-delay = 40\\nmax-volume-db = -12\\n")
        lyred.signal(SIGHUP)
        #expect(await eventually { lyred.stderr.contains("reloaded /run/reload.conf") }, "\(lyred.stderr)")
        #expect(lyred.stderr.contains("renamed from 'Loft' to 'Loft Two'"), "\(lyred.stderr)")
        #expect(!lyred.stderr.contains("takes effect when lyred restarts"), "\(lyred.stderr)")
        #expect(await eventually { lyred.stderr.contains("advertised as 'Loft Two'") }, "\(lyred.stderr)")
        let delay = try await network.run(["lyre", "remote", "output-delay"])
        #expect(delay.status == 0 && delay.stdout.contains("40"), "lyre remote output-delay: \(delay.stdout) \(delay.stderr)")

        try await write("latency = 5\\n")
        lyred.signal(SIGHUP)
        #expect(await eventually { lyred.stderr.contains("reload refused, the running settings stay: /run/reload.conf:1: latency:") }, "\(lyred.stderr)")
        #expect(lyred.isRunning)

        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        #expect(lyred.stderr.contains("ended: teardown"), "the session ended early: \(lyred.stderr)")
        // The reloaded access holds for the next session: an unpaired sender is refused.
        let refused = try await network.run(["lyre", "play", song, "--to", "Loft Two", "--group-socket", "off"], timeout: 30)
        #expect(refused.status != 0, "an unpaired sender played after access became paired: \(refused.stderr)")
        #expect(lyred.stderr.contains("not paired"), "\(lyred.stderr)")
        lyred.signal(SIGTERM)
        try await lyred.waitForExit(timeout: 10)
        let level = try await network.run(["python3", Self.audioTool, "level", wav])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(level.stdout.utf8)) as? [String: Any], "audio.py level: \(level.stderr)")
        let first = json["first_second_dbfs"] as? Double ?? 0, last = json["last_second_dbfs"] as? Double ?? 0
        // The sweep's -9.03 dBFS RMS (a -6 dBFS sine), then 12 dB lower.
        #expect(abs(first - (-9.03)) < 1, "the first second: \(json)")
        #expect(abs(last - first - (-12)) < 1, "the last second against the first: \(json)")
    }

    @Test func alsaFilePluginGetsTheAudio() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-alsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (raw, config) = try Self.filePCM(in: directory, raw: "alsa.raw")
        let rig = try await Rig(output: "lyrefile", environment: ["ALSA_CONFIG_PATH=\(config)"])
        defer { rig.network.close() }
        #expect(rig.lyred.stderr.contains("output ALSA lyrefile open"), "\(rig.lyred.stderr)")
        let sweep = try await Self.sweep(rig.network, rate: 48000)
        let play = try await rig.network.run(["lyre", "play", sweep, "--to", "Speaker", "--latency", "100"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        Self.expectSameAudio(try await Self.compare(rig.network, reference: sweep, output: raw, format: "raw:s16le:48000:2"))
        // The file plugin keeps no time, so the output is paced on the host clock, and lyred says so (§6.1).
        #expect(rig.lyred.stderr.contains("presentation times from the host clock (lyrefile keeps no time)"), "\(rig.lyred.stderr)")
    }

    /// App audio versus system sounds (AudioSession): an app with category `.playback` streams its song to
    /// the receiver, and a system sound it plays meanwhile comes out of the local ALSA output (the file
    /// plugin here) and never reaches the receiver, whose output still matches the song alone.
    @Test func systemSoundsStayLocalWhileTheAppStreams() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (raw, config) = try Self.filePCM(in: rig.network.scratch, raw: "local.raw")
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 3)
        let alert = rig.network.scratch.appendingPathComponent("alert.wav").path
        let made = try await rig.network.run(["python3", Self.audioTool, "sweep", alert, "--rate", "44100", "--seconds", "0.6", "--level-db", "-3"])
        #expect(made.status == 0, "\(made.stderr)")
        let app = try await rig.network.run(
            ["env", "ALSA_CONFIG_PATH=\(config)", "LYRE_LOCAL_OUTPUT=lyrefile", TestNetwork.binaries + "/lyre-example-player", song,
             "--host", "127.0.0.1:\(rig.port)", "--alert", alert, "--alert-at", "1"])
        #expect(app.status == 0, "example app: \(app.stderr)")
        try await rig.stop()
        Self.expectSameAudio(try await Self.compare(rig.network, reference: alert, output: raw, format: "raw:s16le:48000:2"))
        Self.expectSameAudio(try await Self.compare(rig.network, reference: song, output: rig.output))
    }

    /// Categories decide where the app's audio goes (AudioRouting): a `playAndRecord` app (a voice app) keeps
    /// its song on this machine's voice output even though it names a receiver, which hears no session;
    /// with `allowLyre` the same app plays on the receiver and nothing locally. Each output is checked whole
    /// against the song.
    @Test(arguments: [false, true]) func playAndRecordStaysLocalUnlessItAllowsLyre(allowLyre: Bool) async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let (raw, config) = try Self.filePCM(in: rig.network.scratch, raw: "voice.raw")
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 3)
        let app = try await rig.network.run(
            ["env", "ALSA_CONFIG_PATH=\(config)", "LYRE_LOCAL_OUTPUT=null", "LYRE_VOICE_OUTPUT=lyrefile", TestNetwork.binaries + "/lyre-example-player", song,
             "--host", "127.0.0.1:\(rig.port)", "--category", "playAndRecord", "--mode", "voiceChat"] + (allowLyre ? ["--options", "allowLyre"] : []))
        #expect(app.status == 0, "example app: \(app.stderr)")
        try await rig.stop()
        if allowLyre {
            let played = (try? FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int) ?? 0
            #expect(played == 0, "\(played) bytes played on this machine")
            Self.expectSameAudio(try await Self.compare(rig.network, reference: song, output: rig.output))
        } else {
            #expect(app.stderr.contains("playAndRecord keeps the song on this machine (ALSA lyrefile)"), "\(app.stderr)")
            #expect(!rig.lyred.stderr.contains("session from"), "\(rig.lyred.stderr)")
            Self.expectSameAudio(try await Self.compare(rig.network, reference: song, output: raw, format: "raw:s16le:48000:2"))
        }
    }

    /// A category change while the song plays that takes the audio off the receiver (`playback` to
    /// `soloAmbient`) is a route change `categoryChange`: the app's `QueuePlayer` ends the playback there,
    /// with a TEARDOWN. The receiver's output is the song up to the change (2 s into an 8 s song), whole.
    @Test func aCategoryChangeEndsThePlaybackOnTheReceiver() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 8, hardEnds: true)
        let app = try await rig.network.run(
            ["env", "LYRE_LOCAL_OUTPUT=null", TestNetwork.binaries + "/lyre-example-player", song, "--host", "127.0.0.1:\(rig.port)",
             "--category-at", "2", "soloAmbient"])
        #expect(app.status == 0, "example app: \(app.stderr)")
        #expect(app.stderr.contains("the category moved the song off the receiver"), "\(app.stderr)")
        #expect(await eventually { rig.lyred.stderr.contains("ended: teardown") }, "\(rig.lyred.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: song, output: rig.output, part: true)
        Self.expectSameAudio(comparison)
        let played = comparison["matched_seconds"] as? Double ?? 0
        #expect(played > 0.5 && played < 7, "the output held \(played) s of the 8 s song, moved off after about 2: \(comparison)")
    }

    /// streaming.md §7, `Lyre-Mix`: an announcement (`lyre play --mix` or `--duck-db`) to a receiver that plays
    /// music from another sender plays over it: the receiver's output is the music, lowered by the
    /// announcement's own `--duck-db` from the announcement's first sample to its last when it ducks and
    /// untouched when it mixes, plus the announcement, at full level. (lyred's default depth, 15 dB for a bare
    /// `--duck`, is held with the same separation in every room by MultiRoomTests.aGroupDucksAlikeInEveryRoom;
    /// an app's `duckOthers` becoming `Lyre-Mix: duck` by AudioRoutingTests.anAppsOptionsAreItsMixRequest.) Both are found in the output by
    /// separating the two known signals (Tools/peers/audio.py separate), each held to what Opus makes of it;
    /// the music comes back up over 300 ms, and its sender was never taken over. While the announcement plays,
    /// the receiver's control socket and its MPRIS player (playerctl) show the music, playing.
    ///
    /// With `--duck-db`, the announcement (4 s) also sets its own volume through its group socket (-12 dB) as
    /// it starts and sends a cover of its own: its samples come out 12 dB down while the music keeps its level
    /// (the receiver's volume is the main session's), and the cover shown stays the music's.
    @Test(arguments: ["--mix", "--duck-db -24"]) func anAnnouncementPlaysOverTheMusic(option: String) async throws {
        guard TestNetwork.which("playerctl") != nil else { throw TestNetworkError("playerctl is missing: run Tools/test, which installs it") }
        // lyred's MPRIS player on the test network's session bus, read with playerctl.
        let rig = try await Rig(arguments: ["--mpris", "session"])
        defer { rig.network.close() }
        let own = option.hasPrefix("--duck-db ")
        // The chime starts about 2.5 s into the music and the music outlasts it by 5.5 s: its level after the
        // release, and the overlay seen gone from the page and MPRIS while the music still plays.
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: own ? 12 : 10, signal: "music")
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: own ? 4 : 2, signal: "full")
        let (musicCover, doorbellCover) = (rig.network.scratch.path + "/music.png", rig.network.scratch.path + "/doorbell.png")
        let doorbellSocket = rig.network.scratch.path + "/doorbell.sock"
        if own {
            let covers = try await rig.network.shell("""
                ffmpeg -v error -y -f lavfi -i color=c=red:s=48x48 -frames:v 1 '\(musicCover)' && \
                ffmpeg -v error -y -f lavfi -i color=c=blue:s=40x40 -frames:v 1 '\(doorbellCover)'
                """)
            #expect(covers.status == 0, "\(covers.stderr)")
        }
        let music = try rig.network.spawn(["lyre", "play", song, "--to", "Speaker", "--name", "Music", "--group-socket", "off"]
                                          + (own ? ["--artwork", musicCover] : []))
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(2))
        // What the receiver shows: the music's now playing, before the announcement and while it plays.
        func shown() async throws -> String? {
            let run = try await rig.network.run(["lyre", "remote", "now-playing", "--json", "--socket", "/run/lyred/control.sock"])
            return (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])?["title"] as? String
        }
        func shownCover() async throws -> String? {
            let run = try await rig.network.run(["lyre", "remote", "now-playing", "--json", "--socket", "/run/lyred/control.sock"])
            return (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])?["artwork"] as? String
        }
        let musicTitle = try await shown()
        #expect(musicTitle != nil, "nothing shown")
        let announce = try rig.network.spawn(
            ["lyre", "play", chime, "--to", "Speaker"] + option.split(separator: " ").map(String.init)
                + ["--name", "Doorbell", "--group-socket"] + (own ? [doorbellSocket, "--artwork", doorbellCover] : ["off"]),
            name: "announcement")
        #expect(await eventually { rig.lyred.stderr.contains(" plays over 'Music'") }, "\(rig.lyred.stderr)")
        // The web page shows the announcement as such, with how it meets the music.
        let name = "Doorbell"
        let ducks = option != "--mix"
        let depth = own ? Double(option.dropFirst("--duck-db ".count))! : 0
        let shownOverlays = try await Self.overlaysShown(rig.network)
        #expect(shownOverlays == [ducks ? "\(name) duck \(depth)" : "\(name) mix"], "web API: \(String(describing: shownOverlays))")
        if own {
            #expect(await eventually { FileManager.default.fileExists(atPath: doorbellSocket) }, "no group socket: \(announce.stderr)")
            let volume = try await rig.network.run(["lyre", "group", "volume", "-12", "--socket", doorbellSocket])
            #expect(volume.status == 0, "lyre group volume: \(volume.stderr)")
        }
        #expect(try await shown() == musicTitle, "the announcement's now playing replaced the music's")
        // MPRIS (media keys, desktop widgets) shows the music too, playing, with the announcement beside it as
        // an overlay (`lyre:overlays`, now-playing.md §6).
        func mprisShown() async throws -> String {
            let run = try await rig.network.run(
                ["playerctl", "-p", "lyred", "metadata", "--format", "{{status}} {{xesam:title}}|{{lyre:overlays}}"], timeout: 15)
            return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + (run.status == 0 ? "" : " (\(run.stderr))")
        }
        let overlayShown = ducks ? "\(name) duck \(depth) dB" : "\(name) mix"
        let mprisShowsIt = try await eventually { try await mprisShown() == "Playing \(musicTitle ?? "")|\(overlayShown)" }
        let mpris = try await mprisShown()
        #expect(mprisShowsIt, "MPRIS: \(mpris)")
        try await announce.waitForExit(timeout: 30)
        #expect(announce.status == 0, "\(announce.stderr)")
        // Gone from the page and from MPRIS once it ended, while the music plays on.
        #expect(try await eventually { try await Self.overlaysShown(rig.network) == [] }, "the announcement ended and is still shown")
        let mprisForgotIt = try await eventually { try await mprisShown() == "Playing \(musicTitle ?? "")|" }
        let mprisAfter = try await mprisShown()
        #expect(mprisForgotIt, "MPRIS after the announcement: \(mprisAfter)")
        #expect(music.isRunning, "the music ended before the announcement was seen gone")
        if own {
            // The cover still shown once the announcement sent its own and ended is the music's.
            let cover = try await shownCover()
            let same = try await rig.network.run(["cmp", musicCover, cover ?? "/nonexistent"])
            #expect(same.status == 0, "the cover shown (\(cover ?? "none")) is not the music's")
        }
        try await music.waitForExit(timeout: 30)
        #expect(music.status == 0, "the music: \(music.stderr)")
        #expect(!rig.lyred.stderr.contains("takes over"), "\(rig.lyred.stderr)")
        // The announcement's own depth, else lyred's.
        let how = ducks ? "ducking it \(abs(depth)) dB" : "mixed in"
        #expect(rig.lyred.stderr.split(separator: "\n").contains { $0.contains("'\(name)'") && $0.contains(" plays over 'Music'") && $0.hasSuffix(how) },
                "\(rig.lyred.stderr)")
        try await rig.stop()
        let parts = try await Self.separate(rig.network, main: song, announce: chime, output: rig.output, label: option)
        func figure(_ key: String) -> Double { parts[key] }
        // The music at its level before and after, and `depth` down (or not at all) under the announcement.
        #expect(abs(figure("main_db_before")) < 0.5 && abs(figure("main_db_after")) < 0.5, "\(parts)")
        #expect(abs(figure("main_db_during") - (ducks ? depth : 0)) < 0.5, "\(parts)")
        // The announcement at its own level: full, or the -12 dB its sender set.
        #expect(abs(figure("announce_gain_db") - (own ? -12 : 0)) < 0.5, "\(parts)")
        if ducks {
            // Down by the first sample (the first 10 ms window after it), back over the release (within
            // 1 dB of the music's level 280 ms into its 300 ms).
            #expect(figure("ramp_down_ms") <= 10, "\(parts)")
            #expect(figure("ramp_up_ms") > 200 && figure("ramp_up_ms") < 400, "\(parts)")
        }
        // Each as clean as Opus leaves it, against ffmpeg's libopus on the same file (`libopusFloors`): the
        // music outside the announcement, and the sweep under which the ducked music's own coding noise lies
        // too, 1 dB more (libopus 27.2 dB on this sweep; 26.1 to 27.5 dB measured here).
        let (musicFloor, _) = try await Self.libopusFloors(rig.network, input: song)
        let (sweepFloor, _) = try await Self.libopusFloors(rig.network, input: chime)
        // lyred's log ends with each session's statistics (concealed, late, underruns): what a low figure came from.
        #expect(figure("main_snr_db") >= musicFloor && figure("announce_snr_db") >= sweepFloor - 1,
                "\(parts)\nlyred: \(rig.lyred.stderr.suffix(3000))")
    }

    /// `Lyre-Mix` to a receiver that plays nothing: there is nothing to mix with, and the announcement plays,
    /// whole.
    @Test func anAnnouncementToAnIdleReceiverPlays() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: 1, hardEnds: true)
        let announce = try await rig.network.run(["lyre", "play", chime, "--to", "Speaker", "--duck", "--group-socket", "off"])
        #expect(announce.status == 0, "\(announce.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: chime, output: rig.output)
        Self.expectSameAudio(comparison)
        Self.expectWhole(comparison, lags: false)
    }

    /// A sender that pipelines (rtsp-conformance.py --pipelined: an ANNOUNCE asking to mix, its SETUP and a
    /// TEARDOWN in one write, RFC 2326 §9.1) sets an overlay up and ends it over the music, and the music,
    /// playing all along, is heard whole from its first sample to its last. Each request is answered once, and
    /// consistently: the SETUP either before the TEARDOWN (200; the ports are bound at once on the connection's
    /// loop, as today) or, had its session ended first, 454 without taking the output.
    @Test func aPipelinedOverlaySetUpAndTornDownLeavesTheMusicAlone() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 6, signal: "music")
        let music = try rig.network.spawn(["lyre", "play", song, "--to", "Speaker", "--name", "Music", "--group-socket", "off"])
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(1))
        let run = try await rig.network.run(["python3", "\(TestNetwork.tools)/peers/rtsp-conformance.py", "127.0.0.1", String(rig.port), "--pipelined"])
        let got = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout) \(run.stderr)")
        let answers = (got["answers"] as? [[String: Any]] ?? []).map { "\($0["method"] ?? "") \($0["status"] ?? "")" }
        print("pipelined over the music: \(answers)")
        #expect(answers == ["ANNOUNCE 200", "SETUP 200", "TEARDOWN 200"] || Set(answers) == ["ANNOUNCE 200", "SETUP 454", "TEARDOWN 200"],
                "\(got)\nlyred: \(rig.lyred.stderr)")
        #expect(rig.lyred.stderr.contains("session from 'rtsp-conformance.py' ended: teardown"), "\(rig.lyred.stderr)")
        try await music.waitForExit(timeout: 30)
        #expect(music.status == 0, "the music: \(music.stderr)")
        #expect(!rig.lyred.stderr.contains("takes over"), "\(rig.lyred.stderr)")
        try await rig.stop()
        let comparison = try await Self.compare(rig.network, reference: song, output: rig.output)
        let (floor, edgeFloor) = try await Self.libopusFloors(rig.network, input: song)
        Self.expectSameAudio(comparison, floor: floor)
        Self.expectWhole(comparison, floor: edgeFloor)
    }

    /// streaming.md §7, as theMusicComesBackWhenTheAnnouncementsAudioEndsNotItsSession, with a session mixed in over the
    /// announcement (a sound of silence, `--mix`) before the music comes: the announcement goes under it as
    /// the first overlay, rendered once a block (a block rendered twice or skipped would cost it its SNR), and
    /// the music comes up when its audio ends.
    @Test func musicUnderAnAnnouncementThatAlreadyHasAnOverlay() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: 5, signal: "full")
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 8, signal: "music")
        let quiet = rig.network.scratch.appendingPathComponent("silence.wav").path
        let made = try await rig.network.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo", "-t", "6", "-c:a", "pcm_s16le", quiet])
        #expect(made.status == 0, "ffmpeg: \(made.stderr)")
        let announce = try rig.network.spawn(["lyre", "play", chime, "--to", "Speaker", "--duck", "--name", "Doorbell", "--group-socket", "off"],
                                             name: "announcement")
        #expect(await eventually { rig.lyred.stderr.contains("session from 'Doorbell'") }, "\(rig.lyred.stderr)")
        let mixed = try rig.network.spawn(["lyre", "play", quiet, "--to", "Speaker", "--mix", "--name", "Quiet", "--group-socket", "off"], name: "quiet")
        #expect(await eventually { rig.lyred.stderr.contains("'Quiet'") && rig.lyred.stderr.contains(" plays over 'Doorbell'") }, "\(rig.lyred.stderr)")
        let music = try await Self.musicUnderTheDoorbell(rig, song: song, after: .milliseconds(500))
        try await Self.expectMusicCameUnder(rig, song: song, chime: chime, senders: [announce, mixed, music],
                                            label: "music under an announcement with an overlay")
    }

    /// streaming.md §7: an announcement that plays alone (nothing was playing when it came) still asked to play
    /// over others. Music started during it (a plain session, which takes over any other) does not end it: the
    /// music becomes the main session and starts ducked under the announcement, which goes on where it was, not
    /// a sample lost; the receiver shows the music's now playing, with the announcement over it. (Before, the
    /// music took the receiver over and cut the doorbell off mid-chime.) Read from the output, the two known
    /// signals separated.
    ///
    /// And an announcement ducks while its audio plays, not while its sender stays on. Its sender here is
    /// `lyre play -` reading a pipe that stays open 7 s after the chime (an app that keeps its session): the
    /// music comes back up from the chime's last sample, over the ramp, and not when the session ends.
    @Test func theMusicComesBackWhenTheAnnouncementsAudioEndsNotItsSession() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: 3, signal: "full")
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 8, signal: "music")
        let announce = try await Self.announceFromAnOpenPipe(rig, [chime], open: 7)
        let music = try await Self.musicUnderTheDoorbell(rig, song: song, after: .seconds(1))
        // What the receiver shows is the music, with the announcement over it.
        let shownOverlays = try await Self.overlaysShown(rig.network)
        #expect(shownOverlays == ["Doorbell duck -15.0"], "web API: \(String(describing: shownOverlays))")
        let shown = try await rig.network.run(["lyre", "remote", "now-playing", "--json", "--socket", "/run/lyred/control.sock"])
        let sender = (try? JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])?["sender"] as? String
        #expect(sender == "Music", "the receiver shows \(shown.stdout)")
        try await Self.expectMusicCameUnder(rig, song: song, chime: chime, senders: [announce, music],
                                            label: "music under an announcement whose sender stays on")
    }

    /// streaming.md §7: music that comes after an announcement's audio ended, its sender still on, has nothing
    /// to come back from: it plays at its own level from its first sample, no dip.
    @Test func musicAfterAnAnnouncementsAudioEndedIsNotDucked() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: 1, signal: "full")
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 6, signal: "music")
        let announce = try await Self.announceFromAnOpenPipe(rig, [chime], open: 9)
        let music = try await Self.musicUnderTheDoorbell(rig, song: song, after: .milliseconds(2500))
        for sender in [announce, music] {
            try await sender.waitForExit(timeout: 30)
            #expect(sender.status == 0, "\(sender.stderr)")
        }
        try await rig.stop()
        let parts = try await Self.separate(rig.network, main: song, announce: chime, output: rig.output, label: "music after an announcement's audio")
        #expect(parts["main_lag_samples"] > parts["announce_lag_samples"] + 48000 * 2, "the music did not start after the chime: \(parts)")
        #expect(abs(parts["main_db_after"]) < 0.5 && parts["main_db_lowest_after"] > -1, "the music dipped: \(parts)")
        #expect(abs(parts["announce_gain_db"]) < 0.5, "\(parts)")
    }

    /// streaming.md §7: an overlay whose audio runs out and comes again, its session on (an app that plays a
    /// chime, then another 2 s later): the music comes back up over the ramp in the gap, goes back down by the
    /// ramp down as the second chime comes, and comes up again after it. Read from the output, the music and
    /// both chimes separated; each chime whole, at its own level.
    @Test func anAnnouncementWhoseAudioComesAgainDucksTheMusicAgain() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 12, signal: "music")
        let first = try await Self.sweep(rig.network, rate: 48000, seconds: 2, signal: "full")
        let second = try await Self.sweep(rig.network, rate: 48000, seconds: 2)
        let music = try rig.network.spawn(["lyre", "play", song, "--to", "Speaker", "--name", "Music", "--group-socket", "off"], name: "music")
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(1.5))
        let announce = try await Self.announceFromAnOpenPipe(rig, [first, second], open: 3)
        #expect(await eventually { rig.lyred.stderr.contains(" plays over 'Music'") }, "\(rig.lyred.stderr)")
        for sender in [announce, music] {
            try await sender.waitForExit(timeout: 30)
            #expect(sender.status == 0, "\(sender.stderr)")
        }
        #expect(!rig.lyred.stderr.contains("takes over"), "\(rig.lyred.stderr)")
        try await rig.stop()
        let parts = try await Self.separate(rig.network, main: song, announce: first, then: second, output: rig.output,
                                            label: "an announcement whose audio comes again")
        // The pipe waits 3 s after each chime; `lyre play` read the first ahead of its time, so the gap heard is
        // shorter (1.6 s measured).
        #expect(parts["again_start_s"] > parts["announce_end_s"] + 1, "the second chime did not come after a gap: \(parts)")
        // Down under each chime, up between them and after.
        for key in ["main_db_during", "main_db_during_again"] { #expect(abs(parts[key] + 15) < 0.5, "\(key): \(parts)") }
        for key in ["main_db_before", "main_db_between", "main_db_after"] { #expect(abs(parts[key]) < 0.5, "\(key): \(parts)") }
        // Back up over the 300 ms ramp from each chime's last sample, and down by the first chime's first sample
        // (the receiver knows where it starts). The second comes unannounced: its ramp down starts with the output
        // block that holds its first sample (PlayoutTests.theAudioEndGoesWhenTheAudioComesAgain) and falls no
        // faster than the ramp down (DuckEnvelopeTests). Where it ends is printed, not held: read in 10 ms windows
        // under the sweep's first, bass-heavy part, one window's fit of the ducked music strays by 2 or 3 dB
        // (10.7 and 88.7 ms read on two runs of one build; the first run's 5 ms fits showed it down 15 ms after
        // the chime's first sample).
        for key in ["ramp_up_ms", "ramp_up_again_ms"] { #expect(parts[key] > 200 && parts[key] < 400, "\(key): \(parts)") }
        #expect(parts["ramp_down_ms"] <= 10, "\(parts)")
        #expect(abs(parts["announce_gain_db"]) < 0.5, "\(parts)")
        let (musicFloor, _) = try await Self.libopusFloors(rig.network, input: song)
        let (sweepFloor, _) = try await Self.libopusFloors(rig.network, input: first)
        #expect(parts["main_snr_db"] >= musicFloor && parts["announce_snr_db"] >= sweepFloor - 1, "\(parts)")
    }

    /// `chimes` announced (`--duck`, as 'Doorbell') by `lyre play -` from one pipe, which stays open `open`
    /// seconds after each chime's audio; returns once the receiver has the session.
    static func announceFromAnOpenPipe(_ rig: Rig, _ chimes: [String], open: Int) async throws -> Spawned {
        var raws: [String] = []
        for (index, chime) in chimes.enumerated() {
            let raw = rig.network.scratch.appendingPathComponent("chime\(index).s16le").path
            let made = try await rig.network.run(["ffmpeg", "-v", "error", "-y", "-i", chime, "-f", "s16le", raw])
            #expect(made.status == 0, "\(made.stderr)")
            raws.append(raw)
        }
        let announce = try rig.network.spawn(
            ["sh", "-c", "lyre=$1 pause=$2; shift 2; for chime; do cat \"$chime\"; sleep \"$pause\"; done | \"$lyre\" play - --format s16le:48000:2 --to Speaker --duck --name Doorbell --group-socket off",
             "sh", TestNetwork.binaries + "/lyre", String(open)] + raws, name: "announcement")
        #expect(await eventually { rig.lyred.stderr.contains("session from 'Doorbell'") }, "\(rig.lyred.stderr)")
        return announce
    }

    /// Plays `song` as 'Music', a plain session, `after` the announcement 'Doorbell' started playing alone;
    /// expects the receiver to say that the music plays under it, ducked 15 dB, the announcement going on.
    static func musicUnderTheDoorbell(_ rig: Rig, song: String, after: Duration) async throws -> Spawned {
        #expect(await eventually { rig.lyred.stderr.contains("session from 'Doorbell'") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: after)
        let music = try rig.network.spawn(["lyre", "play", song, "--to", "Speaker", "--name", "Music", "--group-socket", "off"], name: "music")
        #expect(await eventually { rig.lyred.stderr.split(separator: "\n").contains { $0.contains("'Music'") && $0.contains(" plays under 'Doorbell'") && $0.hasSuffix("goes on, ducking it 15.0 dB") } },
                "\(rig.lyred.stderr)")
        return music
    }

    /// Waits for `senders` to end well, with no takeover, stops the receiver and reads its output as `song`
    /// started under the announcement `chime`: the music after it, down 15 dB under it and at its level after
    /// it, back up over the ramp from the announcement's last sample; the announcement at full level and whole
    /// across the change (a lost block would cost it its SNR), each held to what ffmpeg's libopus makes of it,
    /// as in anAnnouncementPlaysOverTheMusic.
    static func expectMusicCameUnder(_ rig: Rig, song: String, chime: String, senders: [Spawned], label: String,
                                     sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for sender in senders {
            try await sender.waitForExit(timeout: 30)
            #expect(sender.status == 0, "\(sender.stderr)", sourceLocation: sourceLocation)
        }
        #expect(!rig.lyred.stderr.contains("takes over"), "\(rig.lyred.stderr)", sourceLocation: sourceLocation)
        try await rig.stop()
        let parts = try await separate(rig.network, main: song, announce: chime, output: rig.output, label: label)
        #expect(parts["main_lag_samples"] > parts["announce_lag_samples"] + 48000 / 2, "the music did not start after the announcement: \(parts)",
                sourceLocation: sourceLocation)
        #expect(abs(parts["main_db_during"] + 15) < 0.5 && abs(parts["main_db_after"]) < 0.5, "\(parts)", sourceLocation: sourceLocation)
        #expect(parts["ramp_up_ms"] > 200 && parts["ramp_up_ms"] < 400, "\(parts)", sourceLocation: sourceLocation)
        #expect(abs(parts["announce_gain_db"]) < 0.5, "\(parts)", sourceLocation: sourceLocation)
        let (musicFloor, _) = try await libopusFloors(rig.network, input: song)
        let (sweepFloor, _) = try await libopusFloors(rig.network, input: chime)
        #expect(parts["main_snr_db"] >= musicFloor && parts["announce_snr_db"] >= sweepFloor - 1, "\(parts)", sourceLocation: sourceLocation)
    }

    /// README: a receiver mixes up to 4 sessions over what it plays; a fifth announcement gets one line that says
    /// why and what to do, exit 1, and what plays goes on: the music's sender and the four overlays end well.
    /// The first overlay asks to interrupt spoken audio: over music, which is not, it is mixed in.
    @Test func aFifthAnnouncementGetsOneLine() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 10, signal: "music")
        let bell = try await Self.sweep(rig.network, rate: 48000, seconds: 5)
        let music = try rig.network.spawn(["lyre", "play", song, "--to", "Speaker", "--name", "Music", "--group-socket", "off"])
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        let bells = try (1...4).map {
            try rig.network.spawn(["lyre", "play", bell, "--to", "Speaker", $0 == 1 ? "--interrupt-spoken-audio" : "--mix", "--name", "Bell \($0)",
                                   "--group-socket", "off"], name: "bell-\($0)")
        }
        #expect(await eventually { rig.lyred.stderr.components(separatedBy: " plays over 'Music'").count == 5 }, "\(rig.lyred.stderr)")
        let fifth = try await rig.network.run(["lyre", "play", bell, "--to", "Speaker", "--duck", "--name", "Bell 5", "--group-socket", "off"])
        CommandLineTests.expectOneLineError((fifth.status, fifth.stdout, fifth.stderr),
                                            mentioning: "it plays 4 sessions over 'Music' already, the most it mixes; try again when one ends; play without --duck to take it over")
        #expect(fifth.status == 1, "\(fifth.stderr)")
        for sender in bells + [music] {
            try await sender.waitForExit(timeout: 30)
            #expect(sender.status == 0, "\(sender.stderr)")
        }
        #expect(!rig.lyred.stderr.contains("takes over") && !rig.lyred.stderr.contains("pausing it"), "\(rig.lyred.stderr)")
        #expect(rig.lyred.stderr.split(separator: "\n").contains { $0.contains("'Bell 1'") && $0.contains("plays over 'Music'") && $0.hasSuffix(", mixed in") }, "\(rig.lyred.stderr)")
    }

    /// streaming.md §7: while an announcement plays over the music, the receiver's remote commands go to the
    /// music's sender (the main session's), and the main session's end does not end the announcement. `lyre
    /// remote pause` pauses the music, whose now playing then says so, while the announcement plays on; `lyre
    /// remote stop` ends the music's `lyre play` (exit 0) while the announcement still plays; the announcement
    /// then ends well, and its sweep is whole in the output, at its own level, across both (separated from the
    /// music as in anAnnouncementPlaysOverTheMusic, held to what ffmpeg's libopus makes of it).
    @Test func remoteCommandsDuringAnAnnouncementGoToTheMusic() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let song = try await Self.sweep(rig.network, rate: 48000, seconds: 30, signal: "music")
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: 8, signal: "full")
        let music = try rig.network.spawn(["lyre", "play", song, "--to", "Speaker", "--name", "Music", "--group-socket", "off"], name: "music")
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(1))
        let announce = try rig.network.spawn(["lyre", "play", chime, "--to", "Speaker", "--duck", "--name", "Doorbell", "--group-socket", "off"],
                                             name: "announcement")
        #expect(await eventually { rig.lyred.stderr.contains(" plays over 'Music'") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(1))
        func remote(_ command: String) async throws {
            let run = try await rig.network.run(["lyre", "remote", command, "--socket", "/run/lyred/control.sock"], timeout: 15)
            #expect(run.status == 0, "lyre remote \(command): \(run.stderr)")
        }
        func shown() async throws -> [String: Any] {
            let run = try await rig.network.run(["lyre", "remote", "now-playing", "--json", "--socket", "/run/lyred/control.sock"])
            return (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]) ?? [:]
        }
        try await remote("pause")
        let paused = try await eventually { let now = try await shown(); return now["state"] as? String == "paused" && now["sender"] as? String == "Music" }
        let pausedShown = try await shown()
        #expect(paused, "the music was not paused: \(pausedShown) \(music.stderr)")
        #expect(announce.isRunning, "the announcement ended on pause: \(announce.stderr)")
        let overlays = try await Self.overlaysShown(rig.network)
        #expect(overlays == ["Doorbell duck -15.0"], "the announcement is not shown playing over the paused music: \(String(describing: overlays))")
        try await remote("stop")
        try await music.waitForExit(timeout: 10)
        #expect(music.status == 0, "the music after stop: \(music.stderr)")
        #expect(announce.isRunning, "the announcement ended with the music: \(announce.stderr) \(rig.lyred.stderr)")
        try await announce.waitForExit(timeout: 30)
        #expect(announce.status == 0, "the announcement: \(announce.stderr)")
        #expect(!rig.lyred.stderr.contains("takes over"), "\(rig.lyred.stderr)")
        try await rig.stop()
        let parts = try await Self.separate(rig.network, main: song, announce: chime, output: rig.output, label: "remote commands during an announcement")
        func figure(_ key: String) -> Double { parts[key] }
        #expect(abs(figure("main_db_before")) < 0.5, "\(parts)")
        // Paused 1 to 2.5 s into the 8 s announcement: the music is gone from most of it (its median level
        // under it, where the file has music, reads -49 to -51 dB).
        #expect(figure("main_db_during") < -30, "the music played on under the announcement after pause: \(parts)")
        #expect(abs(figure("announce_gain_db")) < 0.5, "\(parts)")
        let (sweepFloor, _) = try await Self.libopusFloors(rig.network, input: chime)
        #expect(figure("announce_snr_db") >= sweepFloor - 1, "the announcement is not whole: \(parts), libopus \(sweepFloor) dB")
    }

    /// streaming.md §7, `Lyre-Interrupt`: a podcast (`lyre play --spoken-audio`) is paused, not played over, by
    /// an announcement that interrupts spoken audio (`--interrupt-spoken-audio`), and plays on when it ends. The receiver's output is the podcast up
    /// to a sample, the chime alone at its own level (the podcast not under it), and the podcast again from that
    /// very sample to its last (Tools/peers/audio.py splice, the chime measured and blanked).
    ///
    /// `lyre play` plays through the `QueuePlayer` an app embeds, which takes the receiver's pause and play as any
    /// remote command; an app's `spokenAudio` mode and `interruptSpokenAudioAndMixWithOthers` becoming the same
    /// `Lyre-Mode` and `Lyre-Interrupt` is held by AudioRoutingTests.anAppsSessionIsItsPlaybacksRequest.
    @Test func anAnnouncementPausesSpokenAudioWhichPlaysOnAfter() async throws {
        let rig = try await Rig(arguments: ["--mpris", "session"])
        defer { rig.network.close() }
        let podcast = try await Self.sweep(rig.network, rate: 48000, seconds: 6, hardEnds: true)
        let chime = try await Self.sweep(rig.network, rate: 48000, seconds: 2, signal: "full")
        let play = try rig.network.spawn(["lyre", "play", podcast, "--to", "Speaker", "--name", "Podcast", "--spoken-audio", "--group-socket", "off"],
                                         name: "podcast")
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        try await Task.sleep(for: .seconds(1.5))
        let announce = try rig.network.spawn(["lyre", "play", chime, "--to", "Speaker", "--interrupt-spoken-audio", "--name", "Doorbell",
                                              "--group-socket", "off"], name: "announcement")
        #expect(await eventually { rig.lyred.stderr.contains("paused for an interruption") }, "\(rig.lyred.stderr)")
        let shownOverlays = try await Self.overlaysShown(rig.network)
        #expect(shownOverlays == ["Doorbell pause"], "web API: \(String(describing: shownOverlays))")
        // MPRIS lists it beside the podcast (now-playing.md §6).
        let mprisShowsIt = try await eventually(timeout: 5) {
            try await rig.network.run(["playerctl", "-p", "lyred", "metadata", "lyre:overlays"], timeout: 5).stdout == "Doorbell pause\n"
        }
        #expect(mprisShowsIt, "MPRIS does not list the announcement as an overlay that paused the podcast")
        try await announce.waitForExit(timeout: 30)
        #expect(announce.status == 0, "the announcement: \(announce.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "the podcast: \(play.stderr)")
        let log = rig.lyred.stderr.split(separator: "\n")
        for (said, words) in [("the interruption", ["'Doorbell'", "plays over 'Podcast'", "pausing it (spoken audio)"]),
                              ("the pause", ["'Podcast'", "paused for an interruption"]), ("the resume", ["'Podcast'", "plays on after the interruption"])] {
            #expect(log.contains { line in words.allSatisfy(line.contains) }, "lyred did not log \(said): \(rig.lyred.stderr)")
        }
        #expect(!rig.lyred.stderr.contains("takes over"), "\(rig.lyred.stderr)")
        try await rig.stop()
        let result = try await rig.network.run(["python3", Self.audioTool, "splice", podcast, rig.output, "--blank", chime])
        let splice = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        print("the podcast around the announcement: \(splice)")
        func figure(_ key: String) -> Double { splice[key] as? Double ?? .nan }
        // Not a sample of the podcast lost or played twice (as a pause and play at the receiver), the pause as
        // long as the chime at least, and the podcast clean at once after it.
        #expect(abs(splice["edges_lost"] as? Int ?? .max) <= 1, "\(splice)")
        #expect(figure("pause_seconds") > 2 && figure("resume_snr_db") >= 20, "\(splice)")
        // The chime alone in the pause, at its full level, as clean as Opus leaves it: within 3 dB of ffmpeg's
        // libopus on it (27.2 dB; 25.9 dB read here over its whole span at one gain).
        let (chimeFloor, _) = try await Self.libopusFloors(rig.network, input: chime)
        #expect(abs(figure("blank_gain_db")) < 0.5 && figure("blank_snr_db") >= chimeFloor - 1, "\(splice)")
    }

    /// README, access `open`: GStreamer's RTSP RECORD client (`rtspclientsink`, gst-rtsp-server) is heard as
    /// ffmpeg's is: the sweep it encodes with its own opusenc comes out whole, and the session ends when the
    /// publisher closes its connection, not by lyred's own timeout.
    ///
    /// GStreamer 1.22 sometimes misses its own end of stream: its rtpsession forwards EOS to its RTCP sink only
    /// if the RTP pad is already marked EOS when the BYE goes out (`gst_rtp_session_send_rtcp`), and its RTCP
    /// thread can send that BYE while the EOS event is still being handled. Its RTCP sink then never ends and
    /// gst-launch waits for ever, deaf to SIGINT (2 runs in 24 of a bare loop here, 3 in 14 of this test, each
    /// with every packet received by lyred and no "sending EOS" in gst's debug log). Such a publisher is
    /// killed, as its user would have to, before lyred's own 10 s without packets would end the session.
    @Test func gstreamerPublisherIsHeard() async throws {
        guard TestNetwork.which("gst-launch-1.0") != nil else { throw TestNetworkError("gst-launch-1.0 is missing: run Tools/test, which installs it") }
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000)
        let push = try rig.network.spawn([
            "gst-launch-1.0", "-q", "filesrc", "location=\(sweep)", "!", "wavparse", "!", "audioconvert", "!", "audioresample", "!",
            "audio/x-raw,rate=48000,channels=2", "!", "opusenc", "bitrate=192000", "!", "rtspclientsink", "location=rtsp://127.0.0.1:\(rig.port)/",
        ])
        // The 3 s sweep, its set-up and lyred's latency are over well within 7 s.
        let finished = await eventually(timeout: 7) { !push.isRunning }
        if !finished { push.signal(SIGKILL) }
        try await push.waitForExit(timeout: 10)
        #expect(!finished || push.status == 0, "gst-launch-1.0: \(push.stdout) \(push.stderr)")
        #expect(await eventually { rig.lyred.stderr.contains("ended: connectionClosed") }, "\(rig.lyred.stderr)")
        try await rig.stop()
        #expect(rig.lyred.stderr.contains("session from 'GStreamer/") && !rig.lyred.stderr.contains("timed out"), "\(rig.lyred.stderr)")
        Self.expectSameAudio(try await Self.compare(rig.network, reference: sweep, output: rig.output))
    }

    /// ffmpeg's RTSP publisher asks for no latency: it gets lyred's `--latency` (README "output"), and
    /// `--stats-interval` has lyred log its statistics that often while it plays.
    @Test(arguments: ["udp", "tcp"])
    func ffmpegPublisherIsHeard(transport: String) async throws {
        guard TestNetwork.which("ffmpeg") != nil else { throw TestNetworkError("ffmpeg is missing: run Tools/test, which installs it") }
        let rig = try await Rig(arguments: ["--latency", "400", "--stats-interval", "0.5"])
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000)
        let flac = rig.network.scratch.appendingPathComponent("sweep.flac").path
        let encode = try await rig.network.run(["ffmpeg", "-loglevel", "error", "-y", "-i", sweep, flac])
        #expect(encode.status == 0, "\(encode.stderr)")
        let push = try rig.network.spawn([
            "ffmpeg", "-loglevel", "error", "-re", "-i", flac, "-c:a", "libopus", "-b:a", "128k",
            "-rtsp_transport", transport, "-f", "rtsp", "rtsp://127.0.0.1:\(rig.port)/",
        ])
        // A sender that never sends a list of commands accepts none (now-playing.md §4.1): the receiver refuses
        // a command for it and sends it nothing.
        #expect(await eventually { rig.lyred.stderr.contains("session from") }, "\(rig.lyred.stderr)")
        let pause = try await rig.network.run(["lyre", "remote", "pause"])
        #expect(pause.status != 0 && pause.stderr.contains("does not accept pause"), "lyre remote pause: \(pause.stdout) \(pause.stderr)")
        try await push.waitForExit(timeout: 60)
        #expect(push.status == 0, "ffmpeg: \(push.stderr)")
        try await rig.stop()
        Self.expectSameAudio(try await Self.compare(rig.network, reference: sweep, output: rig.output))
        #expect(rig.lyred.stderr.contains("': opus, latency 400 ms"), "\(rig.lyred.stderr)")
        // The 3 s sweep and its set-up take more than 2 s: at least four periodic lines (each session's own
        // closing stats line says "session from").
        let periodic = rig.lyred.stderr.split(separator: "\n").filter { $0.contains(" stats: ") && !$0.contains("session from") }
        #expect(periodic.count >= 4, "\(rig.lyred.stderr)")
    }

    /// IPv6 for control and media (issue 9): lyred listens on every address of both families by default, and
    /// `lyre play` to `[::1]:PORT` (its RTSP, RTP, RTCP and timing exchange all over IPv6) and ffmpeg's
    /// publisher to `rtsp://[::1]:PORT/` are each heard intact. (The other tests reach the same default
    /// listener over IPv4.)
    @Test(arguments: ["lyre", "ffmpeg"])
    func playsOverIPv6(sender: String) async throws {
        guard TestNetwork.which("ffmpeg") != nil else { throw TestNetworkError("ffmpeg is missing: run Tools/test, which installs it") }
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 3, signal: "full")
        let push = sender == "lyre"
            ? try await rig.network.run(["lyre", "play", sweep, "--host", "[::1]:\(rig.port)"])
            : try await rig.network.run(["ffmpeg", "-loglevel", "error", "-re", "-i", sweep, "-c:a", "libopus", "-b:a", "128k",
                                         "-f", "rtsp", "rtsp://[::1]:\(rig.port)/"])
        #expect(push.status == 0, "\(sender): \(push.stderr)")
        try await rig.stop()
        Self.expectSameAudio(try await Self.compare(rig.network, reference: sweep, output: rig.output))
        let stats = rig.lyred.stderr.split(separator: "\n").last { $0.contains("stats: received=") }.map(String.init) ?? ""
        #expect(stats.contains("peer=[IPv6]::1/") && stats.contains("foreign=0") && stats.contains("late=0"), "\(rig.lyred.stderr)")
        if sender == "lyre" {
            // The timing exchange ran over IPv6 too: the receiver measured the round trip.
            #expect(stats.contains("rtt-us="), "\(stats)")
        }
    }

    /// The input through ffmpeg's libopus at `kbps` (encoded to Ogg, decoded by ffmpeg), compared with the input
    /// as `compare` does: what Opus itself makes of this input at this bitrate, the figure Lyre's output is held to.
    static func libopusReference(_ network: TestNetwork, input: String, kbps: Int) async throws -> [String: Any] {
        guard TestNetwork.which("ffmpeg") != nil else { throw TestNetworkError("ffmpeg is missing: run Tools/test, which installs it") }
        let opus = network.scratch.appendingPathComponent("reference.opus").path
        let decoded = network.scratch.appendingPathComponent("reference.wav").path
        let encode = try await network.run(["ffmpeg", "-loglevel", "error", "-y", "-i", input, "-c:a", "libopus",
                                            "-b:a", "\(kbps)k", opus])
        #expect(encode.status == 0, "ffmpeg: \(encode.stderr)")
        let decode = try await network.run(["ffmpeg", "-loglevel", "error", "-y", "-i", opus, "-ar", "48000", decoded])
        #expect(decode.status == 0, "ffmpeg: \(decode.stderr)")
        return try await compare(network, reference: input, output: decoded)
    }

    /// What music through Opus at `kbps` is held to, from ffmpeg's libopus on the same file: its SNR less 2 dB
    /// overall, and for a 20 ms edge (the file's ends, or where a stream resumes mid-song) the lowest of its
    /// edges and its whole less 3 dB, as end to end the receiver's clock tracking costs 1 to 2 dB
    /// (`EncodeQualityTests`). A fixed 20 dB sat on music's own figure at 128 kbit/s (libopus
    /// 20.3 dB), and a stream resumed after lyred's restart once read 19.94 dB in its first 20 ms.
    static func libopusFloors(_ network: TestNetwork, input: String, kbps: Int = 128) async throws -> (whole: Double, edges: Double) {
        let libopus = try await libopusReference(network, input: input, kbps: kbps)
        let whole = libopus["snr_db"] as? Double ?? 100
        let edges = min(libopus["head_snr_db"] as? Double ?? 100, libopus["tail_snr_db"] as? Double ?? 100, whole)
        print("ffmpeg's libopus at \(kbps) kbit/s on \((input as NSString).lastPathComponent): \(libopus)")
        return (whole - 2, edges - 3)
    }

    /// The floors of a test that holds a stream at the default 128 kbit/s to 20 dB overall and at its 20 ms ends:
    /// 20 dB, or `libopusFloors` where that is lower, as it is for music (ffmpeg's libopus reads 20.3 dB on it,
    /// so 20 dB asked the receiver's output to match a reference encoder to 0.3 dB).
    static func opusFloors(_ network: TestNetwork, input: String) async throws -> (whole: Double, edges: Double) {
        let (whole, edges) = try await libopusFloors(network, input: input)
        return (min(20, whole), min(20, edges))
    }

    /// `lyre play --bitrate` is the bitrate the stream is encoded at, and ffmpeg decodes it from its RTP as well
    /// as ffmpeg's libopus encode of the same input at that bitrate decodes: within 1 dB below and 1.5 above
    /// (music-like material at 32 kbit/s, where libopus reads 10.1 dB; the default 128 kbit/s would read 20.4 dB
    /// and fail). The encode itself, at every bitrate on two hard signals, is compared in process
    /// (`EncodeQualityTests.encodeIsAsGoodAsFFmpegsLibopus`); this is the one case that goes through the
    /// command line, the network and a decoder nobody here wrote.
    ///
    /// And what `lyre play` sends is standard RTP: ffmpeg decodes it from the SDP the sender announced
    /// (`opus/48000/2`), given only the port (Tools/peers/rtsp-sink.py, a receiver that knows nothing of Lyre,
    /// answers the RTSP and runs ffmpeg). ffmpeg's libopus decoder is used: its native Opus decoder mangles
    /// the 20–60 Hz start of a sweep (3.7 dB) for any encoder's stream.
    @Test func lyrePlaysAtTheBitrateItIsGiven() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let kbps = 32
        let music = try await Self.sweep(network, rate: 48000, seconds: 4, signal: "music")
        let reference = try await Self.libopusReference(network, input: music, kbps: kbps)
        let out = network.scratch.appendingPathComponent("lyre.wav").path
        let sink = try network.spawn(["python3", TestNetwork.tools + "/peers/rtsp-sink.py", "7750", out], name: "rtsp-sink")
        #expect(await eventually { sink.stdout.contains("listening") }, "rtsp-sink: \(sink.stderr)")
        let play = try await network.run(["lyre", "play", music, "--host", "127.0.0.1:7750", "--bitrate", String(kbps)])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await sink.waitForExit(timeout: 20)
        let report = sink.jsonLines.last ?? [:]
        #expect((report["sdp"] as? String)?.contains("a=rtpmap:96 opus/48000/2") == true, "\(sink.stdout) \(sink.stderr)")
        #expect(Self.ffmpegDecodedCleanly(report), "ffmpeg: \(sink.stdout) \(sink.stderr)")
        let lyre = try await Self.compare(network, reference: music, output: out)
        let (mine, theirs) = (lyre["snr_db"] as? Double ?? -100, reference["snr_db"] as? Double ?? 100)
        print("music at \(kbps) kbit/s through lyre play: Lyre \(mine) dB, ffmpeg's libopus \(theirs) dB")
        #expect(mine >= theirs - 1 && mine <= theirs + 1.5 && lyre["gaps"] as? Int == 0,
                "\(kbps) kbit/s: Lyre \(mine) dB, ffmpeg's libopus \(theirs) dB: \(lyre)")
    }

    /// rtsp-sink.py's ffmpeg ended cleanly: with status 0 on 'q' (or by itself, once its input timed out after
    /// the stream, which it logs as "Connection timed out"), or, when it did not answer 'q' in time, with 255 on
    /// SIGINT, its clean stop on a signal. Killed, or any other status, is not clean.
    static func ffmpegDecodedCleanly(_ report: [String: Any]) -> Bool {
        let status = report["ffmpeg_status"] as? Int, by = report["ffmpeg_stopped_by"] as? String
        return (by == "q" && status == 0) || (by == "SIGINT" && status == 255)
    }

    /// now-playing.md §3: a Lyre sender sends an item's artwork before that item's now-playing snapshot, and
    /// only when it changes. A queue of three: two beside one cover.png, the third beside a cover.jpg; seen by a
    /// plain receiver (rtsp-sink.py), which records every SET_PARAMETER in order.
    @Test func artworkGoesBeforeItsItemAndOnlyWhenItChanges() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 1)
        let dir = network.scratch.path
        let made = try await network.shell("""
            set -e; mkdir -p '\(dir)/one' '\(dir)/two'; cp '\(sweep)' '\(dir)/one/a.wav'; cp '\(sweep)' '\(dir)/one/b.wav'; cp '\(sweep)' '\(dir)/two/c.wav'
            ffmpeg -v error -y -f lavfi -i color=c=red:s=48x48 -frames:v 1 '\(dir)/one/cover.png'
            ffmpeg -v error -y -f lavfi -i color=c=blue:s=40x40 -frames:v 1 '\(dir)/two/cover.jpg'
            """)
        #expect(made.status == 0, "\(made.stderr)")
        let sink = try network.spawn(["python3", TestNetwork.tools + "/peers/rtsp-sink.py", "7750", dir + "/out.wav"], name: "rtsp-sink")
        #expect(await eventually { sink.stdout.contains("listening") }, "rtsp-sink: \(sink.stderr)")
        let play = try await network.run(["lyre", "play", dir + "/one/a.wav", dir + "/one/b.wav", dir + "/two/c.wav", "--host", "127.0.0.1:7750"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await sink.waitForExit(timeout: 20)
        // The images and the snapshots, in the order sent (commands and volume leave them out).
        let sent = (sink.jsonLines.last?["parameters"] as? [[Any]] ?? []).compactMap { $0.first as? String }
            .filter { $0.hasPrefix("image/") || $0 == "application/json" }
        #expect(sent == ["image/png", "application/json", "application/json", "image/jpeg", "application/json"], "\(sent)")
    }

    /// streaming.md §3: a receiver that does not answer `Lyre-Channels` is version 1 and would play both
    /// channels, so a sender asking it for `left` ends that session and says so; `stereo`, which it plays as
    /// asked, is not refused. (Tools/peers/rtsp-sink.py knows nothing of version 2.) Nor of pairing: `lyre pair`
    /// is told 501 and says the receiver does not pair.
    @Test func aVersion1ReceiverIsRefusedOnlyAMapItCannotApply() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 1)
        for (map, plays) in [("left", false), ("stereo", true)] {
            let out = network.scratch.appendingPathComponent("v1-\(map).wav").path
            let sink = try network.spawn(["python3", TestNetwork.tools + "/peers/rtsp-sink.py", "7750", out], name: "rtsp-sink-\(map)")
            #expect(await eventually { sink.stdout.contains("listening") }, "rtsp-sink: \(sink.stderr)")
            let play = try await network.run(["lyre", "play", sweep, "--host", "127.0.0.1:7750=\(map)"])
            if plays {
                #expect(play.status == 0, "=\(map): \(play.stderr)")
            } else {
                #expect(play.status != 0 && play.stderr.split(separator: "\n").count == 1 && play.stderr.contains(map), "=\(map): \(play.stderr)")
            }
            try await sink.waitForExit(timeout: 20)
        }
        // pairing.md §3: a receiver that does not pair answers PAIR 501; `lyre pair` says so in one line.
        let sink = try network.spawn(["python3", TestNetwork.tools + "/peers/rtsp-sink.py", "7750", network.scratch.appendingPathComponent("v1-pair.wav").path],
                                     name: "rtsp-sink-pair")
        #expect(await eventually { sink.stdout.contains("listening") }, "rtsp-sink: \(sink.stderr)")
        let pair = try await network.run(["lyre", "pair", "--host", "127.0.0.1:7750"])
        #expect(pair.status != 0 && pair.stderr.split(separator: "\n").count == 1 && pair.stderr.contains("does not pair"), "\(pair.stderr)")
        try await sink.waitForExit(timeout: 20)
    }

    /// A plain receiver (Tools/peers/rtsp-sink.py) on `port` that decodes the RTP itself (`--decode`, media on
    /// `media`, latency 250 ms), listening.
    static func decodingSink(_ network: TestNetwork, port: Int, media: Int, _ options: [String]) async throws -> Spawned {
        let out = network.scratch.appendingPathComponent("sink-\(port).wav").path
        let sink = try network.spawn(["python3", TestNetwork.tools + "/peers/rtsp-sink.py", String(port), out, "--decode", "--latency", "250",
                                      "--media-port", String(media)] + options, name: "rtsp-sink-\(port)")
        #expect(await eventually { sink.stdout.contains("listening") }, "rtsp-sink: \(sink.stderr)")
        return sink
    }

    /// streaming.md §3, FLUSH: a pause resumes from where the outputs stopped. With several rooms, from the
    /// earliest room's `Lyre-Stopped-At`; with a receiver that does not answer it (version 1), from the frame due
    /// when the FLUSH was sent. Plain receivers (Tools/peers/rtsp-sink.py --decode) send the pause and the play,
    /// answer FLUSH as told, decode the RTP with libopus themselves and find, by cross-correlation, where in the
    /// audio before the pause the resumed audio from `Lyre-Start-At` on belongs (pink noise from ffmpeg, so that
    /// only one place matches). Positions are in samples from the FLUSH's `RTP-Info` rtptime. And as they never
    /// echo `Lyre-Start-At` (§3, RECORD), the resume is primed with silence.
    @Test func aResumeStartsWhereTheEarliestRoomStoppedOrWhereAVersion1OneWasDue() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let noise = network.scratch.appendingPathComponent("pink.wav").path
        let made = try await network.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "anoisesrc=d=5:c=pink:r=48000:a=0.3", "-ac", "2", noise])
        #expect(made.status == 0, "\(made.stderr)")
        func sink(_ port: Int, media: Int, _ options: [String]) async throws -> Spawned {
            try await Self.decodingSink(network, port: port, media: media, options)
        }
        func resume(_ sink: Spawned) async throws -> [String: Double] {
            try await sink.waitForExit(timeout: 20)
            let resume = (sink.jsonLines.last?["resume"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.doubleValue }
            // The resumed audio is the audio from before the pause (Opus both times: a normalised peak near 1).
            #expect((resume["match"] ?? 0) > 0.8, "\(resume) \(sink.stderr)")
            // §3, RECORD: the sink never echoes `Lyre-Start-At`, so what comes before it is silence, not the
            // 20 ms of audio before the stop (pink noise at about -15 dBFS).
            #expect((resume["primed_db"] ?? 0) < -50, "priming: \(resume)")
            return resume
        }
        // Version 1: no Lyre-Stopped-At. The sender takes the frame due as it sent the FLUSH: at most one 20 ms
        // frame (960 samples) before the sample due when the FLUSH arrived, and not after it (1 ms of slack).
        let v1 = try await sink(7750, media: 5004, ["--pause"])
        let play = try await network.run(["lyre", "play", noise, "--host", "127.0.0.1:7750", "--latency", "250"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        let alone = try await resume(v1)
        let due = try #require(alone["due"]), from = try #require(alone["resumed_from"])
        print("version 1: resumed from \(from), the FLUSH arrived at \(due) (samples from its rtptime)")
        #expect(from <= due + 48 && from >= due - 960 - 48, "version 1: \(alone)")
        // Two rooms that stopped 40 and 10 ms before the sample due: both resume from the earlier.
        let early = try await sink(7750, media: 5004, ["--pause", "--stopped-back", "40"])
        let late = try await sink(7760, media: 5010, ["--stopped-back", "10"])
        let both = try await network.run(["lyre", "play", noise, "--host", "127.0.0.1:7750", "--host", "127.0.0.1:7760", "--latency", "250"])
        #expect(both.status == 0, "lyre play: \(both.stderr)")
        let first = try await resume(early), second = try await resume(late)
        let stops = try [#require(first["stopped_at"]), #require(second["stopped_at"])]
        #expect(stops[1] - stops[0] > 960, "the rooms' stops: \(stops)")
        for room in [first, second] {
            #expect(abs((room["resumed_from"] ?? 0) - stops.min()!) <= 2, "resumed from \(room), the rooms stopped at \(stops)")
        }
    }

    /// streaming.md §3, RECORD: a room that joins while a resumed playback runs gets the same `Lyre-Start-At`,
    /// with the same anchor, as the rooms that resumed. One room (rtsp-sink.py) asks pause, then play; once its
    /// resume's RECORD is in, a second room is added with `lyre group add`: its one RECORD names the anchor and
    /// the start the first room's resume named.
    @Test func aRoomThatJoinsAResumedPlaybackGetsItsStart() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let song = try await Self.sweep(network, rate: 48000, seconds: 6, signal: "music")
        let first = try await Self.decodingSink(network, port: 7750, media: 5004, ["--pause"])
        let joiner = try await Self.decodingSink(network, port: 7760, media: 5010, [])
        let socket = network.scratch.appendingPathComponent("group.sock").path
        let play = try network.spawn(["lyre", "play", song, "--host", "127.0.0.1:7750", "--latency", "250", "--group-socket", socket], name: "lyre-play")
        #expect(await eventually { first.stdout.contains("resumed") }, "no resume: \(first.stderr)\n\(play.stderr)")
        let added = try await network.run(["lyre", "group", "add", "127.0.0.1:7760", "--socket", socket])
        #expect(added.status == 0, "lyre group add: \(added.stderr)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await first.waitForExit(timeout: 20)
        try await joiner.waitForExit(timeout: 20)
        func records(_ sink: Spawned) -> [[String?]] {
            (sink.jsonLines.last?["flow"] as? [[Any]] ?? []).filter { $0.first as? String == "RECORD" }.map { $0.dropFirst(2).map { $0 as? String } }
        }
        let resumed = records(first).last, joined = records(joiner)
        #expect(records(first).count == 2 && resumed?[1] != nil, "the first room's RECORDs, [anchor, start]: \(records(first))")
        #expect(joined.count == 1 && joined.first == resumed, "the first room resumed with \(String(describing: resumed)); the room that joined got \(joined)")
    }

    /// now-playing.md §4.2 from the sender's side: `lyre play` answers a receiver's commands with the handler's
    /// result in `Lyre-Command-Status` and the status code, takes them only with its session's id (454), and
    /// refuses a malformed or unknown one (451). A plain receiver (Tools/peers/rtsp-sink.py) sends them, as the
    /// spec shows, over the session's connection. It sends no reports (as ffmpeg's would not), so the sender does
    /// not watch it (streaming.md §9.1): 14 s with none, and the room is not dropped.
    @Test func aSenderAnswersRemoteCommandsAsNowPlayingSays() async throws {
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 14)
        let out = network.scratch.appendingPathComponent("ffmpeg.wav").path
        let sink = try network.spawn(["python3", TestNetwork.tools + "/peers/rtsp-sink.py", "7750", out, "--commands"], name: "rtsp-sink")
        #expect(await eventually { sink.stdout.contains("listening") }, "rtsp-sink: \(sink.stderr)")
        let play = try await network.run(["lyre", "play", sweep, "--host", "127.0.0.1:7750"])
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await sink.waitForExit(timeout: 20)
        let answers = (sink.jsonLines.last?["commands"] as? [[Any]] ?? []).map { "\($0[0]) \($0[1]) \($0[2])" }
        #expect(answers == [
            "past_the_end 404 noSuchContent", "position_past_the_end 500 commandFailed", "withdrawn 403 disabled",
            "other_session 454 <null>", "no_session 454 <null>", "malformed 451 <null>", "unknown 451 <null>",
            "pause 200 success", "play 200 success", "seek_back 200 success",
        ], "\(sink.stdout) \(sink.stderr)")
        // streaming.md §3: a pause is FLUSH, a resume RECORD with a new anchor, and a seek (back, here) FLUSH then
        // RECORD: the RTP timestamps keep counting up, only the anchor changes.
        let flow = (sink.jsonLines.last?["flow"] as? [[Any]] ?? []).map { ($0[0] as? String ?? "", $0[1] as? String, $0[2] as? String) }
        #expect(flow.map(\.0) == ["RECORD", "FLUSH", "RECORD", "FLUSH", "RECORD", "TEARDOWN"], "\(flow)")
        #expect(!play.stderr.contains("no longer available"), "lyre play: \(play.stderr)")
        // FLUSH names the first packet after it, which the RECORD after it starts with; each RECORD starts later
        // in RTP time than the one before, the seek back included.
        let times = flow.dropLast().compactMap { $0.1?.firstMatch(of: /rtptime=(\d+)/).flatMap { UInt32($0.1) } }
        let anchors = flow.filter { $0.0 == "RECORD" }.compactMap(\.2)
        #expect(times.count == 5 && times[1] == times[2] && times[3] == times[4], "RTP-Info: \(flow)")
        #expect(times.count == 5 && times[0] < times[2] && times[2] < times[4], "RTP-Info: \(flow)")
        #expect(anchors.count == 3 && Set(anchors).count == 3, "Lyre-Anchor: \(flow)")
    }

    @Test func secondSenderTakesOver() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let long = try await Self.sweep(rig.network, rate: 48000, seconds: 20)
        let short = try await Self.sweep(rig.network, rate: 48000, seconds: 1)
        let first = try rig.network.spawn(["lyre", "play", long, "--to", "Speaker", "--name", "Alice"])
        #expect(await eventually { rig.lyred.stderr.contains("session from 'Alice'") })
        let second = try await rig.network.run(["lyre", "play", short, "--to", "Speaker", "--name", "Bob"])
        #expect(second.status == 0, "\(second.stderr)")
        try await first.waitForExit(timeout: 10)
        #expect(first.status != 0)
        #expect(first.stderr.contains("'Bob' took over"), "\(first.stderr)")
        // streaming.md §3: the receiver logs each sender's Lyre-Sender-ID, its id (both run as this user here, so
        // it is the same), with the session and with the takeover.
        let id = try String(contentsOfFile: rig.network.scratch.appendingPathComponent("state/lyre/device-id").path, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.count == 32 && rig.lyred.stderr.contains("session from 'Alice': opus, latency 250 ms, channels stereo, sender id \(id)"), "\(id): \(rig.lyred.stderr)")
        #expect(rig.lyred.stderr.contains("'Bob' (id \(id)) takes over from 'Alice' (id \(id))"), "\(rig.lyred.stderr)")
    }

    /// A second connection that never set up a session (Tools/peers/rtsp-intruder.py) sends every request that
    /// would change the session that plays: each is refused with 454 or 455 and changes nothing. The volume
    /// reads the same, no metadata of its shows, and the sender's audio comes out whole and at full level.
    @Test func onlyTheSessionsOwnConnectionChangesIt() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 6)
        let play = try rig.network.spawn(["lyre", "play", sweep, "--to", "Speaker", "--name", "Alice"])
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        let intruder = try await rig.network.run(["python3", TestNetwork.tools + "/peers/rtsp-intruder.py", "127.0.0.1", String(rig.port)])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(intruder.stdout.utf8)) as? [String: Any], "\(intruder.stderr)")
        let requests = report["requests"] as? [[String: Any]] ?? []
        #expect(requests.count == 16, "\(report)")
        for request in requests {
            let expected = request["session"] as? Bool == true ? 454 : 455
            #expect(request["status"] as? Int == expected && !(request["error"] as? String ?? "").isEmpty, "\(request)")
        }
        #expect(report["volume_after"] as? String == report["volume_before"] as? String, "\(report)")
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await rig.stop()
        #expect(!rig.lyred.stderr.contains("Intruder") && rig.lyred.stderr.contains("late=0"), "\(rig.lyred.stderr)")
        let comparison = try await Self.compare(rig.network, reference: sweep, output: rig.output)
        Self.expectSameAudio(comparison)
        #expect((comparison["gain"] as? Double ?? 0) > 0.9, "the volume changed: \(comparison)")
    }

    /// A receiver found once is played again at its remembered address: `lyre play` remembers it by id from
    /// discovery and connects straight there. When another receiver has that address now, its OPTIONS answer
    /// tells another id: lyre looks again, finds the receiver where it moved, plays there and nothing at the
    /// other, and remembers the new address; from then on it plays there with avahi-daemon stopped.
    @Test func aKnownReceiverIsPlayedAtItsRememberedAddress() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 1)
        let known = rig.network.scratch.appendingPathComponent("state/lyre/receivers.json")
        func remembered() throws -> [String: Any]? {
            let entries = try JSONSerialization.jsonObject(with: Data(contentsOf: known)) as? [[String: Any]]
            return entries?.first { $0["name"] as? String == "Speaker" }
        }
        let first = try await rig.network.run(["lyre", "play", sweep, "--to", "Speaker"])
        #expect(first.status == 0, "\(first.stderr)")
        let entry = try #require(try remembered(), "nothing remembered in \(known.path)")
        #expect(entry["host"] as? String == "127.0.0.1" && entry["port"] as? Int == rig.port, "\(entry)")

        // Speaker moves to another port (same state, same id); another receiver takes its old one.
        try await rig.stop()
        func receiver(_ name: String, port: Int, state: String) throws -> Spawned {
            try rig.network.spawn(["lyred", "--name", name, "--port", String(port), "--state-dir", state, "--log-level", "info",
                                   "--control-socket", "off", "--mpris", "off",
                                   "--output", "wav:" + rig.network.scratch.appendingPathComponent("\(name).wav").path], name: name)
        }
        let other = try receiver("Other", port: rig.port, state: "/run/other")
        let moved = try receiver("Speaker", port: rig.port + 1, state: "/run/lyred")
        #expect(await eventually(timeout: 30) { other.stderr.contains("advertised as") && moved.stderr.contains("advertised as") },
                "\(other.stderr)\n\(moved.stderr)")
        let third = try await rig.network.run(["lyre", "play", sweep, "--to", "Speaker", "--log-level", "debug"])
        #expect(third.status == 0 && third.stderr.contains("is now another receiver"), "\(third.stderr)")
        #expect(moved.stderr.contains("session from") && !other.stderr.contains("session from"), "\(moved.stderr)\n\(other.stderr)")
        #expect(try remembered()?["port"] as? Int == rig.port + 1)

        // Without mDNS at all: it plays at the remembered address.
        #expect(try await rig.network.run([TestNetwork.tools + "/avahi-ctl", "stop"]).status == 0)
        let last = try await rig.network.run(["lyre", "play", sweep, "--to", "Speaker", "--timeout", "1"])
        #expect(last.status == 0, "without mDNS: \(last.stderr)")
        #expect(moved.stderr.components(separatedBy: "': opus, latency").count == 3, "two sessions: \(moved.stderr)")
    }

    /// 40 plays in a row, each right after the last and each found through mDNS (the remembered address is
    /// forgotten before every one): each finds the receiver and plays. One in eight once failed with "has no
    /// IPv4 address" when the receiver's update after a session resolved with only its IPv6 address (issue 12):
    /// such a defect passes 40 plays in a row once in 200 runs ((7/8)^40 = 0.5 %).
    @Test func fortyPlaysInARowEachFindTheReceiver() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let short = try await Self.sweep(rig.network, rate: 48000, seconds: 0.1)
        let known = rig.network.scratch.appendingPathComponent("state/lyre/receivers.json").path
        let plays = 40
        let errors = rig.network.scratch.appendingPathComponent("play.err").path
        let loop = try await rig.network.shell("""
            failed=0
            for i in $(seq \(plays)); do
              rm -f '\(known)'
              '\(TestNetwork.binaries)/lyre' play '\(short)' --to Speaker --latency 20 2>'\(errors)' || { failed=$((failed + 1)); echo "play $i: $(cat '\(errors)')"; }
            done
            echo "failed=$failed"
            """, timeout: 400)
        #expect(loop.stdout.hasSuffix("failed=0\n"), "\(loop.stdout) \(loop.stderr)")
        // README "play": `--to` is remembered as the preferred output, so a play that names none goes there, even
        // with another receiver on the network.
        let other = try rig.network.spawn(["lyred", "--name", "Other", "--port", "7721", "--state-dir", "/run/lyred-other", "--output", "null",
                                           "--control-socket", "off", "--mpris", "off", "--web", "off", "--log-level", "info"], name: "lyred-other")
        #expect(await eventually { other.stderr.contains("advertised as") }, "\(other.stderr)")
        let preferred = try await rig.network.run(["lyre", "play", short, "--latency", "20"])
        #expect(preferred.status == 0, "\(preferred.stderr)")
        #expect(!other.stderr.contains("session from"), "\(other.stderr)")
        try await rig.stop()
        let sessions = rig.lyred.stderr.components(separatedBy: "': opus, latency 20 ms").count - 1
        #expect(sessions == plays + 1, "the receiver saw \(sessions) sessions")
    }

    /// The receiver killed while it plays: `lyre play` pauses and says so, waits for it (issue 27), and Ctrl-C
    /// still ends it at once.
    @Test func receiverGoneMakesTheSenderPause() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let long = try await Self.sweep(rig.network, rate: 48000, seconds: 20)
        let sender = try rig.network.spawn(["lyre", "play", long, "--to", "Speaker"])
        // Killed while it plays: "now playing" is logged after RECORD. (Killed during set-up, the sender
        // says it cannot play there, which is right too but is not what this test is about.)
        #expect(await eventually { rig.lyred.stderr.contains("now playing:") }, "\(rig.lyred.stderr)")
        rig.lyred.signal(SIGKILL)
        #expect(await eventually { sender.stderr.contains("paused: 'Speaker' is no longer available; it plays on when it is back") },
                "\(sender.stderr)")
        try await Task.sleep(for: .seconds(1))
        #expect(sender.isRunning, "lyre play ended instead of waiting: \(sender.stderr)")
        sender.signal(SIGINT)
        try await sender.waitForExit(timeout: 5)
        #expect(sender.status == 0, "\(sender.stderr)")
    }

    @Test func senderGoneReturnsTheReceiverToIdle() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let long = try await Self.sweep(rig.network, rate: 48000, seconds: 20)
        let sender = try rig.network.spawn(["lyre", "play", long, "--to", "Speaker", "--name", "Carol"])
        func device() async throws -> [String: Any]? {
            let listing = try await rig.network.run(["lyre", "devices", "--json"])
            return (try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [[String: Any]])?.first
        }
        func status() async throws -> String? { try await device()?["status"] as? String }
        // Playing, its TXT names the sender (sn, from Lyre-Sender-Name: streaming.md §3).
        #expect(try await eventually { try await device().map { $0["status"] as? String == "playing" && $0["sender"] as? String == "Carol" } == true })
        sender.signal(SIGKILL)
        #expect(try await eventually(timeout: 5) { try await status() == "idle" })
    }

    @Test func outputThatCannotOpenIsAdvertisedUnavailable() async throws {
        let rig = try await Rig(output: "nosuchpcm")
        defer { rig.network.close() }
        #expect(await eventually { rig.lyred.stderr.contains("output ALSA nosuchpcm unavailable") }, "\(rig.lyred.stderr)")
        // libasound's own reason is in that one line, and libasound prints nothing itself on each retry.
        #expect(rig.lyred.stderr.contains("Unknown PCM nosuchpcm"), "\(rig.lyred.stderr)")
        #expect(!rig.lyred.stderr.contains("ALSA lib"), "\(rig.lyred.stderr)")
        #expect(try await eventually {
            let listing = try await rig.network.run(["lyre", "devices", "--json"])
            let devices = try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [[String: Any]]
            return devices?.first?["status"] as? String == "unavailable"
        })
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 1)
        let play = try await rig.network.run(["lyre", "play", sweep, "--host", "127.0.0.1:\(rig.port)"])
        #expect(play.status != 0)
        #expect(play.stderr.contains("audio output is unavailable"), "\(play.stderr)")
        // streaming.md §8: the ANNOUNCE is answered 503 with `Retry-After: 5`.
        let raw = try await rig.network.run(["python3", "-c", """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            sdp = b"v=0\\r\\no=- 0 0 IN IP4 127.0.0.1\\r\\ns=Lyre\\r\\nc=IN IP4 127.0.0.1\\r\\nt=0 0\\r\\nm=audio 0 RTP/AVP 96\\r\\na=rtpmap:96 opus/48000/2\\r\\n"
            s.sendall(b"ANNOUNCE rtsp://127.0.0.1/ RTSP/1.0\\r\\nCSeq: 1\\r\\nContent-Type: application/sdp\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(sdp) + sdp)
            s.settimeout(5)
            print(s.recv(4096).decode())
            """, String(rig.port)])
        #expect(raw.stdout.hasPrefix("RTSP/1.0 503") && raw.stdout.contains("Retry-After: 5\r\n"), "\(raw.stdout) \(raw.stderr)")
    }

    /// Volume goes to the output's mixer when it has one: here PulseAudio's sink's, which ALSA's pulse control
    /// calls `Master` (lyred plays through libpulse, `PulseOutput`). The sink's volume shows the step, and what
    /// leaves the sink is lowered once, not twice.
    @Test func volumeIsSetOnTheMixerAndOnlyThere() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let env = try await Self.startPulseAudio(network)
        let lyred = try Self.spawnPulseSpeaker(network, env: env, ["--log-level", "info", "--control-socket", "/run/lyred.sock"])
        #expect(await eventually { lyred.stderr.contains("volume on mixer control 'Master'") }, "\(lyred.stderr)")
        // PulseAudio's stream keeps a device's 20 ms buffer; PipeWire's PCM gets 60 (ALSAOutput.pipeWireBufferMicroseconds).
        #expect(lyred.stderr.contains("output ALSA pulse open, latency 20.0 ms"), "\(lyred.stderr)")
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 30)
        let sender = try network.spawn(["lyre", "play", sweep, "--to", "Speaker"])
        defer { sender.signal(SIGINT) }
        #expect(await eventually { lyred.stderr.contains("now playing:") }, "\(lyred.stderr)")
        for _ in 0..<2 {
            let step = try await network.run(["lyre", "remote", "volume", "down", "--socket", "/run/lyred.sock"])
            #expect(step.status == 0, "\(step.stderr)")
        }
        var sinkVolume = ""
        #expect(try await eventually {
            sinkVolume = try await network.run(env + ["timeout", "5", "pactl", "get-sink-volume", "lyre"]).stdout
            return sinkVolume.contains("-3.75 dB")
        }, "two steps of 1.875 dB on the sink: \(sinkVolume)")
        // What the sink plays: the sweep's -9.03 dBFS RMS (a -6 dBFS sine), 3.75 dB down.
        let rms = try await Self.sinkLevel(network, env: env)
        #expect(abs(rms - (-9.03 - 3.75)) < 1, "level \(rms) dBFS: the volume must be applied once")
    }

    /// A session that follows another through PulseAudio plays from its first frame. Ending a session with drop
    /// and prepare (ALSA's `pulse` PCM) made a new stream; the null sink, left without one, rendered 2 s ahead,
    /// and the next session, started within those 2 s, was not read for up to 1.9 s: 81,415 of its first
    /// frames concealed, and the sink played 1.3 s of a 3 s sweep. Now the stream is corked between sessions
    /// (PulseOutput.stop). What the sink plays of the second session is recorded from its monitor.
    ///
    /// And the first plays at its own rate, whole. Through ALSA's `pulse` PCM the time a block was heard was
    /// libpulse's latency, which on a stream that had sat idle left out the first 20 ms buffer for 2 to 3 s:
    /// lyred then steered back at 1000 ppm for the rest of a 10 s sweep (its lag moved 402 to 420 samples, SNR
    /// −7 dB), and, before it steered, jumped 2 or 3 times (the lag moved 790 to 984 samples). lyred plays
    /// through libpulse now, on the server's own timing of the stream (`PulseOutput`): nothing concealed, no
    /// correction, the lag the same from head to tail but for the codec's (44 samples, of a full-band sweep
    /// through Opus, in a session that steered nothing), and the sweep's SNR that of Opus.
    ///
    /// The presentation lyred plays to is steady (`SteadyEstimate`): from block to block through the `pulse` PCM
    /// the estimate wandered by ±170 to ±200 µs (1st to 99th percentile), more than the 2 samples the playout
    /// stays in tune within.
    @Test func aSessionThatFollowsAnotherPlaysWholeThroughPulseAudio() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let env = try await Self.startPulseAudio(network)
        let lyred = try Self.spawnPulseSpeaker(network, env: env, ["--log-level", "info", "--control-socket", "off",
                                                                   "--presentation-log", "/run/lyred/presented.csv"])
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        let song = try await Self.sweep(network, rate: 48000, seconds: 10, signal: "full")
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 3)
        // Each session's length recorded, and 6.75 s more for the sender to find the receiver and start.
        let (recordFirst, firstRaw) = try Self.recordSink(network, env: env, "first.raw", seconds: 17)
        let first = try await network.run(["lyre", "play", song, "--to", "Speaker"])
        #expect(first.status == 0, "lyre play: \(first.stderr)")
        // The second at once: the stall was for a session that came within 2 s of the last one's end.
        let (recordSecond, secondRaw) = try Self.recordSink(network, env: env, "second.raw", seconds: 10)
        let second = try await network.run(["lyre", "play", sweep, "--to", "Speaker"])
        #expect(second.status == 0, "lyre play: \(second.stderr)")
        for recording in [recordFirst, recordSecond] {
            try await recording.waitForExit(timeout: 30)
            #expect(recording.status == 0, "ffmpeg recording the sink's monitor: \(recording.stderr)")
        }
        let sessions = lyred.stderr.split(separator: "\n").filter { $0.contains("stats: received=") }
        let concealed = sessions.map { $0.firstMatch(of: /concealed=(\d+)/).flatMap { Int($0.1) } ?? .max }
        let corrections = sessions.map { $0.firstMatch(of: /corrections=(\d+)/).flatMap { Int($0.1) } ?? .max }
        // Neither conceals a frame (through the `pulse` PCM the jumps counted 773 to 1,031 of the first).
        #expect(concealed == [0, 0], "frames concealed per session: \(concealed)\n\(lyred.stderr)")
        #expect(corrections == [0, 0], "jumps per session: \(corrections)\n\(sessions)")
        // The first, from the output: the song whole, at its own rate.
        let comparison = try await Self.compare(network, reference: song, output: firstRaw, format: "raw:s16le:48000:2", part: true)
        let moved = abs((comparison["tail_lag_samples"] as? Double ?? .infinity) - (comparison["head_lag_samples"] as? Double ?? 0))
        #expect(comparison["gaps"] as? Int == 0 && (comparison["matched_seconds"] as? Double ?? 0) > 9.9, "\(comparison)")
        // Steered at 1000 ppm for 2 s is 96 samples, and each jump cut 900 to 980; a session that steered nothing
        // measured 44 (the head and the tail of a full-band sweep through Opus). The sweep's SNR measured 25.9 to
        // 28.4 dB in 7 runs; steered at 1000 ppm, −7.
        #expect(moved < 90, "the lag moved by \(moved) samples: steered, cut or repeated: \(comparison)")
        #expect(comparison["snr_db"] as? Double ?? 0 > 15, "\(comparison)")
        // The presentation lyred plays to, steady: block to block it moves by the block's length, give or take
        // a sample at the 95th percentile (steps of the estimate, 5 ms and more, aside; the first blocks of a
        // session, whose median is of a few, wander more). Measured 1.7 and 4.0 µs; taken as it came, 56.8 µs.
        let blocks = PresentedBlock.parse(try await network.shell("cat /run/lyred/presented.csv").stdout)
        var wander: [Double] = []
        for (a, b) in zip(blocks, blocks.dropFirst()) {
            let moved = abs(Double(Int64(bitPattern: b.presented &- a.presented)) - Double(a.frames) * 1e9 / 48000)
            if moved < 5_000_000 { wander.append(moved) }
        }
        wander.sort()
        let p95 = wander.isEmpty ? Double.infinity : wander[wander.count * 95 / 100]
        #expect(wander.count > 1500 && p95 < 1e9 / 48000, "the presentation moved by \(p95) ns more or less than a block at the 95th percentile, \(wander.count) blocks")
        // The second, from the output: all of it.
        let json = try await Self.level(network, raw: secondRaw)
        let sound = json["sound_seconds"] as? Double ?? 0
        print("aSessionThatFollowsAnotherPlaysWholeThroughPulseAudio: concealed \(concealed), corrections \(corrections), presentation p95 ±\(p95) ns, the first's lag moved \(moved) samples, the second sounded \(sound) s: \(comparison)")
        #expect(sound > 2.9, "the sink played \(sound) s of the second 3 s sweep: \(json)")
    }

    /// A receiver held up through PulseAudio (lyred stopped for 1 s mid-song, so that its stream runs dry)
    /// plays on in time: the server's timing of the stream is a device's, so lyred jumps to it (`PulseOutput`:
    /// the stream starts again later than it would have played), once for the stall and once more if the
    /// stream ran dry again as lyred caught up, and steers nothing. Measured from the sink's monitor, the
    /// song's lag at its tail is its lag at its head. (When lyred steered such steps out, as it does a sound
    /// server's estimate, the 1 s stall left it at 1000 ppm to the song's end and the lag moved 415 to 1,309
    /// samples.)
    @Test func aStallThroughPulseAudioIsJumpedAndTheSongPlaysOnInTime() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let env = try await Self.startPulseAudio(network)
        let lyred = try Self.spawnPulseSpeaker(network, env: env, ["--log-level", "info", "--control-socket", "off"])
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        let song = try await Self.sweep(network, rate: 48000, seconds: 10, signal: "full")
        let (record, raw) = try Self.recordSink(network, env: env, "stall.raw", seconds: 17)
        let play = try network.spawn(["lyre", "play", song, "--to", "Speaker"])
        #expect(await eventually { lyred.stderr.contains("now playing:") }, "\(lyred.stderr)")
        try await Task.sleep(for: .seconds(3))
        lyred.signal(SIGSTOP)
        try await Task.sleep(for: .seconds(1))
        lyred.signal(SIGCONT)
        try await play.waitForExit(timeout: 30)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        try await record.waitForExit(timeout: 30)
        #expect(record.status == 0, "ffmpeg recording the sink's monitor: \(record.stderr)")
        #expect(await eventually { lyred.stderr.contains("stats: received=") }, "\(lyred.stderr)")
        let stats = lyred.stderr.split(separator: "\n").first { $0.contains("stats: received=") }.map(String.init) ?? ""
        let concealed = stats.firstMatch(of: /concealed=(\d+)/).flatMap { Int($0.1) } ?? -1
        let corrections = stats.firstMatch(of: /corrections=(\d+)/).flatMap { Int($0.1) } ?? -1
        // The stall's second (48,000 frames), give or take what the stream held and what lyred caught up on.
        #expect(concealed > 38_000 && concealed < 60_000, "\(stats)")
        #expect(corrections >= 1 && corrections <= 3, "\(stats)")
        let comparison = try await Self.compare(network, reference: song, output: raw, format: "raw:s16le:48000:2", part: true)
        let moved = abs((comparison["tail_lag_samples"] as? Double ?? .infinity) - (comparison["head_lag_samples"] as? Double ?? 0))
        print("aStallThroughPulseAudioIsJumpedAndTheSongPlaysOnInTime: \(stats); the lag moved \(moved) samples: \(comparison)")
        // Measured 38 to 40 (the codec's 44 or so, of a full-band sweep through Opus); steered, 415 to 1,309.
        #expect(moved < 90, "the lag moved by \(moved) samples: steered after the stall: \(comparison)")
    }

    /// A PulseAudio server with one null sink `lyre` in the test network (Tools/peers/pulse-null.sh), up and
    /// answering; returns the `env` prefix its clients (pactl, ffmpeg, ALSA's pulse PCM) run with.
    static func startPulseAudio(_ network: TestNetwork) async throws -> [String] {
        let pulse = try network.spawn([TestNetwork.tools + "/peers/pulse-null.sh"], name: "pulseaudio")
        let env = ["env", "PULSE_SERVER=unix:/run/lyre-pulse/native", "PULSE_CLIENTCONFIG=/run/lyre-pulse/client.conf",
                   "ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf"]
        #expect(try await eventually { try await network.run(["test", "-S", "/run/lyre-pulse/native"]).status == 0 }, "pulseaudio: \(pulse.stderr)")
        #expect(try await network.run(env + ["pactl", "info"], timeout: 10).status == 0, "pulseaudio: \(pulse.stderr)")
        return env
    }

    /// The level of what the `lyre` sink plays (its monitor, recorded by ffmpeg for 3 s), dBFS: the median of
    /// its 100 ms windows from the first sound to the last. A dropout under load (one lowered a whole second's
    /// RMS by 1.3 dB in CI) is not what is measured, and neither is the silence before the audio reaches the
    /// sink: "now playing:" comes before the first block plays, and in one fresh-clone run the sound began
    /// half-way through a one-second recording (measured -22.49 dBFS for -19.03).
    static func sinkLevel(_ network: TestNetwork, env: [String]) async throws -> Double {
        let (record, raw) = try recordSink(network, env: env, "monitor.raw", seconds: 3)
        try await record.waitForExit(timeout: 20)
        #expect(record.status == 0, "ffmpeg recording the sink's monitor: \(record.stderr)")
        let json = try await level(network, raw: raw)
        let sound = json["sound_seconds"] as? Double ?? 0
        #expect(sound > 1.5, "the sink played \(sound) s of the 3 recorded: \(json)")
        return json["sound_dbfs"] as? Double ?? 0
    }

    /// ffmpeg recording what the `lyre` sink plays (its monitor) for `seconds` into the scratch file `name`
    /// (raw, 48 kHz stereo S16_LE), started; and that file's path.
    static func recordSink(_ network: TestNetwork, env: [String], _ name: String, seconds: Int) throws -> (Spawned, String) {
        let raw = network.scratch.appendingPathComponent(name).path
        let ffmpeg = try network.spawn(env + ["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-f", "pulse", "-i", "lyre.monitor",
                                              "-t", String(seconds), "-f", "s16le", "-ar", "48000", "-ac", "2", raw], name: "ffmpeg")
        return (ffmpeg, raw)
    }

    /// Tools/peers/audio.py's `level` of a recording of the sink's monitor (raw, 48 kHz stereo S16_LE).
    static func level(_ network: TestNetwork, raw: String) async throws -> [String: Any] {
        let level = try await network.run(["python3", audioTool, "level", raw, "--format", "raw:s16le:48000:2"])
        let json = try JSONSerialization.jsonObject(with: Data(level.stdout.utf8)) as? [String: Any]
        #expect(json != nil, "audio.py level: \(level.stdout) \(level.stderr)")
        return json ?? [:]
    }

    /// lyred `Speaker` on port 7720, playing to ALSA's `pulse` PCM of the server `env` reaches, MPRIS off.
    static func spawnPulseSpeaker(_ network: TestNetwork, env: [String], _ options: [String]) throws -> Spawned {
        try network.spawn(
            env + [TestNetwork.binaries + "/lyred", "--name", "Speaker", "--port", "7720", "--state-dir", "/run/lyred",
                   "--output", "pulse", "--mpris", "off"] + options,
            name: "lyred")
    }

    /// Volume policy: a receiver starts at --initial-volume-db, which the picker shows and senders adopt, and
    /// plays every volume --max-volume-db lower, measured from its output; with --volume-control none it plays
    /// at full level whatever the volume.
    @Test func theVolumeStartsWhereSetAndPlaysUnderTheCap() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let capped = network.scratch.appendingPathComponent("capped.wav").path
        let full = network.scratch.appendingPathComponent("full.wav").path
        let receivers = [
            try network.spawn(["lyred", "--name", "Capped", "--port", "7723", "--state-dir", "/run/a", "--output", "wav:\(capped)",
                               "--initial-volume-db", "-10", "--max-volume-db", "-6", "--control-socket", "off"], name: "capped"),
            try network.spawn(["lyred", "--name", "Amplified", "--port", "7724", "--state-dir", "/run/b", "--output", "wav:\(full)",
                               "--initial-volume-db=-20", "--volume-control", "none", "--control-socket", "off"], name: "amplified"),
        ]
        for lyred in receivers { #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)") }
        #expect(await eventually { receivers[1].stderr.contains("volume not applied (volume-control none)") }, "\(receivers[1].stderr)")
        // `--control-socket off` (now-playing.md §5): no socket, not even at root's default path.
        // Where a control socket goes by default (ControlSocketPath: $XDG_RUNTIME_DIR/lyred under /run/user,
        // root's /run/lyred, else /tmp/lyred-UID), searched there only: the whole file system took more than
        // 30 s on a machine with build trees in /var/tmp, and /root (5.6 GB of caches, never a default) did
        // too in one fresh-clone run.
        let sockets = try await network.shell("ls /run/lyred 2>&1; find /run /tmp -xdev -type s -path '*lyred*' 2>/dev/null")
        #expect(!sockets.stdout.contains("control"), "\(sockets.stdout)")
        #expect(receivers.allSatisfy { !$0.stderr.contains("control socket") }, "\(receivers.map(\.stderr))")
        let listing = try await network.run(["lyre", "devices", "--json"])
        let devices = try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(devices.first { $0["name"] as? String == "Capped" }?["volume"] as? Double == -10, "\(listing.stdout)")
        #expect(devices.first { $0["name"] as? String == "Amplified" }?["volume"] as? Double == -20, "\(listing.stdout)")
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 3)
        // The sender learns where each room's volume starts (GET_PARAMETER after SETUP, now-playing.md §4.3):
        // its group listing shows −10 and −20 dB, not the 0 dB a sender that assumed would show.
        let socket = network.scratch.appendingPathComponent("group.sock").path
        let play = try network.spawn(["lyre", "play", sweep, "--to", "Capped", "--to", "Amplified", "--group-socket", socket])
        var listed: [String: Double] = [:]
        _ = await eventually {
            let list = try? await network.run(["lyre", "group", "--json", "--socket", socket])
            let rooms = list.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }?["rooms"] as? [[String: Any]]
            for room in rooms ?? [] {
                if let name = room["name"] as? String, let volume = room["volume"] as? NSNumber { listed[name] = volume.doubleValue }
            }
            return listed.count == 2
        }
        #expect(listed == ["Capped": -10, "Amplified": -20], "listed at \(listed) dB")
        try await play.waitForExit(timeout: 20)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        for lyred in receivers {
            lyred.signal(SIGTERM)
            try await lyred.waitForExit(timeout: 10)
        }
        // −10 dB under a −6 dB cap: the input 16 dB down, and otherwise the same, first sample to last.
        let down = try await Self.compare(network, reference: sweep, output: capped)
        Self.expectSameAudio(down)
        #expect(abs(20 * log10(down["gain"] as? Double ?? 1e-9) - (-16)) < 0.5, "\(down)")
        let same = try await Self.compare(network, reference: sweep, output: full)
        Self.expectSameAudio(same)
        #expect(abs(20 * log10(same["gain"] as? Double ?? 1e-9)) < 0.5, "\(same)")
    }

    /// --volume-control: `software` scales the samples and leaves the sound server's volume where it was;
    /// `mixer:NAME` for a control the output lacks is an unavailable output, with one line naming what it has.
    @Test func theVolumeControlChoosesWhatMoves() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let env = try await Self.startPulseAudio(network)
        let wrong = try network.spawn(
            env + [TestNetwork.binaries + "/lyred", "--name", "Wrong", "--port", "7721", "--state-dir", "/run/w", "--output", "pulse",
                   "--volume-control", "mixer:Nope", "--control-socket", "off", "--mpris", "off"],
            name: "wrong")
        #expect(await eventually { wrong.stderr.contains("has no playback volume control 'Nope'") }, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("it has 'Master'"), "\(wrong.stderr)")
        #expect(try await eventually {
            let listing = try await network.run(["lyre", "devices", "--json"])
            let devices = try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [[String: Any]]
            return devices?.first { $0["name"] as? String == "Wrong" }?["status"] as? String == "unavailable"
        })
        wrong.signal(SIGTERM)
        try await wrong.waitForExit(timeout: 10)

        let lyred = try Self.spawnPulseSpeaker(network, env: env, ["--volume-control", "software", "--initial-volume-db", "-10", "--control-socket", "off"])
        #expect(await eventually { lyred.stderr.contains("volume as software gain") }, "\(lyred.stderr)")
        let sweep = try await Self.sweep(network, rate: 48000, seconds: 30)
        let sender = try network.spawn(["lyre", "play", sweep, "--to", "Speaker"])
        defer { sender.signal(SIGINT) }
        #expect(await eventually { lyred.stderr.contains("now playing:") }, "\(lyred.stderr)")
        let sinkVolume = try await network.run(env + ["timeout", "5", "pactl", "get-sink-volume", "lyre"]).stdout
        #expect(sinkVolume.contains("0.00 dB"), "the sink's volume moved: \(sinkVolume)")
        // What the sink plays: the sweep's -9.03 dBFS RMS, 10 dB down in the samples.
        let rms = try await Self.sinkLevel(network, env: env)
        #expect(abs(rms - (-9.03 - 10)) < 1, "level \(rms) dBFS")
    }

    /// The session handshake of streaming.md §3 as a plain RTSP sender plays it (`Tools/peers/rtsp-conformance.py`,
    /// on rtsp-abuse.py's wire code): the statuses and headers the spec states, each as it says.
    @Test func theHandshakeAnswersAsTheSpecSays() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let run = try await rig.network.run(["python3", "\(TestNetwork.tools)/peers/rtsp-conformance.py", "127.0.0.1", String(rig.port)])
        let got = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
        print("rtsp-conformance: \(got)")
        func status(_ key: String) -> Int? { got[key] as? Int }
        // ANNOUNCE: `Lyre-Latency` is 10…2000, both ends taken; out of range is 400.
        #expect(status("announce_latency_9") == 400 && status("announce_latency_2001") == 400, "\(got)")
        #expect(status("announce_latency_10") == 200 && status("announce_latency_2000") == 200, "\(got)")
        // §7: `Lyre-Mix` is mix or duck, anything else 400; with nothing playing, a mix request is taken.
        #expect(status("announce_mix_ducking") == 400 && status("announce_mix_mix") == 200, "\(got)")
        // Over a session, four play at once and the fifth is refused (453) with a reason.
        #expect((1...4).allSatisfy { status("announce_overlay_\($0)") == 200 } && status("announce_overlay_5") == 453, "\(got)")
        #expect((got["announce_overlay_5_error"] as? String ?? "").contains("it plays 4 sessions over 'rtsp-abuse.py' already, the most it mixes"), "\(got)")
        // `Lyre-Duck-DB` is -40…-3 with `Lyre-Mix: duck` only; anything else 400 with a reason.
        #expect(status("announce_duck_db_ok") == 200, "\(got)")
        for name in ["deep", "word"] {
            #expect(status("announce_duck_db_\(name)") == 400, "\(got)")
            #expect((got["announce_duck_db_\(name)_error"] as? String ?? "").contains("Lyre-Duck-DB must be a number of dB from -40 to -3"), "\(got)")
        }
        // `Lyre-Mode` is one of an app's modes; `Lyre-Interrupt` is spokenAudio, with `Lyre-Mix`.
        #expect(status("announce_mode_podcast") == 400 && (got["announce_mode_podcast_error"] as? String ?? "").contains("Lyre-Mode must be one of"), "\(got)")
        #expect(status("announce_interrupt_alone") == 400 && status("announce_interrupt_mix") == 200, "\(got)")
        #expect(["spokenAudio", "default", "voiceChat"].allSatisfy { status("announce_mode_\($0)") == 200 }, "\(got)")
        // An interruption whose spoken-audio sender accepts no pause plays over it, and lyred says why; the
        // session that took over after it was never paused and is not told to play when the overlay ends.
        #expect(status("interrupt_podcast") == 200 && status("interrupt_bell") == 200 && status("interrupt_takeover") == 200, "\(got)")
        #expect(rig.lyred.stderr.contains("was not told to pause: 'rtsp-abuse.py' does not accept pause"), "\(rig.lyred.stderr)")
        #expect(!rig.lyred.stderr.contains("told to play") && !rig.lyred.stderr.contains("plays on after the interruption"), "\(rig.lyred.stderr)")
        #expect(status("announce_duck_db_mix") == 400 && (got["announce_duck_db_mix_error"] as? String ?? "").contains("goes with Lyre-Mix: duck"), "\(got)")
        // The states: RECORD before SETUP is refused (455, Method Not Valid in This State).
        #expect(status("record_before_setup") == 455, "\(got)")
        // The methods: OPTIONS lists those taken in `Public`; a player's method is 405 with them in `Allow`, and
        // an unknown one 501 with them in `Public`.
        let taken = "OPTIONS, ANNOUNCE, SETUP, RECORD, FLUSH, SET_PARAMETER, GET_PARAMETER, TEARDOWN, PAIR"
        func method(_ name: String) -> [String] { (got["method_\(name)"] as? [Any] ?? []).map { "\($0)" } }
        #expect(method("OPTIONS") == ["200", taken, "<null>"], "\(got)")
        #expect(method("DESCRIBE") == ["405", "<null>", taken] && method("PLAY") == ["405", "<null>", taken], "\(got)")
        #expect(method("FETCH") == ["501", taken, "<null>"], "\(got)")
        // SETUP: `Session: S;timeout=60`, S 16 hex digits; the Transport answer repeats the request's ssrc.
        let session = got["setup_session"] as? String ?? ""
        #expect(status("setup_status") == 200 && session.wholeMatch(of: /[0-9A-Fa-f]{16};timeout=60/) != nil, "Session: \(session)")
        let transport = got["setup_transport"] as? String ?? ""
        #expect(transport.contains("server_port=") && transport.lowercased().contains("ssrc=1234abcd"), "Transport: \(transport)")
        // RECORD answers with the output's latency and (version 2) its delay, in milliseconds.
        #expect(status("record_status") == 200, "\(got)")
        #expect((got["record_output_latency"] as? String).flatMap(Double.init) != nil, "\(got)")
        #expect((got["record_output_delay"] as? String).flatMap(Int.init) != nil, "\(got)")
        // A resuming RECORD (after FLUSH) with `Lyre-Start-At` has it echoed; one without it gets none.
        #expect(status("flush_status") == 200 && status("resume_status") == 200, "\(got)")
        #expect(got["resume_start_at"] as? String == "57272", "\(got)")
        #expect(got["record_start_at"] == nil || got["record_start_at"] is NSNull, "\(got)")
        // SET_PARAMETER volume: −30…0 and −144 taken, anything else 451; unknown names 451 either way.
        for value in ["-30.0", "0.0", "-144", "-12.5"] { #expect(status("volume_\(value)") == 200, "volume \(value): \(got)") }
        for value in ["-30.1", "0.1", "-143", "loud"] { #expect(status("volume_\(value)") == 451, "volume \(value): \(got)") }
        #expect(status("set_unknown") == 451 && status("get_unknown") == 451, "\(got)")
        // One refused parameter refuses the request whole (RFC 2326 §10.9): the volume before it stays unset.
        #expect(status("set_partly_unknown") == 451, "\(got)")
        #expect((got["get_volume"] as? [Any])?.last as? String == "volume: -12.5", "\(String(describing: got["get_volume"]))")
        // GET_PARAMETER answers each name it knows; an empty one is a keep-alive.
        for name in ["output-latency", "output-delay", "volume"] {
            let answer = got["get_\(name)"] as? [Any]
            #expect(answer?.first as? Int == 200 && (answer?.last as? String ?? "").hasPrefix("\(name): "), "GET \(name): \(String(describing: answer))")
        }
        #expect(status("keep_alive") == 200 && status("teardown") == 200, "\(got)")
        // now-playing.md §3, as the receiver's page serves the cover: a JPEG, kept through a now-playing update,
        // replaced by a PNG, cleared by an empty body; set again, it goes with the session.
        let artwork = (got["artwork"] as? [[Any]] ?? []).map { "\($0[2]) \($0[3])" }
        #expect(artwork == ["200 jpeg", "200 jpeg", "200 png", "200 404", "200 jpeg", "200 404"], "\(got["artwork"] ?? "none")")
        // pairing.md: keys come only over TLS (an SRTP key in ANNOUNCE, a timing key in SETUP: 400 on a plain
        // connection); a PAIR body over 1024 bytes is 413, a malformed one 400.
        #expect(status("announce_crypto_plain") == 400 && status("setup_timing_key_plain") == 400, "\(got)")
        #expect(status("pair_body_1025") == 413 && status("pair_body_1024") == 400, "\(got)")
        // An ANNOUNCE without `Lyre-Latency` gets the default, 250 ms (lyred given no `--latency`); one without
        // `Lyre-Sender-Name` is shown by its User-Agent.
        #expect(rig.lyred.stderr.contains("session from 'rtsp-abuse.py': opus, latency 250 ms"), "lyred: \(rig.lyred.stderr)")
        #expect(rig.lyred.stderr.contains("session from 'rtsp-abuse.py': opus, latency 2000 ms"), "lyred: \(rig.lyred.stderr)")
        // Media from another SSRC (3) or address (1) is foreign, another payload type (2) or a packet over 8192
        // bytes (1) malformed: dropped and counted, in the session's stats when it ends. Over TCP, a frame over
        // 8192 bytes is dropped and counted the same way, and the connection goes on.
        #expect(await eventually { rig.lyred.stderr.components(separatedBy: "session from 'rtsp-abuse.py' stats: ").count > 8 }, "lyred: \(rig.lyred.stderr)")
        let counted = rig.lyred.stderr.matches(of: /session from 'rtsp-abuse.py' stats: .* foreign=(\d+) malformed=(\d+)/).map { (Int($0.1), Int($0.2)) }
        #expect(counted.count >= 2 && counted[0] == (4, 3) && counted[1] == (0, 1), "\(counted): \(rig.lyred.stderr)")
        #expect(status("interleaved_keep_alive") == 200, "\(got)")
        // §7: a refused ANNOUNCE from another connection takes nothing over.
        #expect(status("refused_announce") == 400 && got["taken_over_by_refused"] as? Bool == false, "\(got)")
        // §4.1: with `nack` agreed, packet 3 missing is asked for at once and again, at most 10 times, by NACKs
        // naming the stream's SSRC; their sender SSRC is the receiver's own, another in each session.
        let udp = (got["nack_udp"] as? [[String: Any]] ?? []).map { (($0["feedback"] as? String) ?? "", ($0["nacks"] as? [[Any]]) ?? []) }
        #expect(udp.count == 2 && udp.allSatisfy { $0.0 == "nack" && (1...10).contains($0.1.count) }, "\(udp)")
        let nacks = udp.flatMap(\.1).map { ($0[0] as? String ?? "", $0[1] as? String ?? "", $0[2] as? Int ?? -1) }
        #expect(!nacks.isEmpty && nacks.allSatisfy { $0.1 == "1234abcd" && $0.2 == 3 }, "\(nacks)")
        let senders = udp.map { Set($0.1.compactMap { $0[0] as? String }) }
        #expect(senders.count == 2 && senders.allSatisfy { $0.count == 1 } && senders[0] != senders[1], "sender SSRCs: \(senders)")
        // None on an interleaved session, though asked for: the answer does not agree to it, and nothing comes.
        let tcp = got["nack_tcp"] as? [String: Any] ?? [:]
        #expect(tcp["status"] as? Int == 200 && tcp["feedback"] is NSNull && (tcp["nacks"] as? [Any])?.isEmpty == true, "\(tcp)")
        // §4.3, parity built from the text: rows of 2; the parity of 1–2 from another address and of 3–4 for
        // another SSRC are foreign (2); 5 and 6 both lost are not repaired and are asked for, as is 3; 8 lost
        // with its row's parity here is rebuilt (fec 1) and not asked for.
        let fec = got["fec_session"] as? [String: Any] ?? [:]
        #expect(fec["fec"] as? String == "pt=97;row=2" && fec["asked"] as? [Int] == [3, 5, 6], "\(fec)")
        let sixth = rig.lyred.stderr.matches(of: /session from 'rtsp-abuse.py' stats: .* fec=(\d+) .* foreign=(\d+)/).map { (Int($0.1), Int($0.2)) }
        #expect(sixth.count >= 6 && sixth[5] == (1, 2), "fec, foreign: \(sixth)")
        // §4.3: a plain publisher's speech with Opus in-band FEC, three packets lost one at a time: each is decoded
        // from the next packet's FEC where it has some, and counted in `fec` (1 to 3; it is 0 for Lyre's music).
        let eighth = rig.lyred.stderr.matches(of: /session from 'rtsp-abuse.py' stats: .* concealed=(\d+) fec=(\d+)/).map { (Int($0.1) ?? -1, Int($0.2) ?? -1) }
        #expect(eighth.count >= 8 && (1...3).contains(eighth[7].1) && eighth[7].0 > 0, "concealed, fec: \(eighth)")
        // §4.2: with `report` agreed, one compound datagram a second (3 in 3.5 s; 2 to 4 on a loaded machine):
        // a receiver report with a block for the stream, then Lyre's reception report (APP `LYRE`, subtype 0).
        let report = got["report_session"] as? [String: Any] ?? [:]
        let reports = (report["reports"] as? [[Any]] ?? []).map { entry in
            let kinds = (entry[1] as? [Int] ?? []).map(String.init).joined(separator: ",")
            let app = (entry[3] as? [Any] ?? []).map { "\($0)" }.joined(separator: " ")
            return "\(kinds) \(entry[2]) \(app)"
        }
        #expect(report["feedback"] as? String == "report" && (2...4).contains(reports.count), "\(report)")
        #expect(reports.allSatisfy { $0 == "201,204 1234abcd LYRE 0" }, "\(reports)")
    }

    /// streaming.md §7: a recording session that hears nothing (no RTSP, no media) for 10 s ends, `timeout`:
    /// the sender is told (`session-end: timeout`) and the connection closed. (A paused sender that keeps its
    /// session with GET_PARAMETER: RemoteControlTests.pauseSetsRateZeroAndFreezesThePosition.)
    @Test func aSilentSessionEndsAfter10Seconds() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let run = try await rig.network.run(["python3", "\(TestNetwork.tools)/peers/rtsp-conformance.py", "127.0.0.1", String(rig.port), "--silent"],
                                            timeout: 40)
        let got = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
        let after = got["closed_after_s"] as? Double ?? 0
        // Not before 10 s (its once-a-second check ends it within the 11th); the upper bound only says it ended.
        #expect(after >= 10 && after < 15, "closed after \(after) s")
        #expect((got["said"] as? String ?? "").contains("session-end: timeout"), "\(got)")
        #expect(rig.lyred.stderr.contains("session from 'rtsp-abuse.py' ended: timeout"), "\(rig.lyred.stderr)")
    }

    /// streaming.md §7: a receiver stopped while a session records tells its sender (`session-end: shutdown`),
    /// shuts its side, and leaves the close to the sender for 2 s. Here the sender (rtsp-conformance.py
    /// --shutdown) reads the notice and never closes, sending a keep-alive every 0.25 s: the receiver reads
    /// them, and closes 2 s after the notice (the first keep-alive refused). Closing at once, with a request
    /// of the sender's unread, would reset the connection, and a reset throws away what the receiver has not
    /// sent yet, the notice included. (On loopback the notice is out at once, so this shows the wait, not a loss.)
    /// A session that ducks it (`Lyre-Mix: duck`) is told too, rather than finding its connection closed. Of the
    /// two senders, the one `held` never closes and the other closes as soon as it is told: a receiver that waited
    /// for one session's close alone (the main one's, or whichever came first) would exit, and close the held
    /// connection, at once.
    @Test(arguments: ["main", "overlay"]) func aStoppedReceiverTellsItsSenderAndLeavesItTheClose(held: String) async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let run = try await rig.network.shell(
            "python3 \(TestNetwork.tools)/peers/rtsp-conformance.py 127.0.0.1 \(rig.port) --shutdown $(pidof lyred) --held \(held)", timeout: 30)
        let got = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout) \(run.stderr)")
        print("a sender that never closes (the \(held) session's), at a receiver's stop, the other closing at once: \(got)")
        #expect(got["notice"] as? Bool == true && (got["shut_after_s"] as? Double ?? 9) < 1, "\(got)\nlyred: \(rig.lyred.stderr)")
        let closed = got["closed_after_s"] as? Double ?? 0
        #expect(closed >= 1.9 && closed < 5, "closed \(closed) s after the stop: \(got)")
        #expect(got["overlay_notice"] as? Bool == true, "the overlay's sender heard: \(got["overlay_said"] ?? "")")
        try await rig.lyred.waitForExit(timeout: 10)
        let ended = rig.lyred.stderr.components(separatedBy: "session from 'rtsp-abuse.py' ended: shutdown").count - 1
        #expect(ended == 2, "\(rig.lyred.stderr)")
    }

    /// Tools/peers/rtsp-conformance.py in one of its modes that set a session up and say "ready".
    static func readySender(_ rig: Rig, _ mode: String) async throws -> Spawned {
        let sender = try rig.network.spawn(["python3", "\(TestNetwork.tools)/peers/rtsp-conformance.py", "127.0.0.1", String(rig.port), mode])
        #expect(await eventually { sender.stdout.contains("ready") }, "\(sender.stderr)")
        return sender
    }

    /// now-playing.md §4.2: the receiver waits 5 s for a sender's answer to a command, then reports a timeout. The
    /// sender (rtsp-conformance.py --deaf) enables `pause`, gets it, and never answers.
    @Test func aCommandTheSenderNeverAnswersTimesOutAfter5Seconds() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sender = try await Self.readySender(rig, "--deaf")
        let start = ContinuousClock.now
        let pause = try await rig.network.run(["lyre", "remote", "pause"], timeout: 15)
        let took = ContinuousClock.now - start
        #expect(pause.status != 0 && pause.stderr.contains("did not answer pause within 5 s"), "\(pause.stdout) \(pause.stderr)")
        #expect(took >= .seconds(5) && took < .seconds(8), "answered after \(took)")
        try await sender.waitForExit(timeout: 15)
        #expect(sender.jsonLines.last?["commands"] as? [String] == ["pause"], "\(sender.stdout) \(sender.stderr)")
    }

    /// now-playing.md §2: without timing samples of the sender's clock (a plain sender makes no timing
    /// exchange), the receiver takes the clocks as equal: one snapshot, 10 s into the item at rate 1 and
    /// anchored at the sender's CLOCK_MONOTONIC (this machine's), reads 10 s plus the time since.
    @Test func withoutTimingSamplesTheClocksAreTakenAsEqual() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let sender = try await Self.readySender(rig, "--clock")
        let sent = ContinuousClock.now
        let answer = try await rig.network.run(["lyre", "remote", "now-playing", "--json"], timeout: 15)
        let since = (ContinuousClock.now - sent) / .seconds(1)
        let shown = try JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any]
        let position = shown?["position"] as? Double ?? -1
        #expect(shown?["title"] as? String == "Equal clocks" && position >= 10 && position <= 10.5 + since, "\(answer.stdout) \(answer.stderr)")
        try await sender.waitForExit(timeout: 15)
    }

    /// streaming.md §6.2: a plain publisher's first packet anchors the timeline at its arrival, so it is heard
    /// the target latency (250 ms, lyred's default) after it came. From the presentation log: the first block
    /// with audio, and where in it the audio begins.
    @Test func aPlainPublisherIsHeardAtArrivalPlusTheLatency() async throws {
        let rig = try await Rig(arguments: ["--presentation-log", "/run/lyred/presented.csv"])
        defer { rig.network.close() }
        let sender = try await rig.network.run(["python3", "\(TestNetwork.tools)/peers/rtsp-conformance.py", "127.0.0.1", String(rig.port), "--arrival"])
        let sent = try #require(sender.jsonLines.last?["first_sent_ns"] as? Int64, "\(sender.stdout) \(sender.stderr)")
        try await rig.stop()
        let log = try await rig.network.shell("cat /run/lyred/presented.csv").stdout
        let first = try #require(PresentedBlock.parse(log).first { $0.audioFrames > 0 }, "\(log.prefix(500))")
        // scheduled_ns is when the block's first frame is heard; its audio begins after its silent frames.
        let heard = first.scheduled + Int64(first.frames - first.audioFrames) * 1_000_000_000 / 48_000
        let after = Double(heard - sent) / 1e6
        print("a plain publisher's first packet heard \(after) ms after it was sent")
        #expect(abs(after - 250) < 5, "heard \(after) ms after it was sent: \(first)")
    }

    /// lyred's log lines from 4 s before the input of the first unexpected answer of an rtsp-abuse report was
    /// sent (its `wall`, HH:MM:SS) to 2 s after, at most 40; or the last 3000 characters when no line carries
    /// those times.
    static func logAround(_ log: String, _ report: [String: Any]) -> String {
        let examples = report["unexpected_examples"] as? [[String: Any]] ?? []
        guard let wall = examples.first?["wall"] as? String, wall.count == 8,
              let h = Int(wall.prefix(2)), let m = Int(wall.dropFirst(3).prefix(2)), let sec = Int(wall.suffix(2)) else {
            return String(log.suffix(3000))
        }
        let at: Int = h * 3600 + m * 60 + sec
        func stamp(_ t: Int) -> String {
            let day: Int = (t % 86400 + 86400) % 86400  // the window may cross midnight
            let (hh, mm, ss): (Int, Int, Int) = (day / 3600, day / 60 % 60, day % 60)
            return String(format: "T%02d:%02d:%02d", hh, mm, ss)
        }
        let window: [String] = (at - 4 ... at + 2).map(stamp)
        let lines = log.split(separator: "\n").filter { line in window.contains { line.contains($0) } }
        return lines.isEmpty ? String(log.suffix(3000)) : lines.prefix(40).joined(separator: "\n")
    }

    @Test func badInputIsRefusedAndLyredKeepsServing() async throws {
        let rig = try await Rig()
        defer { rig.network.close() }
        let abuse = try await rig.network.shell(
            "exec python3 \(TestNetwork.tools)/peers/rtsp-abuse.py 127.0.0.1 \(rig.port) --count 10000 --timeout 3 --pid $(pidof lyred)",
            timeout: 240)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(abuse.stdout.utf8)) as? [String: Any], "rtsp-abuse: \(abuse.stderr)")
        #expect(report["inputs"] as? Int == 10000)
        print("rtsp-abuse's slowest exchanges: \(report["slowest"] ?? "")")
        if report["unexpected"] as? Int != 0 {
            // Where an unanswered input went: the listen queue's counters and what lyred logged around it.
            let listen = try await rig.network.shell(
                "nstat -az | grep -E 'ListenOverflows|ListenDrops|TCPBacklogDrop|TCPReqQFullDrop|TCPTimeouts|TCPSynRetrans'")
            Issue.record("""
                unexpected answers: \(report["unexpected_examples"] ?? "")
                listen counters: \(listen.stdout)
                lyred's log around the first unexpected answer's input (or its last 3000 characters): \(Self.logAround(rig.lyred.stderr, report))
                """)
        }
        #expect(report["healthy"] as? Bool == true)
        let fds = (start: report["fds_start"] as? Int ?? 0, end: report["fds_end"] as? Int ?? 1000)
        #expect(fds.end <= fds.start + 2, "file descriptors \(fds.start) → \(fds.end)")
        let rss = (start: report["rss_kib_start"] as? Int ?? 0, end: report["rss_kib_end"] as? Int ?? Int.max)
        #expect(rss.end <= rss.start + 8192, "RSS \(rss.start) → \(rss.end) KiB")
        #expect(rig.lyred.isRunning)
        // And it still plays.
        let sweep = try await Self.sweep(rig.network, rate: 48000, seconds: 1)
        let play = try await rig.network.run(["lyre", "play", sweep, "--to", "Speaker"])
        #expect(play.status == 0, "\(play.stderr)")
    }
}
