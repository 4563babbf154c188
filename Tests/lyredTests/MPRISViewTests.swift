import LyreMPRIS
import LyreReceiver
import LyreWire
import Testing

@testable import lyred

/// now-playing.md §6: what an MPRIS client sees of the receiver's now playing, and what its calls become.
@Suite struct MPRISViewTests {
    static let second: UInt64 = 1_000_000_000
    static let t0: UInt64 = 1_000 * second

    static func snapshot(elapsed: Double = 10, rate: Double = 1, queueIndex: Int? = 2, at anchor: UInt64 = t0,
                         commands: Set<RemoteCommand> = []) -> NowPlayingSnapshot {
        NowPlayingSnapshot(
            sender: "Phone", info: NowPlayingInfo(title: "Song", duration: 200, elapsed: elapsed, rate: rate, anchor: anchor, queueIndex: queueIndex),
            localAnchor: anchor, enabled: EnabledCommands(commands))
    }

    @Test func theTrackIDNamesTheSessionAndTheTrack() {
        var view = MPRISView()
        #expect(view.trackID == "/org/lyre/NoTrack")
        _ = view.show(Self.snapshot(queueIndex: 2), at: Self.t0)
        #expect(view.trackID == "/org/lyre/session1/track2")
        #expect(view.state.metadata?.trackID == "/org/lyre/session1/track2")
        _ = view.show(Self.snapshot(queueIndex: nil), at: Self.t0)
        #expect(view.trackID == "/org/lyre/session1/track0")
        // The session ends: no track. The next session's tracks are its own, even at the same index.
        _ = view.show(nil, at: Self.t0)
        #expect(view.trackID == "/org/lyre/NoTrack")
        #expect(view.state.metadata == nil)
        _ = view.show(Self.snapshot(queueIndex: 2), at: Self.t0)
        #expect(view.trackID == "/org/lyre/session2/track2")
    }

    /// now-playing.md §6: what plays over the session is listed beside its track, which stays the session's.
    @Test func overlaysAreListedBesideTheSessionsTrack() {
        var view = MPRISView()
        view.overlays = [ReceiverOverlay(sender: "Doorbell", how: .duck, duckDB: -15)]
        #expect(view.state.metadata == nil, "an overlay with no session's track has a track of its own")
        _ = view.show(Self.snapshot(), at: Self.t0)
        #expect(view.state.metadata?.title == "Song")
        #expect(view.state.metadata?.custom[MPRISView.overlaysKey] == ["Doorbell duck -15.0 dB"])
        view.overlays = [
            ReceiverOverlay(sender: "Doorbell", how: .duck, duckDB: -24.5), ReceiverOverlay(sender: "Radio \"2\"", how: .mix),
            ReceiverOverlay(sender: "Alarm", how: .pause),
        ]
        #expect(view.state.metadata?.custom[MPRISView.overlaysKey] == ["Doorbell duck -24.5 dB", "Radio \"2\" mix", "Alarm pause"])
        #expect(view.state.metadata?.title == "Song" && view.state.playbackStatus == .playing)
        view.overlays = []
        // An empty list is left off the bus (MPRISStateTests.customKeysFollowTheStandardOnes…).
        #expect(view.state.metadata?.custom[MPRISView.overlaysKey] == [], "an ended overlay is still listed")
    }

    @Test func theRateIsTheSendersOrOneNeverZero() {
        var view = MPRISView()
        _ = view.show(Self.snapshot(rate: 1.5), at: Self.t0)
        #expect(view.state.rate == 1.5)
        #expect(view.state.playbackStatus == .playing)
        _ = view.show(Self.snapshot(rate: 0), at: Self.t0)
        #expect(view.state.rate == 1)
        #expect(view.state.playbackStatus == .paused)
    }

