import LyreClock
import LyreMPRIS
import LyreReceiver
import LyreWire

/// What the receiver's now playing looks like to MPRIS clients, and what their calls ask of the sender
/// (now-playing.md §6). Plain values with the clock passed in, no bus: ``MPRISBridge`` moves them to and from
/// D-Bus, and `lyredTests` holds each rule.
struct MPRISView: Sendable, Equatable {
    /// The `mpris:trackid` when nothing plays.
    static let noTrack = "/org/lyre/NoTrack"
    /// How far a new snapshot's position may be from where the last one said it would be before it is a seek
    /// (`Seeked`) rather than the two clocks' drift.
    static let seekedThreshold = 0.5

    private(set) var snapshot: NowPlayingSnapshot?
    /// The receiver's volume, dB (−144 is muted).
    var volume = 0.0
    /// What plays over the session (announcements), shown as `lyre:overlays` beside its track (now-playing.md §6).
    var overlays: [ReceiverOverlay] = []
    /// The `lyre:overlays` metadata key.
    static let overlaysKey = "lyre:overlays"
    private(set) var trackID = noTrack
    /// Counts sessions, so that two sessions' tracks never share an id.
    private(set) var session = 0

    /// Takes a new snapshot (nil: the session ended). Returns the position (s) to announce with `Seeked` when
    /// it does not follow from the last snapshot of the same track.
    mutating func show(_ new: NowPlayingSnapshot?, at now: UInt64 = HostClock.now()) -> Double? {
        let previous = (snapshot: snapshot, trackID: trackID)
        if previous.snapshot == nil, new != nil { session += 1 }
        snapshot = new
        trackID = new?.info.map { "/org/lyre/session\(session)/track\($0.queueIndex ?? 0)" } ?? Self.noTrack
        guard let new, let old = previous.snapshot, trackID == previous.trackID,
            let position = new.position(at: now), let expected = old.position(at: now), abs(position - expected) > Self.seekedThreshold
        else { return nil }
        return position
    }

    /// What the player shows.
    var state: MPRISState {
        var state = MPRISState()
        // 0…1 is −30…0 dB, and 0 is mute.
        state.volume = volume <= ReceiverTXT.mutedVolume ? 0 : max(0, min(1, (volume + 30) / 30))
        guard let snapshot, let info = snapshot.info else { return state }
        var metadata = MPRISMetadata(trackID: trackID)
        metadata.title = info.title
        metadata.artists = info.artist.map { [$0] } ?? []
        metadata.album = info.album
        metadata.albumArtists = info.albumArtist.map { [$0] } ?? []
        metadata.genres = info.genre.map { [$0] } ?? []
        metadata.trackNumber = info.trackNumber
        metadata.lengthMicroseconds = info.duration.map { Int64($0 * 1e6) }
        metadata.artURL = snapshot.artworkPath.map { "file://" + $0 }
        metadata.custom[Self.overlaysKey] = overlays.map(Self.describe)
        state.metadata = metadata
        state.playbackStatus = snapshot.state == .playing ? .playing : .paused
        // MPRIS has no rate 0: a paused player shows 1, and its status says it is paused.
        state.rate = info.rate != 0 ? info.rate : 1
        state.positionMicroseconds = Int64(info.elapsed * 1e6)
        state.positionAnchor = snapshot.localAnchor ?? HostClock.now()
        let commands = snapshot.enabled.commands
        state.canPlay = commands.contains(.play) || commands.contains(.togglePlayPause)
        state.canPause = commands.contains(.pause) || commands.contains(.togglePlayPause)
        state.canGoNext = commands.contains(.nextTrack)
        state.canGoPrevious = commands.contains(.previousTrack)
        state.canSeek = commands.contains(.changePlaybackPosition) || commands.contains(.skipForward)
        state.canControl = true
        if commands.contains(.changePlaybackRate) {
            state.minimumRate = 0.5
            state.maximumRate = 2
        }
        return state
    }

    /// An overlay as `lyre:overlays` lists it: "SENDER duck DB dB", "SENDER mix" or "SENDER pause".
    static func describe(_ overlay: ReceiverOverlay) -> String {
        let depth = overlay.duckDB.map { " \($0) dB" } ?? ""
        return "\(overlay.sender) \(overlay.how.rawValue)" + (overlay.how == .duck ? depth : "")
    }

    /// The Lyre command an MPRIS call stands for; nil when there is nothing to do (a `SetPosition` for
    /// another track, which the MPRIS spec says to ignore).
    func event(for command: MPRISCommand, at now: UInt64 = HostClock.now()) -> RemoteCommandEvent? {
        switch command {
        case .play: return RemoteCommandEvent(.play)
        case .pause: return RemoteCommandEvent(.pause)
        case .playPause: return RemoteCommandEvent(.togglePlayPause)
        case .stop: return RemoteCommandEvent(.stop)
        case .next: return RemoteCommandEvent(.nextTrack)
        case .previous: return RemoteCommandEvent(.previousTrack)
        case .seek(let offset):
            let seconds = Double(offset) / 1e6
            if let snapshot, snapshot.enabled.commands.contains(.changePlaybackPosition), let position = snapshot.position(at: now) {
                return RemoteCommandEvent(.changePlaybackPosition, position: max(0, position + seconds))
            }
            // A sender that offers only skips gets a skip of the asked length.
            return RemoteCommandEvent(seconds >= 0 ? .skipForward : .skipBackward, interval: max(0.001, abs(seconds)))
        case .setPosition(let track, let position):
            guard track == trackID, position >= 0 else { return nil }
            return RemoteCommandEvent(.changePlaybackPosition, position: Double(position) / 1e6)
        case .setRate(let rate):
            return RemoteCommandEvent(.changePlaybackRate, rate: rate)
        case .setVolume(let volume):
            // The inverse of `state`'s mapping.
            return RemoteCommandEvent(.changeVolume, volume: volume <= 0 ? ReceiverTXT.mutedVolume : volume * 30 - 30)
        }
    }

    /// The D-Bus error name a refused command is answered with (now-playing.md §6).
    static func errorName(_ kind: RemoteCommandOutcome.Kind) -> String {
        let name: String =
            switch kind {
            case .success: "Success"
            case .noSuchContent: "NoSuchContent"
            case .commandFailed: "CommandFailed"
            case .disabled: "CommandDisabled"
            case .noSession: "NoSession"
            case .timeout: "Timeout"
            case .invalid: "InvalidArgs"
            }
        return "org.mpris.MediaPlayer2.Lyre.\(name)"
    }
}
