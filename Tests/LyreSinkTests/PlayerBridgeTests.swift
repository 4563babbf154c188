import Foundation
import LyreMPRIS
import LyreSink
import LyreWire
import Testing

/// Which app's player speaks for an output, what the receiver is told of it, and where its controls go,
/// without a bus or a receiver.
struct PlayerBridgeTests {
    static func player(_ name: String, pid: UInt32?, identity: String? = nil, _ configure: (inout MPRISState) -> Void = { _ in })
        -> WatchedPlayer
    {
        var state = MPRISState()
        configure(&state)
        return WatchedPlayer(busName: "org.mpris.MediaPlayer2.\(name)", processID: pid, identity: identity, state: state)
    }

    @Test func theAppIsFoundByItsProcessThenByItsName() {
        let players = [
            Self.player("lyred", pid: 10, identity: "Lyre (Kitchen)"), Self.player("mpv", pid: 37, identity: "mpv Media Player"),
            Self.player("firefox.instance_1_7", pid: 500, identity: "Mozilla Firefox"), Self.player("vlc", pid: 61, identity: "VLC media player"),
        ]
        #expect(PlayerBridge.player(processIDs: [37], application: "whatever", among: players)?.shortName == "mpv")
        // A browser plays from a child process: its parent owns the name.
        #expect(PlayerBridge.player(processIDs: [777, 500, 1], application: "Firefox", among: players)?.shortName == "firefox")
        // No process matches: the application name, against the bus name or the identity.
        #expect(PlayerBridge.player(processIDs: [999], application: "MPV", among: players)?.shortName == "mpv")
        #expect(PlayerBridge.player(processIDs: [], application: "VLC", among: players)?.shortName == "vlc")
        #expect(PlayerBridge.player(processIDs: [], application: "paplay", among: players) == nil)
        // The receiver's own player is never an app's, even by name.
        #expect(PlayerBridge.player(processIDs: [10], application: "lyred", among: players) == nil)
    }

    @Test func nowPlayingCarriesThePositionWithItsRate() {
        let t0: UInt64 = 7_000_000_000
        let playing = Self.player("mpv", pid: 37) { state in
            state.metadata = MPRISMetadata(trackID: "/0", title: "One", artists: ["Ann", "Bo"], album: "LP", albumArtists: ["Ann"],
                                           trackNumber: 2, lengthMicroseconds: 5_000_000)
            state.playbackStatus = .playing
            state.positionMicroseconds = 1_000_000
            state.positionAnchor = t0
        }
        let info = PlayerBridge.nowPlaying(playing, at: t0 + 500_000_000)
        #expect(info.title == "One" && info.artist == "Ann, Bo" && info.album == "LP" && info.albumArtist == "Ann")
        #expect(info.trackNumber == 2 && info.duration == 5 && info.rate == 1 && info.anchor == t0 + 500_000_000)
        #expect(abs(info.elapsed - 1.5) < 1e-9)
        #expect((try? info.validate()) != nil)
        var paused = playing
        paused.state.playbackStatus = .paused
        #expect(PlayerBridge.nowPlaying(paused, at: t0 + 9_000_000_000).rate == 0)
        #expect(PlayerBridge.nowPlaying(paused, at: t0 + 9_000_000_000).elapsed == 1)
    }

    @Test func oversizedOrOddMetadataIsCappedNotRefused() {
        let huge = Self.player("app", pid: 1) { state in
            state.metadata = MPRISMetadata(trackID: "/0", title: String(repeating: "é", count: 5000), artists: Array(repeating: "x", count: 2000),
                                           trackNumber: -4, lengthMicroseconds: -1)
            state.playbackStatus = .playing
            state.rate = 1e9
        }
        let info = PlayerBridge.nowPlaying(huge, at: 1)
        #expect(info.title!.utf8.count <= NowPlayingInfo.maximumTextBytes && info.title!.hasPrefix("éé"))
        #expect(info.artist!.utf8.count <= NowPlayingInfo.maximumTextBytes)
        #expect(info.trackNumber == nil && info.duration == nil && info.rate == 32)
        #expect((try? info.validate()) != nil)
        #expect(PlayerBridge.cappedFields(huge) == ["title", "artist", "trackNumber", "length", "rate"])
        #expect(PlayerBridge.cappedFields(Self.player("mpv", pid: 1)).isEmpty)
    }

    @Test func controlsFollowWhatThePlayerCanDo() {
        var state = MPRISState()
        state.canPlay = true
        state.canGoNext = true
        let enabled = PlayerBridge.enabled(state)
        #expect(enabled[.play] == true && enabled[.togglePlayPause] == true && enabled[.nextTrack] == true)
        #expect(enabled[.pause] == false && enabled[.previousTrack] == false && enabled[.skipForward] == false)
        state.canControl = false
        #expect(PlayerBridge.enabled(state).values.allSatisfy { !$0 })
        #expect(PlayerBridge.enabled(nil).values.allSatisfy { !$0 })
        #expect(Set(PlayerBridge.enabled(nil).keys) == Set(PlayerBridge.bridgedCommands))
    }

