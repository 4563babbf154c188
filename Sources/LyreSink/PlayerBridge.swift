import LyreMPRIS
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// How `lyre sink` speaks for the app that plays into a Lyre output, without the bus or the network (sans I/O):
/// which MPRIS player is that app's, what the receiver is told of it (now-playing.md §7), which of the receiver's
/// controls it can do, and the MPRIS call each becomes.
public enum PlayerBridge {
    /// The app's player: the one whose bus name is owned by the stream's process or one of its parents
    /// (`processIDs`, the stream's own first: a browser plays from a child process); when none is, the one
    /// whose name or `Identity` is the stream's `application.name`. Lyre's own receiver players are never
    /// an app's.
    public static func player(processIDs: [UInt32], application: String?, among players: [WatchedPlayer]) -> WatchedPlayer? {
        let candidates = players.filter { !$0.shortName.hasPrefix("lyred") }.sorted { $0.busName < $1.busName }
        for pid in processIDs {
            if let player = candidates.first(where: { $0.processID == pid }) { return player }
        }
        guard let application = application?.lowercased(), !application.isEmpty else { return nil }
        return candidates.first { player in
            player.shortName.lowercased() == application || player.identity?.lowercased() == application
                || player.identity?.lowercased().hasPrefix(application + " ") == true
        }
    }

    /// What the receiver shows: the player's track, and its position with the rate it moves at (0 unless
    /// playing), true at `now` on this machine's CLOCK_MONOTONIC, the sender clock. Texts longer than the wire
    /// allows are cut at a character boundary; numbers out of range are left out.
    public static func nowPlaying(_ player: WatchedPlayer, at now: UInt64) -> NowPlayingInfo {
        let state = player.state
        let metadata = state.metadata
        func capped(_ text: String?) -> String? {
            guard let text, !text.isEmpty else { return nil }
            return ReceiverTXT.truncated(text, bytes: NowPlayingInfo.maximumTextBytes)
        }
        func joined(_ texts: [String]) -> String? { capped(texts.isEmpty ? nil : texts.joined(separator: ", ")) }
        let length = metadata?.lengthMicroseconds.flatMap { $0 > 0 ? Double($0) / 1e6 : nil }
        let rate = state.playbackStatus == .playing && state.rate.isFinite ? min(max(state.rate, 0), 32) : 0
        return NowPlayingInfo(
            title: capped(metadata?.title), artist: joined(metadata?.artists ?? []), album: capped(metadata?.album),
            albumArtist: joined(metadata?.albumArtists ?? []), genre: joined(metadata?.genres ?? []),
            trackNumber: metadata?.trackNumber.flatMap { $0 >= 0 ? $0 : nil }, duration: length,
            elapsed: Double(state.position(at: now)) / 1e6, rate: rate, anchor: now)
    }

    /// The fields of the player's track that ``nowPlaying(_:at:)`` cuts to the wire's limit or leaves out as
    /// out of range, for a log line.
    public static func cappedFields(_ player: WatchedPlayer) -> [String] {
        guard let metadata = player.state.metadata else { return [] }
        let limit = NowPlayingInfo.maximumTextBytes
        var fields: [String] = []
        for (name, text) in [("title", metadata.title), ("album", metadata.album), ("artist", metadata.artists.joined(separator: ", ")),
                             ("albumArtist", metadata.albumArtists.joined(separator: ", ")), ("genre", metadata.genres.joined(separator: ", "))]
        where (text?.utf8.count ?? 0) > limit {
            fields.append(name)
        }
        if let number = metadata.trackNumber, number < 0 { fields.append("trackNumber") }
        if let length = metadata.lengthMicroseconds, length <= 0 { fields.append("length") }
        if !player.state.rate.isFinite || player.state.rate > 32 { fields.append("rate") }
        return fields
    }

    /// The receiver controls a player passes on, each enabled as the player's `Can…` properties say (a player's
    /// `Stop` has no property of its own: `CanControl`).
    public static let bridgedCommands: [RemoteCommand] = [
        .play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack, .skipForward, .skipBackward, .changePlaybackPosition,
    ]

    public static func enabled(_ state: MPRISState?) -> [RemoteCommand: Bool] {
        guard let state, state.canControl else { return Dictionary(uniqueKeysWithValues: bridgedCommands.map { ($0, false) }) }
        return [
            .play: state.canPlay, .pause: state.canPause, .togglePlayPause: state.canPlay || state.canPause, .stop: true,
            .nextTrack: state.canGoNext, .previousTrack: state.canGoPrevious, .skipForward: state.canSeek,
            .skipBackward: state.canSeek, .changePlaybackPosition: state.canSeek && state.metadata != nil,
        ]
    }

    /// The answer to a receiver's command passed to a player (now-playing.md §7): `success` when the player's
    /// method returned; `commandFailed` when it answered an error, or nothing in time (`nil`).
    public static func status(of answer: MPRISCommandResult?) -> RemoteCommandStatus {
        answer == .success ? .success : .commandFailed
    }

    /// What a receiver's command becomes: the call to make on `player` (the one speaking for the output, if
    /// any), or at once the answer `noSuchContent`, with no player or for a command it cannot take.
    public static func relay(_ event: RemoteCommandEvent, to player: WatchedPlayer?) -> Relay {
        guard let player, let command = mprisCommand(for: event, state: player.state) else { return .answer(.noSuchContent) }
        return .call(command)
    }

    public enum Relay: Equatable {
        case call(MPRISCommand)
        case answer(RemoteCommandStatus)
    }

    /// The MPRIS call a receiver's command becomes; `nil` for one the player cannot take.
    public static func mprisCommand(for event: RemoteCommandEvent, state: MPRISState) -> MPRISCommand? {
        func microseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1e6).rounded()) }
        switch event.command {
        case .play: return .play
        case .pause: return .pause
        case .togglePlayPause: return .playPause
        case .stop: return .stop
        case .nextTrack: return .next
        case .previousTrack: return .previous
        case .skipForward: return event.interval.map { .seek(offsetMicroseconds: microseconds($0)) }
        case .skipBackward: return event.interval.map { .seek(offsetMicroseconds: -microseconds($0)) }
        case .changePlaybackPosition:
            guard let track = state.metadata?.trackID, let position = event.position else { return nil }
            return .setPosition(trackID: track, positionMicroseconds: microseconds(position))
        default: return nil
        }
    }

    /// Where a player's `mpris:artUrl` points.
    public enum ArtworkSource: Sendable, Equatable {
        case none
        /// A local file, read within Artwork's size limit.
        case file(path: String)
        /// Anything else (`http(s)`, `data:`…): not fetched.
        case elsewhere(scheme: String)
    }

    public static func artworkSource(_ url: String?) -> ArtworkSource {
        guard let url, !url.isEmpty else { return .none }
        guard url.hasPrefix("file://") else { return .elsewhere(scheme: String(url.prefix { $0 != ":" })) }
        var path = String(url.dropFirst("file://".count))
        // file://host/path: only this machine's.
        if !path.hasPrefix("/") {
            guard let slash = path.firstIndex(of: "/"), path[..<slash] == "localhost" else { return .elsewhere(scheme: "file") }
            path = String(path[slash...])
        }
        return .file(path: PathText.percentDecoded(path) ?? path)
    }
}
