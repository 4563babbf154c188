/// The names MPRIS uses on the bus.
enum MPRISName {
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let busNamePrefix = "org.mpris.MediaPlayer2."
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = "org.freedesktop.DBus.Peer"
    /// The `mpris:trackid` for "no track" (MPRIS 2.2).
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
}

/// The properties of `org.mpris.MediaPlayer2` and `org.mpris.MediaPlayer2.Player`, built from an ``MPRISState``.
enum MPRISProperties {
    /// `org.mpris.MediaPlayer2`: fixed but for the identity. `DesktopEntry` is left out (lyred installs no `.desktop`
    /// file), and so are `Fullscreen` and `CanSetFullscreen`, as the specification allows.
    static func root(identity: String) -> [DBusDictEntry] {
        [
            DBusDictEntry("CanQuit", .boolean(false)),
            DBusDictEntry("CanRaise", .boolean(false)),
            DBusDictEntry("HasTrackList", .boolean(false)),
            DBusDictEntry("Identity", .string(identity)),
            DBusDictEntry("SupportedUriSchemes", .stringArray([])),
            DBusDictEntry("SupportedMimeTypes", .stringArray([])),
        ]
    }

    /// `org.mpris.MediaPlayer2.Player`, with `Position` extrapolated to `now` when it is given. Without it, these are
    /// the properties `PropertiesChanged` announces (`Position` never is).
    static func player(_ state: MPRISState, positionAt now: UInt64? = nil) -> [DBusDictEntry] {
        var properties = [
            DBusDictEntry("PlaybackStatus", .string(state.playbackStatus.rawValue)),
            DBusDictEntry("LoopStatus", .string("None")),
            DBusDictEntry("Rate", .double(finite(state.rate, otherwise: 1))),
            DBusDictEntry("Shuffle", .boolean(false)),
            DBusDictEntry("Metadata", metadata(state.metadata)),
            DBusDictEntry("Volume", .double(min(max(finite(state.volume, otherwise: 0), 0), 1))),
            DBusDictEntry("MinimumRate", .double(finite(state.minimumRate, otherwise: 1))),
            DBusDictEntry("MaximumRate", .double(finite(state.maximumRate, otherwise: 1))),
            DBusDictEntry("CanGoNext", .boolean(state.canGoNext)),
            DBusDictEntry("CanGoPrevious", .boolean(state.canGoPrevious)),
            DBusDictEntry("CanPlay", .boolean(state.canPlay)),
            DBusDictEntry("CanPause", .boolean(state.canPause)),
            DBusDictEntry("CanSeek", .boolean(state.canSeek)),
            DBusDictEntry("CanControl", .boolean(state.canControl)),
        ]
        if let now { properties.insert(DBusDictEntry("Position", .int64(state.position(at: now))), at: 6) }
        return properties
    }

    /// The player properties a client may set: `Rate` and `Volume`. The others answer `PropertyReadOnly`.
    static let writablePlayerProperties: Set<String> = ["Rate", "Volume"]

    /// The `Metadata` dictionary: empty without a track; absent optional fields are left out.
    static func metadata(_ metadata: MPRISMetadata?) -> DBusValue {
        guard let metadata else { return .dictionary([]) }
        var entries = [DBusDictEntry("mpris:trackid", .objectPath(trackID(metadata)))]
        if let length = metadata.lengthMicroseconds { entries.append(DBusDictEntry("mpris:length", .int64(length))) }
        if let art = metadata.artURL { entries.append(DBusDictEntry("mpris:artUrl", .string(art))) }
        if let title = metadata.title { entries.append(DBusDictEntry("xesam:title", .string(title))) }
        if !metadata.artists.isEmpty { entries.append(DBusDictEntry("xesam:artist", .stringArray(metadata.artists))) }
        if let album = metadata.album { entries.append(DBusDictEntry("xesam:album", .string(album))) }
        if !metadata.albumArtists.isEmpty {
            entries.append(DBusDictEntry("xesam:albumArtist", .stringArray(metadata.albumArtists)))
        }
        if !metadata.genres.isEmpty { entries.append(DBusDictEntry("xesam:genre", .stringArray(metadata.genres))) }
        if let number = metadata.trackNumber {
            entries.append(DBusDictEntry("xesam:trackNumber", .int32(Int32(clamping: number))))
        }
        for (key, texts) in metadata.custom.sorted(by: { $0.key < $1.key }) where !texts.isEmpty {
            entries.append(DBusDictEntry(key, .stringArray(texts)))
        }
        return .dictionary(entries)
    }

