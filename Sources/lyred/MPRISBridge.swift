import Dispatch
import Logging
import LyreAudio
import LyreClock
import LyreMPRIS
import LyreReceiver
import LyreWire
import NIOConcurrencyHelpers

/// Shows the receiver's now-playing state on D-Bus as an MPRIS player, and relays what MPRIS clients
/// (playerctl, desktop media keys, KDE Connect, Home Assistant) ask to the sender (now-playing.md §6).
final class MPRISBridge: Sendable {
    /// The player on the bus, put back when the bus restarts; its value is nil while the bus is away.
    private let presence = NIOLockedValueBox<BusReconnector<MPRISPlayer>?>(nil)
    private var player: MPRISPlayer? { presence.withLockedValue { $0 }?.value }
    private let last = NIOLockedValueBox<(snapshot: NowPlayingSnapshot?, volume: Double, trackID: String, session: Int)>((nil, 0, "/org/lyre/NoTrack", 0))
    private let bus: MPRISBus
    private let identity: NIOLockedValueBox<String>
    private let handler: @Sendable (MPRISCommand, _ reply: @escaping @Sendable (MPRISCommandResult) -> Void) -> Void
    private let logger: Logger

    /// The bus name of the player now (its `.instancePID` form when another owned the name).
    var busName: String { player?.busName ?? "org.mpris.MediaPlayer2.lyred" }

    init(bus: MPRISBus, identity: String, receiver: Receiver, logger: Logger) throws(MPRISError) {
        let box = NIOLockedValueBox<MPRISBridge?>(nil)
        self.bus = bus
        self.identity = NIOLockedValueBox(identity)
        self.logger = logger
        handler = { command, reply in
            guard let bridge = box.withLockedValue({ $0 }), let event = bridge.event(for: command) else {
                reply(.success)  // SetPosition for another track: ignored, as the MPRIS spec says
                return
            }
            Task {
                let outcome = await receiver.send(event)
                if outcome.succeeded {
                    reply(.success)
                } else {
                    logger.notice("MPRIS \(event.command.rawValue) refused: \(outcome.message)")
                    reply(.failed(errorName: Self.errorName(outcome.kind), message: outcome.message))
                }
            }
        }
        box.withLockedValue { $0 = self }
        let (bus, logger, last, identity, handler) = (bus, logger, last, self.identity, handler)
        let made = try BusReconnector<MPRISPlayer>(
            label: "lyred-mpris",
            // A player on the bus, showing the last state.
            make: { lost throws(MPRISError) in
                let made = try MPRISPlayer(bus: bus, identity: identity.withLockedValue { $0 }, handler: handler, onLost: lost)
                let current = last.withLockedValue { $0 }
                made.update(Self.state(current.snapshot, volume: current.volume, trackID: current.trackID))
                return made
            },
            close: { $0.close() },
            onLost: { logger.warning("MPRIS: the \(bus.rawValue) bus went away; trying again every second") },
            onBack: { player in logger.notice("MPRIS back on the \(bus.rawValue) bus as \(player.busName)") })
        presence.withLockedValue { $0 = made }
    }

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

    /// The Lyre command an MPRIS call stands for; nil when there is nothing to do.
    private func event(for command: MPRISCommand) -> RemoteCommandEvent? {
        let (snapshot, trackID) = last.withLockedValue { ($0.snapshot, $0.trackID) }
        switch command {
        case .play: return RemoteCommandEvent(.play)
        case .pause: return RemoteCommandEvent(.pause)
        case .playPause: return RemoteCommandEvent(.togglePlayPause)
        case .stop: return RemoteCommandEvent(.stop)
        case .next: return RemoteCommandEvent(.nextTrack)
        case .previous: return RemoteCommandEvent(.previousTrack)
        case .seek(let offset):
            let seconds = Double(offset) / 1e6
            if let snapshot, snapshot.enabled.commands.contains(.changePlaybackPosition), let position = snapshot.position() {
                return RemoteCommandEvent(.changePlaybackPosition, position: max(0, position + seconds))
            }
            return RemoteCommandEvent(seconds >= 0 ? .skipForward : .skipBackward, interval: max(0.001, abs(seconds)))
        case .setPosition(let track, let position):
            guard track == trackID, position >= 0 else { return nil }
            return RemoteCommandEvent(.changePlaybackPosition, position: Double(position) / 1e6)
        case .setRate(let rate):
            return RemoteCommandEvent(.changePlaybackRate, rate: rate)
        case .setVolume(let volume):
            // The inverse of `state`'s mapping: 0…1 is −30…0 dB, and 0 is mute.
            return RemoteCommandEvent(.changeVolume, volume: volume <= 0 ? ReceiverTXT.mutedVolume : volume * 30 - 30)
        }
    }

    /// A new snapshot (nil: the session ended).
    func show(_ snapshot: NowPlayingSnapshot?) {
        let previous = last.withLockedValue { $0 }
        var session = previous.session
        if previous.snapshot == nil, snapshot != nil { session += 1 }
        let trackID = snapshot?.info.map { "/org/lyre/session\(session)/track\($0.queueIndex ?? 0)" } ?? "/org/lyre/NoTrack"
        last.withLockedValue { $0 = (snapshot, previous.volume, trackID, session) }
        let player = player
        player?.update(Self.state(snapshot, volume: previous.volume, trackID: trackID))
        // A position that does not follow from the last one is a seek (MPRIS Seeked).
        if let snapshot, let old = previous.snapshot, trackID == previous.trackID,
            let now = snapshot.position(), let expected = old.position(), abs(now - expected) > 0.5
        {
            player?.seeked(positionMicroseconds: Int64(now * 1e6))
        }
    }

    func volumeChanged(_ db: Double) {
        let current = last.withLockedValue { s in
            s.volume = db
            return s
        }
        player?.update(Self.state(current.snapshot, volume: db, trackID: current.trackID))
    }

    /// The `Identity` of the receiver named `name`.
    static func identity(_ name: String) -> String { "Lyre receiver \(name)" }

    /// The receiver was renamed (control-api.md §3.1): MPRIS clients see the new name.
    func rename(to name: String) {
        identity.withLockedValue { $0 = Self.identity(name) }
        player?.rename(identity: Self.identity(name))
    }

    func close() {
        presence.withLockedValue { $0 }?.shutdown()
    }

    private static func state(_ snapshot: NowPlayingSnapshot?, volume: Double, trackID: String) -> MPRISState {
        var state = MPRISState()
        state.volume = volume <= -144 ? 0 : max(0, min(1, (volume + 30) / 30))
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
        state.metadata = metadata
        state.playbackStatus = snapshot.state == .playing ? .playing : .paused
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
}
