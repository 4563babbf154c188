import Foundation
import Synchronization
import Testing

@testable import LyreMPRIS

/// `MPRISPlayer` driven by real clients (`playerctl`, `dbus-send`) on the session bus of `Tools/netns`. Each test
/// has a player name of its own, so the tests run in parallel.
@Suite(.timeLimit(.minutes(1))) struct MPRISPlayerTests {
    private func player(_ name: String, _ log: CommandLog = CommandLog()) throws -> MPRISPlayer {
        try BusClients.requireSessionBus()
        return try MPRISPlayer(bus: .session, name: name, identity: "Lyre test \(name)", handler: log.handler)
    }

    @Test func playerctlShowsMetadataAndStatus() async throws {
        let player = try player("lyredmeta")
        defer { player.close() }
        #expect(player.busName == "org.mpris.MediaPlayer2.lyredmeta")
        player.update(.playing())
        let metadata = try await BusClients.playerctl(
            "lyredmeta", "metadata", "--format", "{{title}}|{{artist}}|{{album}}|{{mpris:length}}|{{mpris:artUrl}}")
        #expect(
            metadata.trimmed
                == "Blue in Green|Miles Davis, Bill Evans|Kind of Blue|337000000|file:///run/lyre/art.png",
            "\(metadata)")
        #expect(try await BusClients.playerctl("lyredmeta", "status").trimmed == "Playing")
        #expect(try await BusClients.playerctl("lyredmeta", "metadata", "xesam:trackNumber").trimmed == "3")

        var stopped = MPRISState()
        stopped.playbackStatus = .stopped
        player.update(stopped)
        #expect(try await BusClients.playerctl("lyredmeta", "status").trimmed == "Stopped")
        let empty = try await BusClients.getPlayerProperty(player.busName, "Metadata")
        #expect(empty.status == 0 && !empty.standardOutput.contains("mpris:trackid"), "\(empty)")
    }

    @Test func positionIsExtrapolatedWhilePlayingAndFrozenOtherwise() async throws {
        let player = try player("lyredposition")
        defer { player.close() }
        player.update(.playing(at: 10_000_000, anchoredSecondsAgo: 2))
        let playing = try #require(Double(try await BusClients.playerctl("lyredposition", "position").trimmed))
        #expect(playing >= 12 && playing < 13.5, "playing: \(playing)")

        var fast = MPRISState.playing(at: 10_000_000, anchoredSecondsAgo: 2)
        fast.rate = 2
        player.update(fast)
        let doubled = try #require(Double(try await BusClients.playerctl("lyredposition", "position").trimmed))
        #expect(doubled >= 14 && doubled < 16.5, "rate 2: \(doubled)")

        var paused = MPRISState.playing(at: 10_000_000, anchoredSecondsAgo: 2)
        paused.playbackStatus = .paused
        player.update(paused)
        #expect(try await BusClients.playerctl("lyredposition", "position").trimmed == "10.000000")
        #expect(try await BusClients.playerctl("lyredposition", "status").trimmed == "Paused")
    }

    @Test func everyMethodReachesTheHandler() async throws {
        let log = CommandLog()
        let player = try player("lyredcommands", log)
        defer { player.close() }
        player.update(.playing())
        for command in ["play", "pause", "play-pause", "stop", "next", "previous"] {
            let output = try await BusClients.playerctl("lyredcommands", command)
            #expect(output.status == 0, "playerctl \(command): \(output)")
        }
        for position in ["5", "3+"] {
            let output = try await BusClients.playerctl("lyredcommands", "position", position)
            #expect(output.status == 0, "playerctl position \(position): \(output)")
        }
        let seek = try await BusClients.send(to: player.busName, "org.mpris.MediaPlayer2.Player.Seek", "int64:-2500000")
        #expect(seek.status == 0, "\(seek)")
        for rate in ["1.5", "0.0"] {
            let set = try await BusClients.send(
                to: player.busName, "org.freedesktop.DBus.Properties.Set", "string:org.mpris.MediaPlayer2.Player",
                "string:Rate", "variant:double:\(rate)")
            #expect(set.status == 0, "Set Rate \(rate): \(set)")
        }
        #expect(
            log.received == [
                .play, .pause, .playPause, .stop, .next, .previous,
                .setPosition(trackID: "/org/lyre/track/3", positionMicroseconds: 5_000_000),
                .seek(offsetMicroseconds: 3_000_000), .seek(offsetMicroseconds: -2_500_000), .setRate(1.5), .pause,
            ])
    }

    @Test func setPositionForAnotherTrackOrOutsideTheTrackIsIgnored() async throws {
        let log = CommandLog()
        let player = try player("lyredstale", log)
        defer { player.close() }
        player.update(.playing())
        for (track, position) in [
            ("/org/lyre/track/2", "1000000"), ("/org/lyre/track/3", "-1"),
            ("/org/lyre/track/3", "999000000"),
        ] {
            let output = try await BusClients.send(
                to: player.busName, "org.mpris.MediaPlayer2.Player.SetPosition", "objpath:\(track)", "int64:\(position)"
            )
            #expect(output.status == 0, "\(output)")
        }
        #expect(log.received.isEmpty)
    }

    @Test func aFailedCommandIsAnErrorReply() async throws {
        let log = CommandLog { command in
            command == .next
                ? .failed(errorName: "org.mpris.MediaPlayer2.Lyre.CommandDisabled", message: "no next")
                : command == .stop ? .failed(errorName: "not an error name", message: "bad name") : .success
        }
        let player = try player("lyredfail", log)
        defer { player.close() }
        player.update(.playing())
        let next = try await BusClients.playerctl("lyredfail", "next")
        #expect(
            next.status != 0 && next.standardError.contains("org.mpris.MediaPlayer2.Lyre.CommandDisabled"), "\(next)")
        let send = try await BusClients.send(to: player.busName, "org.mpris.MediaPlayer2.Player.Next")
        #expect(send.status != 0, "\(send)")
        #expect(send.standardError.contains("org.mpris.MediaPlayer2.Lyre.CommandDisabled: no next"), "\(send)")
        let stop = try await BusClients.send(to: player.busName, "org.mpris.MediaPlayer2.Player.Stop")
        #expect(stop.standardError.contains("org.freedesktop.DBus.Error.Failed: bad name"), "\(stop)")
        #expect(try await BusClients.playerctl("lyredfail", "status").trimmed == "Playing")
    }

    @Test func slowRepliesDoNotBlockOtherClients() async throws {
        try BusClients.requireSessionBus()
        let log = CommandLog { _ in nil }  // records only: the handler below answers
        let player = try MPRISPlayer(bus: .session, name: "lyredslow", identity: "Lyre slow") { command, reply in
            log.handler(command, reply)
            guard command == .previous else { return }  // play: the reply closure is dropped unanswered
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 1.5)
                reply(.success)
                reply(.failed(errorName: "org.example.Twice", message: "a second answer is ignored"))
            }
        }
        defer { player.close() }
        player.update(.playing())
        let started = ContinuousClock.now
        let previous = try Child(
            "dbus-send",
            [
                "--session", "--print-reply", "--dest=\(player.busName)", "/org/mpris/MediaPlayer2",
                "org.mpris.MediaPlayer2.Player.Previous",
            ])
        #expect(try await BusClients.eventually { log.received == [.previous] })
        #expect(try await BusClients.playerctl("lyredslow", "status").trimmed == "Playing")
        #expect(ContinuousClock.now - started < .milliseconds(1400), "Get waited for the pending command")
        let answer = await previous.finish()
        #expect(answer.status == 0, "\(answer)")
        #expect(ContinuousClock.now - started >= .milliseconds(1500))

        let dropped = try await BusClients.send(to: player.busName, "org.mpris.MediaPlayer2.Player.Play")
        #expect(
            dropped.status != 0 && dropped.standardError.contains("org.mpris.MediaPlayer2.Lyre.NoAnswer"), "\(dropped)")
    }

    @Test func aSecondPlayerGetsTheInstanceSuffix() async throws {
        let first = try player("lyredtwin")
        let second = try player("lyredtwin")
        defer { second.close() }
        #expect(first.busName == "org.mpris.MediaPlayer2.lyredtwin")
        #expect(second.busName == "org.mpris.MediaPlayer2.lyredtwin.instance\(getpid())")
        let players = try await BusClients.run("playerctl", ["-l"]).standardOutput.split(separator: "\n")
        #expect(players.contains("lyredtwin") && players.contains("lyredtwin.instance\(getpid())"), "\(players)")
        first.close()
        first.close()
        let names = try await BusClients.listNames()
        #expect(!names.contains("\"org.mpris.MediaPlayer2.lyredtwin\""), "the name was not released")
        #expect(names.contains("\"org.mpris.MediaPlayer2.lyredtwin.instance\(getpid())\""))
    }

    @Test func closingFromTheHandlerAndUsingAClosedPlayerIsHarmless() async throws {
        try BusClients.requireSessionBus()
        let box = PlayerBox()
        let player = try MPRISPlayer(bus: .session, name: "lyredclose", identity: "Lyre close") { command, reply in
            reply(.success)
            if command == .stop { box.player?.close() }  // on the player's own thread
        }
        box.player = player
        defer { box.player = nil }
        player.update(.playing())
        let stop = try await BusClients.send(to: player.busName, "org.mpris.MediaPlayer2.Player.Stop")
        #expect(stop.status == 0, "the reply queued before close() is sent: \(stop)")
        var released = false
        for _ in 0..<100 where !released {
            released = try await !BusClients.listNames().contains("\"org.mpris.MediaPlayer2.lyredclose\"")
        }
        #expect(released, "the name is released")
        player.update(.playing(at: 1))
        player.seeked(positionMicroseconds: 1)
        player.close()
    }

    @Test func anInvalidNameIsAnError() throws {
        try BusClients.requireSessionBus()
        #expect {
            try MPRISPlayer(bus: .session, name: "two words", identity: "x") { _, reply in reply(.success) }
        } throws: { error in
            (error as? MPRISError)?.description.hasPrefix("invalid MPRIS player name 'two words'") == true
        }
    }
}

/// Lets a handler reach its own player.
final class PlayerBox: Sendable {
    private let stored = Mutex<MPRISPlayer?>(nil)

    var player: MPRISPlayer? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
