import Foundation
import Testing

/// No host on the LAN can starve a receiver (issue 27; streaming.md §2's limits): while a song plays, one
/// host sends 2 MB/s of empty interleaved frames (on connections that hold no session: each is closed at its
/// first frame, and the flood reconnects), holds 100 connections each with 2 MiB − 1 of a body, sends
/// large GET_PARAMETERs it never reads, stalls TLS handshakes, and sends OPTIONS after OPTIONS reading none of
/// the answers (Tools/peers/rtsp-exhaust.py). The song
/// plays whole, first sample to last (audio.py against the file), with nothing late, lost or concealed;
/// OPTIONS is answered all along, the receiver closed what it had to, and its memory stays bounded.
@Suite(.serialized)
struct ExhaustionTests {
    @Test func aHostOnTheLANCannotStarveAPlayingReceiver() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let output = network.scratch.appendingPathComponent("out.wav").path
        let lyred = try network.spawn(
            ["lyred", "--name", "Speaker", "--port", "7730", "--state-dir", "/run/lyred", "--output", "wav:" + output,
             "--mpris", "off", "--web", "off", "--log-level", "info"], name: "lyred")
        #expect(await eventually { lyred.stderr.contains("advertised as") }, "\(lyred.stderr)")
        // The attack's five phases take about 6 s of the song here; 15 s leave it whole to the end at more than
        // twice that.
        let song = try await StreamingTests.sweep(network, rate: 48000, seconds: 15, signal: "music")
        let play = try network.spawn(["lyre", "play", song, "--to", "Speaker"], name: "lyre-play")
        #expect(await eventually { lyred.stderr.contains("session from") }, "\(play.stderr)")

        let exhaust = try await network.shell(
            "python3 \(TestNetwork.tools)/peers/rtsp-exhaust.py 127.0.0.1 7730 --connections 100 --seconds 4 --pid $(pidof lyred)", timeout: 180)
        let report = try #require(try? JSONSerialization.jsonObject(with: Data(exhaust.stdout.utf8)) as? [String: Any], "rtsp-exhaust: \(exhaust.stdout) \(exhaust.stderr)")
        #expect((report["interleaved_frames"] as? Int ?? 0) > 1_000_000, "the flood did not flow: \(report)")
        #expect(report["healthy"] as? Bool == true, "OPTIONS went unanswered: \(report)")
        #expect((report["closed_by_receiver"] as? Int ?? 0) >= 100, "the receiver kept what it should have closed: \(report)")
        // streaming.md §2: a peer that reads nothing is closed once 256 KiB wait for it, and counted `slow`.
        #expect(report["unread_closed"] as? Bool == true, "a connection that reads nothing was kept: \(report)")
        // Bounded: at most 32 connections' 2 MiB bodies (64 MiB) above what lyred needs anyway.
        let rss = (report["rss_kib"] as? [Int] ?? []).max() ?? Int.max
        #expect(rss < 256 * 1024, "lyred's RSS reached \(rss) KiB: \(report)")

        let stats = try await network.run(["lyre", "remote", "stats"]).stdout
        print("the flood: \(report)\nthe receiver: \(stats)")
        #expect(!stats.contains("no session"), "the song ended before the attack did (its counters are gone): \(stats)")
        func counter(_ name: String) -> Int { stats.firstMatch(of: try! Regex(" \(name)=(\\d+)")).flatMap { Int($0.output[1].substring ?? "") } ?? -1 }
        #expect(counter("late") == 0 && counter("lost") == 0 && counter("concealed") == 0, "the audio suffered: \(stats)")
        #expect(counter("evicted") > 0 && counter("slow") > 0, "stats: \(stats)")

        try await play.waitForExit(timeout: 60)
        #expect(play.status == 0, "lyre play: \(play.stderr)")
        let comparison = try await StreamingTests.compare(network, reference: song, output: output)
        let (floor, edgeFloor) = try await StreamingTests.opusFloors(network, input: song)
        StreamingTests.expectSameAudio(comparison, floor: floor)
        StreamingTests.expectWhole(comparison, floor: edgeFloor)
    }
}
