#if canImport(Glibc)
import Glibc
#endif

/// The message bus an ``MPRISPlayer`` registers on (`DBUS_BUS_SESSION` / `DBUS_BUS_SYSTEM`).
///
/// Desktop media keys, shell widgets and `playerctl` look on the session bus; the system bus needs a D-Bus policy that
/// lets the daemon's user own `org.mpris.MediaPlayer2.*`.
public enum MPRISBus: String, Sendable, CaseIterable {
    /// The user's session bus (`DBUS_SESSION_BUS_ADDRESS`).
    case session
    /// The machine-wide system bus (`/run/dbus/system_bus_socket`).
    case system
}

/// The MPRIS `PlaybackStatus` property; the raw values are the strings MPRIS sends.
public enum MPRISPlaybackStatus: String, Sendable {
    /// A track is playing.
    case playing = "Playing"
    /// A track is paused.
    case paused = "Paused"
    /// Nothing is playing.
    case stopped = "Stopped"
}

/// The MPRIS `Metadata` of the current track (the `mpris:` and `xesam:` keys Lyre knows).
public struct MPRISMetadata: Sendable, Equatable {
    /// `mpris:trackid`: a D-Bus object path that names the track, e.g. `/org/lyre/track/3`. A string that is not a
    /// valid object path is sent as `/org/mpris/MediaPlayer2/TrackList/NoTrack`.
    public var trackID: String
    /// `xesam:title`.
    public var title: String?
    /// `xesam:artist` (a list of strings).
    public var artists: [String]
    /// `xesam:album`.
    public var album: String?
    /// `xesam:albumArtist` (a list of strings).
    public var albumArtists: [String]
    /// `xesam:genre` (a list of strings).
    public var genres: [String]
    /// `xesam:trackNumber` (a 32-bit integer on the bus).
    public var trackNumber: Int?
    /// `mpris:length` in microseconds (a 64-bit integer on the bus).
    public var lengthMicroseconds: Int64?
    /// `mpris:artUrl`, e.g. `file:///run/lyre/art.png`.
    public var artURL: String?
    /// Keys of the player's own, namespaced as the MPRIS spec asks (e.g. `lyre:overlays`), each a list of
    /// strings; sent after the standard ones in key order, and left out when empty.
    public var custom: [String: [String]] = [:]

    /// Metadata for the track `trackID`; every other field is optional.
    public init(
        trackID: String, title: String? = nil, artists: [String] = [], album: String? = nil,
        albumArtists: [String] = [], genres: [String] = [], trackNumber: Int? = nil,
        lengthMicroseconds: Int64? = nil, artURL: String? = nil
    ) {
        self.trackID = trackID
        self.title = title
        self.artists = artists
        self.album = album
        self.albumArtists = albumArtists
        self.genres = genres
        self.trackNumber = trackNumber
        self.lengthMicroseconds = lengthMicroseconds
        self.artURL = artURL
    }
}

/// Everything the `org.mpris.MediaPlayer2.Player` interface shows: the receiver replaces it with
/// ``MPRISPlayer/update(_:)`` whenever something changes.
public struct MPRISState: Sendable, Equatable {
    /// The current track; `nil` shows an empty `Metadata` dictionary.
    public var metadata: MPRISMetadata?
    /// `PlaybackStatus`.
    public var playbackStatus: MPRISPlaybackStatus
    /// `Rate`: 1 is normal speed.
    public var rate: Double
    /// The position in microseconds at ``positionAnchor``.
    ///
    /// `Position` is extrapolated at the time of each read: `positionMicroseconds + rate * (now - positionAnchor) /
    /// 1000`, where `now` and `positionAnchor` are `CLOCK_MONOTONIC` nanoseconds (``MPRISState/monotonicNow``). It
    /// advances only while ``playbackStatus`` is `.playing`, and is clamped to `0...lengthMicroseconds` (when the
    /// length is known).
    public var positionMicroseconds: Int64
    /// The `CLOCK_MONOTONIC` time, in nanoseconds, at which ``positionMicroseconds`` was true.
    public var positionAnchor: UInt64
    /// `Volume`, 0...1. A client that sets it sends ``MPRISCommand/setVolume(_:)``.
    public var volume: Double
    /// `CanPlay`.
    public var canPlay: Bool
    /// `CanPause`.
    public var canPause: Bool
    /// `CanGoNext`.
    public var canGoNext: Bool
    /// `CanGoPrevious`.
    public var canGoPrevious: Bool
    /// `CanSeek`.
    public var canSeek: Bool
    /// `CanControl`.
    public var canControl: Bool
    /// `MinimumRate`: a `Rate` set from a client must lie in `minimumRate...maximumRate`.
    public var minimumRate: Double
    /// `MaximumRate`.
    public var maximumRate: Double

