import CDBus
import Testing

@testable import LyreMPRIS

/// Watching other apps' players, without a bus: the tracker's calls and reports, reading properties back, and
/// the generic reader over real libdbus messages.
@Suite struct PlayerTrackerTests {
    private let mpv = "org.mpris.MediaPlayer2.mpv"
    private let t0: UInt64 = 5_000_000_000

    private func playing(title: String, position: Int64 = 2_000_000) -> [DBusDictEntry] {
        var state = MPRISState()
        state.metadata = MPRISMetadata(trackID: "/0", title: title, artists: ["Ann", "Bo"], album: "LP", trackNumber: 3,
                                       lengthMicroseconds: 5_000_000, artURL: "file:///tmp/a.png")
        state.playbackStatus = .playing
        state.canPlay = true
        state.canPause = true
        state.canGoNext = true
        state.canSeek = true
        return MPRISProperties.player(state, positionAt: 0).map { entry in
            entry.key == "Position" ? DBusDictEntry("Position", .int64(position)) : entry
        }
    }

    @Test func propertiesReadBackAreTheStateTheyCameFrom() {
        var state = MPRISState()
        state.metadata = MPRISMetadata(trackID: "/org/lyre/track/2", title: "T", artists: ["A"], album: "B",
                                       albumArtists: ["C"], genres: ["Jazz"], trackNumber: 7, lengthMicroseconds: 9_000_000,
                                       artURL: "file:///x.jpg")
        state.playbackStatus = .paused
        state.rate = 1.5
        state.positionMicroseconds = 1_234_567
        state.positionAnchor = t0
        state.canGoPrevious = true
        state.canSeek = true
        state.minimumRate = 0.5
        state.maximumRate = 2
        var read = MPRISState()
        MPRISProperties.apply(MPRISProperties.player(state, positionAt: t0), to: &read, now: t0)
        #expect(read == state)
    }

    @Test func playersDifferAndAreReadAnyway() {
        // One string for an artist, a 32-bit length, a double track number, junk of the wrong types.
        let metadata = MPRISProperties.metadata(from: [
            DBusDictEntry("xesam:artist", .string("Solo")), DBusDictEntry("mpris:length", .int32(42)),
            DBusDictEntry("xesam:trackNumber", .double(4)), DBusDictEntry("xesam:title", .int64(1)),
        ])
        #expect(metadata?.artists == ["Solo"] && metadata?.lengthMicroseconds == 42 && metadata?.trackNumber == 4)
        #expect(metadata?.title == nil && metadata?.trackID == MPRISName.noTrack)
        #expect(MPRISProperties.metadata(from: []) == nil)
        var state = MPRISState()
        MPRISProperties.apply([DBusDictEntry("Rate", .double(.nan)), DBusDictEntry("PlaybackStatus", .string("Dancing"))], to: &state, now: 0)
        #expect(state == MPRISState())
    }