    /// The track ID as sent: `metadata.trackID` when it is a valid object path, else the "no track" path.
    static func trackID(_ metadata: MPRISMetadata) -> String {
        DBusValidation.isObjectPath(metadata.trackID) ? metadata.trackID : MPRISName.noTrack
    }

    /// The entries of `new` whose value differs from (or is missing in) `old`, in `new`'s order.
    static func changes(from old: [DBusDictEntry], to new: [DBusDictEntry]) -> [DBusDictEntry] {
        new.filter { entry in !old.contains(entry) }
    }

    // MARK: another player's properties, read back

    /// The inverse of ``player(_:positionAt:)``, for a player Lyre watches: `entries` (a `GetAll` answer or a
    /// `PropertiesChanged`) applied to `state`. Unknown keys and values of the wrong type are ignored, as players
    /// differ (a number may come as any integer type or a double, an artist as one string). `Position`, when
    /// present, is true at `now` (`CLOCK_MONOTONIC` ns).
    static func apply(_ entries: [DBusDictEntry], to state: inout MPRISState, now: UInt64) {
        for entry in entries {
            let value = entry.value
            switch entry.key {
            case "PlaybackStatus":
                if case .string(let text) = value, let status = MPRISPlaybackStatus(rawValue: text) {
                    // The position stays where it was at the change, then moves (or not) from there.
                    state.positionMicroseconds = state.position(at: now)
                    state.positionAnchor = now
                    state.playbackStatus = status
                }
            case "Rate": if let rate = number(value), rate.isFinite, rate >= 0 { state.rate = rate }
            case "Position":
                if let position = integer(value) {
                    state.positionMicroseconds = position
                    state.positionAnchor = now
                }
            case "Metadata": if case .dictionary(let fields) = value { state.metadata = metadata(from: fields) }
            case "Volume": if let volume = number(value), volume.isFinite { state.volume = volume }
            case "MinimumRate": if let rate = number(value), rate.isFinite { state.minimumRate = rate }
            case "MaximumRate": if let rate = number(value), rate.isFinite { state.maximumRate = rate }
            case "CanGoNext": if case .boolean(let flag) = value { state.canGoNext = flag }
            case "CanGoPrevious": if case .boolean(let flag) = value { state.canGoPrevious = flag }
            case "CanPlay": if case .boolean(let flag) = value { state.canPlay = flag }
            case "CanPause": if case .boolean(let flag) = value { state.canPause = flag }
            case "CanSeek": if case .boolean(let flag) = value { state.canSeek = flag }
            case "CanControl": if case .boolean(let flag) = value { state.canControl = flag }
            default: break
            }
        }
    }

    /// A `Metadata` dictionary as ``MPRISMetadata``; `nil` for an empty one (no track).
    static func metadata(from fields: [DBusDictEntry]) -> MPRISMetadata? {
        guard !fields.isEmpty else { return nil }
        func field(_ key: String) -> DBusValue? { fields.first { $0.key == key }?.value }
        func text(_ key: String) -> String? {
            switch field(key) {
            case .string(let text)?, .objectPath(let text)?: text
            case .stringArray(let texts)?: texts.first
            default: nil
            }
        }
        func texts(_ key: String) -> [String] {
            switch field(key) {
            case .stringArray(let texts)?: texts
            case .string(let text)?: [text]
            default: []
            }
        }
        return MPRISMetadata(
            trackID: text("mpris:trackid") ?? noTrackID, title: text("xesam:title"), artists: texts("xesam:artist"),
            album: text("xesam:album"), albumArtists: texts("xesam:albumArtist"), genres: texts("xesam:genre"),
            trackNumber: field("xesam:trackNumber").flatMap(integer).map { Int(clamping: $0) },
            lengthMicroseconds: field("mpris:length").flatMap(integer), artURL: text("mpris:artUrl"))
    }