    @Test func theCanPropertiesFollowTheEnabledCommands() {
        let cases: [(Set<RemoteCommand>, play: Bool, pause: Bool, next: Bool, previous: Bool, seek: Bool)] = [
            ([], false, false, false, false, false),
            ([.play], true, false, false, false, false),
            ([.pause], false, true, false, false, false),
            ([.togglePlayPause], true, true, false, false, false),
            ([.nextTrack], false, false, true, false, false),
            ([.previousTrack], false, false, false, true, false),
            ([.changePlaybackPosition], false, false, false, false, true),
            ([.skipForward], false, false, false, false, true),
            ([.skipBackward], false, false, false, false, false),
        ]
        for (commands, play, pause, next, previous, seek) in cases {
            var view = MPRISView()
            _ = view.show(Self.snapshot(commands: commands), at: Self.t0)
            let state = view.state
            #expect(
                [state.canPlay, state.canPause, state.canGoNext, state.canGoPrevious, state.canSeek] == [play, pause, next, previous, seek],
                "\(commands)")
            #expect(state.canControl)
        }
    }

    @Test func seekMovesThePositionOrSkipsWhenOnlySkipsAreEnabled() {
        var view = MPRISView()
        // 10 s in at t0, playing: 4 s later it is 14 s in.
        _ = view.show(Self.snapshot(elapsed: 10, commands: [.changePlaybackPosition, .skipForward, .skipBackward]), at: Self.t0)
        let now = Self.t0 + 4 * Self.second
        #expect(view.event(for: .seek(offsetMicroseconds: 5_000_000), at: now) == RemoteCommandEvent(.changePlaybackPosition, position: 19))
        #expect(view.event(for: .seek(offsetMicroseconds: -60_000_000), at: now) == RemoteCommandEvent(.changePlaybackPosition, position: 0))

        _ = view.show(Self.snapshot(elapsed: 10, commands: [.skipForward, .skipBackward]), at: Self.t0)
        #expect(view.event(for: .seek(offsetMicroseconds: 15_000_000), at: now) == RemoteCommandEvent(.skipForward, interval: 15))
        #expect(view.event(for: .seek(offsetMicroseconds: -7_500_000), at: now) == RemoteCommandEvent(.skipBackward, interval: 7.5))
    }

    @Test func setPositionForAnotherTrackIsIgnored() {
        var view = MPRISView()
        _ = view.show(Self.snapshot(queueIndex: 3, commands: [.changePlaybackPosition]), at: Self.t0)
        #expect(view.event(for: .setPosition(trackID: "/org/lyre/session1/track3", positionMicroseconds: 42_000_000))
            == RemoteCommandEvent(.changePlaybackPosition, position: 42))
        #expect(view.event(for: .setPosition(trackID: "/org/lyre/session1/track2", positionMicroseconds: 42_000_000)) == nil)
        #expect(view.event(for: .setPosition(trackID: "/org/lyre/session1/track3", positionMicroseconds: -1)) == nil)
    }

    @Test func volumeIsMappedBothWays() {
        var view = MPRISView()
        for (db, shown) in [(0.0, 1.0), (-15.0, 0.5), (-30.0, 0.0), (-144.0, 0.0)] {
            view.volume = db
            #expect(view.state.volume == shown, "\(db) dB")
        }
        for (asked, db) in [(1.0, 0.0), (0.5, -15.0), (0.0, -144.0)] {
            #expect(view.event(for: .setVolume(asked)) == RemoteCommandEvent(.changeVolume, volume: db), "\(asked)")
        }
    }

    @Test func seekedIsSentOnlyWhenThePositionDoesNotFollowByMoreThanHalfASecond() {
        var view = MPRISView()
        #expect(view.show(Self.snapshot(elapsed: 10), at: Self.t0) == nil)
        let now = Self.t0 + 2 * Self.second
        // 2 s later the first snapshot says 12 s. A new one within 0.5 s of that is drift, not a seek.
        #expect(view.show(Self.snapshot(elapsed: 12.4, at: now), at: now) == nil)
        #expect(view.show(Self.snapshot(elapsed: 12, at: now), at: now) == nil)
        // 0.6 s off, either way, is a seek, announced with the new position.
        #expect(view.show(Self.snapshot(elapsed: 12.6, at: now), at: now) == 12.6)
        #expect(view.show(Self.snapshot(elapsed: 12, at: now), at: now) == 12)
        // A new track starts wherever it starts: no Seeked.
        #expect(view.show(Self.snapshot(elapsed: 0, queueIndex: 3, at: now), at: now) == nil)
    }

    @Test func refusalsAreNamedErrors() {
        let names = [RemoteCommandOutcome.Kind.disabled, .noSuchContent, .commandFailed, .noSession, .timeout, .invalid].map(MPRISView.errorName)
        #expect(names == ["CommandDisabled", "NoSuchContent", "CommandFailed", "NoSession", "Timeout", "InvalidArgs"].map { "org.mpris.MediaPlayer2.Lyre.\($0)" })
    }
}