    /// Stopped, no track, rate 1 (minimum and maximum 1), volume 1, position 0; nothing allowed except
    /// `canControl`.
    public init() {
        metadata = nil
        playbackStatus = .stopped
        rate = 1
        positionMicroseconds = 0
        positionAnchor = 0
        volume = 1
        canPlay = false
        canPause = false
        canGoNext = false
        canGoPrevious = false
        canSeek = false
        canControl = true
        minimumRate = 1
        maximumRate = 1
    }

    /// The current `CLOCK_MONOTONIC` time in nanoseconds: the clock of ``positionAnchor``.
    public static var monotonicNow: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// `Position` in microseconds at the `CLOCK_MONOTONIC` time `now` (nanoseconds), extrapolated from
    /// ``positionMicroseconds`` at ``positionAnchor`` as described there.
    public func position(at now: UInt64) -> Int64 {
        var position = Double(positionMicroseconds)
        if playbackStatus == .playing, rate.isFinite {
            let elapsed = now >= positionAnchor ? Double(now - positionAnchor) : -Double(positionAnchor - now)
            position += rate * elapsed / 1000
        }
        if let length = metadata?.lengthMicroseconds, length >= 0 { position = min(position, Double(length)) }
        guard position.isFinite, position > 0 else { return 0 }
        return position >= 9.2e18 ? Int64.max : Int64(position)
    }
}

/// A request from a D-Bus client, passed to the ``MPRISPlayer`` handler.
public enum MPRISCommand: Sendable, Equatable {
    /// `Player.Play`.
    case play
    /// `Player.Pause`.
    case pause
    /// `Player.PlayPause`.
    case playPause
    /// `Player.Stop`.
    case stop
    /// `Player.Next`.
    case next
    /// `Player.Previous`.
    case previous
    /// `Player.Seek(x Offset)`: move by this many microseconds (negative is backwards).
    case seek(offsetMicroseconds: Int64)
    /// `Player.SetPosition(o TrackId, x Position)`. Only sent when `trackID` is the current track's and the position
    /// lies within `0...length`; other calls are ignored as the MPRIS specification asks.
    case setPosition(trackID: String, positionMicroseconds: Int64)
    /// `org.freedesktop.DBus.Properties.Set` of `Rate`, within `minimumRate...maximumRate`. A client setting rate 0
    /// sends ``pause`` instead, as the specification asks.
    case setRate(Double)
    /// `org.freedesktop.DBus.Properties.Set` of `Volume`, clamped to 0...1 (the specification: below 0 is 0).
    case setVolume(Double)
}

/// What the handler answers for one ``MPRISCommand``.
public enum MPRISCommandResult: Sendable, Equatable {
    /// An empty method return.
    case success
    /// A D-Bus error reply with this name (e.g. `org.mpris.MediaPlayer2.Lyre.CommandDisabled`) and message. A name
    /// that is not a valid D-Bus error name is replaced with `org.freedesktop.DBus.Error.Failed`.
    case failed(errorName: String, message: String)
}

/// Why an ``MPRISPlayer`` could not start: one line, with libdbus's own message where there is one.
public struct MPRISError: Error, CustomStringConvertible, Sendable {
    /// The whole message, e.g. `cannot connect to the D-Bus session bus: …; is DBUS_SESSION_BUS_ADDRESS set?`.
    public let description: String

    init(_ description: String) { self.description = description }
}