    @Test func aPlayerIsReportedOnceItsPropertiesAreRead() {
        var tracker = PlayerTracker()
        #expect(tracker.start() == [.call(.listNames)])
        let calls = tracker.listed(["org.freedesktop.DBus", ":1.3", mpv, "org.mpris.MediaPlayer2."])
        #expect(calls == [.call(.owner(mpv)), .call(.processID(mpv)), .call(.allProperties(mpv, interface: MPRISName.root)),
                          .call(.allProperties(mpv, interface: MPRISName.player))])
        #expect(tracker.owner(of: mpv, is: ":1.7").isEmpty)
        // Nothing is reported before the player's own properties are in.
        #expect(tracker.processID(of: mpv, is: 37).isEmpty)
        #expect(tracker.properties(of: mpv, interface: MPRISName.root, [DBusDictEntry("Identity", .string("mpv Media Player"))], now: t0).isEmpty)
        let reported = tracker.properties(of: mpv, interface: MPRISName.player, playing(title: "One"), now: t0)
        guard case .changed(let player)? = reported.first else { Issue.record("\(reported)"); return }
        #expect(player.processID == 37 && player.identity == "mpv Media Player" && player.shortName == "mpv")
        #expect(player.state.metadata?.title == "One" && player.state.metadata?.artists == ["Ann", "Bo"])
        #expect(player.state.position(at: t0 + 1_000_000_000) == 3_000_000)
    }

    @Test func changesComeFromTheOwnerAndMovesReadThePositionAgain() {
        var tracker = PlayerTracker()
        _ = tracker.ownerChanged(name: mpv, old: "", new: ":1.7")
        _ = tracker.properties(of: mpv, interface: MPRISName.player, playing(title: "One"), now: t0)
        // Another connection cannot speak for the player.
        #expect(tracker.propertiesChanged(sender: ":1.9", interface: MPRISName.player, [DBusDictEntry("PlaybackStatus", .string("Paused"))],
                                          invalidated: [], now: t0).isEmpty)
        let paused = tracker.propertiesChanged(sender: ":1.7", interface: MPRISName.player,
                                               [DBusDictEntry("PlaybackStatus", .string("Paused"))], invalidated: [], now: t0 + 1_000_000_000)
        #expect(paused.first == .call(.position(mpv)))
        guard case .changed(let player)? = paused.last else { Issue.record("\(paused)"); return }
        // Paused where it was at the change, and stays there.
        #expect(player.state.playbackStatus == .paused && player.state.position(at: t0 + 9_000_000_000) == 3_000_000)
        // A seek carries its position.
        let seeked = tracker.seeked(sender: ":1.7", positionMicroseconds: 4_000_000, now: t0 + 2_000_000_000)
        guard case .changed(let moved)? = seeked.first else { Issue.record("\(seeked)"); return }
        #expect(moved.state.position(at: t0 + 3_000_000_000) == 4_000_000)
        // Nothing new, nothing reported.
        #expect(tracker.propertiesChanged(sender: ":1.7", interface: MPRISName.player, [DBusDictEntry("CanPlay", .boolean(true))],
                                          invalidated: [], now: t0).isEmpty)
        // Leaving.
        #expect(tracker.ownerChanged(name: mpv, old: ":1.7", new: "") == [.removed(busName: mpv)])
        #expect(tracker.seeked(sender: ":1.7", positionMicroseconds: 0, now: t0).isEmpty)
        #expect(tracker.players.isEmpty)
    }

    @Test func theReaderReadsWhatAPlayerSends() throws {
        let sent: [DBusValue] = [
            .string(MPRISName.player),
            .dictionary([
                DBusDictEntry("Metadata", .dictionary([DBusDictEntry("xesam:artist", .stringArray(["A", "B"])),
                                                       DBusDictEntry("mpris:trackid", .objectPath("/t/1"))])),
                DBusDictEntry("Rate", .double(1)), DBusDictEntry("CanSeek", .boolean(true)), DBusDictEntry("Position", .int64(-5)),
            ]),
            .stringArray(["Position"]),
        ]
        let message = try #require(BusMessage.signal(path: "/org/mpris/MediaPlayer2", interface: MPRISName.properties,
                                                     member: "PropertiesChanged", arguments: sent))
        #expect(message.signature == "sa{sv}as")
        var reader = DBusMessageReader(message)
        #expect([reader.readValue(), reader.readValue(), reader.readValue()] == sent)
        #expect(reader.isAtEnd && reader.readValue() == nil)
    }

    @Test func commandsBecomeTheMethodsMPRISNames() throws {
        let seek = try #require(WatcherService.message(for: .seek(offsetMicroseconds: -15_000_000), to: mpv))
        #expect(seek.member == "Seek" && seek.interface == MPRISName.player && seek.signature == "x")
        let set = try #require(WatcherService.message(for: .setPosition(trackID: "/0", positionMicroseconds: 9), to: mpv))
        #expect(set.member == "SetPosition" && set.signature == "ox")
        #expect(WatcherService.message(for: .next, to: mpv)?.member == "Next")
        // A name libdbus would abort on is refused first.
        #expect(WatcherService.message(for: .play, to: "not a name") == nil)
        #expect(WatcherService.message(for: .setPosition(trackID: "bad path", positionMicroseconds: 0), to: mpv) == nil)
    }
}