    static let noTrackID = MPRISName.noTrack

    private static func integer(_ value: DBusValue) -> Int64? {
        switch value {
        case .int32(let n): Int64(n)
        case .int64(let n): n
        case .double(let d) where d.isFinite && abs(d) < 9e18: Int64(d)
        case .variant(let inner): integer(inner)
        default: nil
        }
    }

    private static func number(_ value: DBusValue) -> Double? {
        switch value {
        case .double(let d): d
        case .int32(let n): Double(n)
        case .int64(let n): Double(n)
        case .variant(let inner): number(inner)
        default: nil
        }
    }

    private static func finite(_ value: Double, otherwise fallback: Double) -> Double {
        value.isFinite ? value : fallback
    }
}

/// The introspection data of `/org/mpris/MediaPlayer2` (`org.freedesktop.DBus.Introspectable.Introspect`).
enum MPRISIntrospection {
    static let xml = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg name="xml_data" type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg name="machine_uuid" type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="properties" type="a{sv}" direction="out"/>
            </method>
            <method name="Set">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg name="interface_name" type="s"/>
              <arg name="changed_properties" type="a{sv}"/>
              <arg name="invalidated_properties" type="as"/>
            </signal>
          </interface>
          <interface name="org.mpris.MediaPlayer2">
            <method name="Raise"/>
            <method name="Quit"/>
            <property name="CanQuit" type="b" access="read"/>
            <property name="CanRaise" type="b" access="read"/>
            <property name="HasTrackList" type="b" access="read"/>
            <property name="Identity" type="s" access="read"/>
            <property name="SupportedUriSchemes" type="as" access="read"/>
            <property name="SupportedMimeTypes" type="as" access="read"/>
          </interface>
          <interface name="org.mpris.MediaPlayer2.Player">
            <method name="Next"/>
            <method name="Previous"/>
            <method name="Pause"/>
            <method name="PlayPause"/>
            <method name="Stop"/>
            <method name="Play"/>
            <method name="Seek">
              <arg name="Offset" type="x" direction="in"/>
            </method>
            <method name="SetPosition">
              <arg name="TrackId" type="o" direction="in"/>
              <arg name="Position" type="x" direction="in"/>
            </method>
            <method name="OpenUri">
              <arg name="Uri" type="s" direction="in"/>
            </method>
            <signal name="Seeked">
              <arg name="Position" type="x"/>
            </signal>
            <property name="PlaybackStatus" type="s" access="read"/>
            <property name="LoopStatus" type="s" access="read"/>
            <property name="Rate" type="d" access="readwrite"/>
            <property name="Shuffle" type="b" access="read"/>
            <property name="Metadata" type="a{sv}" access="read"/>
            <property name="Volume" type="d" access="readwrite"/>
            <property name="Position" type="x" access="read">
              <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
            </property>
            <property name="MinimumRate" type="d" access="read"/>
            <property name="MaximumRate" type="d" access="read"/>
            <property name="CanGoNext" type="b" access="read"/>
            <property name="CanGoPrevious" type="b" access="read"/>
            <property name="CanPlay" type="b" access="read"/>
            <property name="CanPause" type="b" access="read"/>
            <property name="CanSeek" type="b" access="read"/>
            <property name="CanControl" type="b" access="read"/>
          </interface>
        </node>

        """
}
