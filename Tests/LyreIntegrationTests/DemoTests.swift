import Foundation
import Testing

/// README's Quick start: `Tools/demo` starts receivers, shows the picker, pairs and plays a sample. Its steps
/// (Tools/lib/demo-inside.sh, which Tools/demo runs in a network of its own after installing and building with
/// Tools/test's own lines, Tools/lib/deps.sh) run here with the suite's build, twice, each in a fresh network as
/// Tools/demo makes one, under one user's home.
@Suite(.serialized)
struct DemoTests {
    /// Both runs go to the end. The second once found the first's pairing in the user's home, was refused, and
    /// hung waiting for a PIN; the last step once sent ffmpeg's RTSP to the receiver's web page (its port came
    /// first in the log). So: each step's words, nothing left in the home, and what the receivers wrote is the
    /// sample (Porch's, from ffmpeg's RTSP publisher, against ffmpeg's own decoding of the sample).
    @Test func theDemoRunsToItsEndEveryTime() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-demo-home-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        for run in 1...2 {
            let network = try TestNetwork()
            defer { network.close() }
            let wav = network.scratch.appendingPathComponent("demo.wav").path
            let music = network.scratch.appendingPathComponent("music.wav").path
            let demo = try await network.run(["env", "HOME=\(home.path)", "XDG_STATE_HOME=\(home.path)/.local/state",
                                              "XDG_CONFIG_HOME=\(home.path)/.config", "LYRE_BIN=\(TestNetwork.binaries)",
                                              "LYRE_SAMPLES=\(TestNetwork.tools)/samples", "LYRE_DEMO_WAV=\(wav)", "LYRE_DEMO_MUSIC=\(music)",
                                              "bash", TestNetwork.tools + "/lib/demo-inside.sh"], timeout: 150)
            let out = demo.stdout
            #expect(demo.status == 0, "run \(run): the demo failed: \(demo.stderr)\n\(out)")
            for words in [
                "advertised as 'Living Room'", "deviceAvailable  Kitchen (2)", "deviceUnavailable  Kitchen (2)", "_lyre._tcp",
                "is refused", "paired with 'Living Room'", "TLS and SRTP", "relaying nextTrack",
                "does not accept changePlaybackRate", "session from 'Lavf", "'Doorbell app'", "plays over 'Music app'", "ducking it 15.0 dB",
                "== Done",
            ] {
                #expect(out.contains(words), "run \(run): the demo did not show '\(words)':\n\(out)")
            }
            let left = FileManager.default.enumerator(atPath: home.path)?.allObjects as? [String] ?? []
            #expect(left.isEmpty, "run \(run): the demo wrote into the user's home: \(left)")

            let reference = network.scratch.appendingPathComponent("chime-48k.wav").path
            let decoded = try await network.run(["ffmpeg", "-v", "error", "-y", "-i", TestNetwork.tools + "/samples/chime.flac", "-ar", "48000", reference])
            #expect(decoded.status == 0, "\(decoded.stderr)")
            let porch = String(wav.dropLast(4)) + "-porch.wav"
            StreamingTests.expectSameAudio(try await StreamingTests.compare(network, reference: reference, output: porch))
            let level = try await network.run(["python3", StreamingTests.audioTool, "level", wav])
            let rms = (try? JSONSerialization.jsonObject(with: Data(level.stdout.utf8)) as? [String: Any])?["rms_dbfs"] as? Double
            #expect((rms ?? -200) > -40, "Living Room's output: \(level.stdout) \(level.stderr)")
            // Den's: the music app's audio, 15 dB down under the doorbell's chime and at its level around it,
            // and the chime at its own.
            let den = String(wav.dropLast(4)) + "-den.wav"
            let separated = try await network.run(["python3", StreamingTests.audioTool, "separate", music, reference, den])
            let parts = (try? JSONSerialization.jsonObject(with: Data(separated.stdout.utf8)) as? [String: Any]) ?? [:]
            func figure(_ key: String) -> Double { parts[key] as? Double ?? .nan }
            #expect(abs(figure("main_db_during") + 15) < 0.5 && abs(figure("main_db_before")) < 0.5 && abs(figure("main_db_after")) < 0.5
                    && abs(figure("announce_gain_db")) < 0.5, "run \(run): Den's output separated: \(parts) \(separated.stderr)")
        }
    }

    /// README's Quick start runs "as root or through sudo": the scripts' privileged steps, run by users who are
    /// not root (Tools/peers/sudo-users.sh adds them in a mount namespace of its own). With sudo rights,
    /// Tools/netns is root inside a network that has loopback only, and deps.sh's `as_root` (which installs what
    /// is missing) runs as root; without them each fails at once with sudo's own words rather than waiting for a
    /// password; without sudo, `as_root` says in one line what it needs. What this leaves unchecked: a whole
    /// `Tools/test` run by such a user (its build, and apt-get installing through sudo, need the network).
    @Test func thePrivilegedStepsRunThroughSudoForAUserWhoIsNotRoot() async throws {
        guard TestNetwork.which("sudo") != nil else { throw TestNetworkError("sudo is missing: run Tools/test, which installs it") }
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let checked = try await network.run([TestNetwork.tools + "/peers/sudo-users.sh"], timeout: 60)
        #expect(checked.status == 0, "sudo-users.sh: \(checked.stderr)\n\(checked.stdout)")
        let lines = Dictionary(checked.stdout.split(separator: "\n").compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }, uniquingKeysWith: { first, _ in first })
        #expect(lines["NETNS sudoer"] == "status 0: uid=0 links=1", "\(checked.stdout)")
        #expect(lines["AS_ROOT sudoer"] == "status 0: 0", "\(checked.stdout)")
        for user in ["NETNS plain", "AS_ROOT plain"] {
            let line = lines[user] ?? ""
            #expect(!line.hasPrefix("status 0") && line.contains("sudo: a password is required"), "\(user): \(checked.stdout)")
        }
        #expect(lines["AS_ROOT nosudo"] == "status 1: lyre: need root or sudo to run: id -u", "\(checked.stdout)")
    }
}