    @Test func eachControlBecomesItsMPRISCall() {
        var state = MPRISState()
        state.metadata = MPRISMetadata(trackID: "/7")
        #expect(PlayerBridge.mprisCommand(for: RemoteCommandEvent(.togglePlayPause), state: state) == .playPause)
        #expect(PlayerBridge.mprisCommand(for: RemoteCommandEvent(.nextTrack), state: state) == .next)
        #expect(PlayerBridge.mprisCommand(for: RemoteCommandEvent(.skipBackward, interval: 15), state: state) == .seek(offsetMicroseconds: -15_000_000))
        #expect(PlayerBridge.mprisCommand(for: RemoteCommandEvent(.changePlaybackPosition, position: 90.5), state: state)
            == .setPosition(trackID: "/7", positionMicroseconds: 90_500_000))
        #expect(PlayerBridge.mprisCommand(for: RemoteCommandEvent(.changePlaybackPosition, position: 1), state: MPRISState()) == nil)
        #expect(PlayerBridge.mprisCommand(for: RemoteCommandEvent(.volumeUp), state: state) == nil)
    }

    /// now-playing.md §7: `noSuchContent` when no player speaks for the output (or it cannot take the command);
    /// `success` when the player's method returns; `commandFailed` when it answers an error or nothing in 2 s.
    /// (SinkTests.aStoppedPlayersControlsFailAndItsCoverIsLeftOutWithAReason holds the 2 s with a real player.)
    @Test func aControlIsAnsweredAsThePlayerAnswers() {
        let mpv = WatchedPlayer(busName: "org.mpris.MediaPlayer2.mpv")
        #expect(PlayerBridge.relay(RemoteCommandEvent(.pause), to: nil) == .answer(.noSuchContent))
        #expect(PlayerBridge.relay(RemoteCommandEvent(.pause), to: mpv) == .call(.pause))
        #expect(PlayerBridge.relay(RemoteCommandEvent(.volumeUp), to: mpv) == .answer(.noSuchContent))
        #expect(PlayerBridge.status(of: .success) == .success)
        #expect(PlayerBridge.status(of: .failed(errorName: "org.freedesktop.DBus.Error.Failed", message: "no")) == .commandFailed)
        #expect(PlayerBridge.status(of: nil) == .commandFailed)
    }

    @Test func onlyLocalFilesAreReadForArtwork() {
        #expect(PlayerBridge.artworkSource("file:///home/a/My%20Cover.png") == .file(path: "/home/a/My Cover.png"))
        #expect(PlayerBridge.artworkSource("file://localhost/tmp/c.jpg") == .file(path: "/tmp/c.jpg"))
        #expect(PlayerBridge.artworkSource("file://nas/tmp/c.jpg") == .elsewhere(scheme: "file"))
        #expect(PlayerBridge.artworkSource("https://i.scdn.co/image/ab67") == .elsewhere(scheme: "https"))
        #expect(PlayerBridge.artworkSource(nil) == .none && PlayerBridge.artworkSource("") == .none)
    }
}

struct ProcessAncestryTests {
    @Test func theParentIsReadPastTheCommandName() {
        #expect(ProcessAncestry.parent(inStat: Array("4242 (Web Content) S 4200 4242 1 0".utf8)) == 4200)
        #expect(ProcessAncestry.parent(inStat: Array("7 (a) b) (c) R 3 7 7".utf8)) == 3)
        #expect(ProcessAncestry.parent(inStat: Array("garbage".utf8)) == nil)
    }

    @Test func aChildsChainRunsThroughThisProcess() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["10"]
        try child.run()
        defer { child.terminate() }
        let chain = ProcessAncestry.chain(of: UInt32(child.processIdentifier))
        #expect(Array(chain.prefix(2)) == [UInt32(child.processIdentifier), UInt32(getpid())], "\(chain)")
        #expect(ProcessAncestry.chain(of: nil).isEmpty && ProcessAncestry.chain(of: 1).isEmpty)
    }

    /// now-playing.md §7: the stream's process, then its parents, up to 8 of them; never init, never round a loop.
    @Test func theChainIsTheProcessAndUpTo8Parents() {
        // 120's parent is 119, and so on down to init.
        func stat(_ pid: UInt32) -> [UInt8]? { Array("\(pid) (app \(pid)) S \(pid - 1) \(pid) 1 0".utf8) }
        #expect(ProcessAncestry.chain(of: 120, stat: stat) == [120, 119, 118, 117, 116, 115, 114, 113, 112])
        #expect(ProcessAncestry.chain(of: 4, stat: stat) == [4, 3, 2])
        // A loop (7's parent is 8, 8's is 7) ends where it would repeat.
        func loop(_ pid: UInt32) -> [UInt8]? { Array("\(pid) (x) S \(pid == 7 ? 8 : 7) 1 1 0".utf8) }
        #expect(ProcessAncestry.chain(of: 7, stat: loop) == [7, 8])
    }
}
