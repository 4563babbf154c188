/// The `now-playing` answer of a receiver's control socket and web API (now-playing.md §5, control-api.md §4):
/// what plays, with the position extrapolated to `at`. lyred writes it and `lyre remote now-playing` reads it,
/// so both ends use this one type. A field the sender did not give is left out.
public struct ControlNowPlaying: Codable, Sendable, Equatable {
    /// `playing`, `paused`, `stopped` or `idle` (no session).
    public var state: String
    public var sender: String?
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var trackCount: Int?
    public var duration: Double?
    public var position: Double?
    public var rate: Double?
    public var queueIndex: Int?
    public var queueCount: Int?
    public var artwork: String?
    public var artworkType: String?
    public var commands: [String]
    public var skipInterval: Double?
    public var updates: Int
    public var volume: Double
    /// The receiver's clock when `position` was true, ns.
    public var at: UInt64

    /// An answer with nothing playing (`idle`); the rest is set field by field.
    public init(state: String = "idle", volume: Double, at: UInt64) {
        self.state = state
        commands = []
        updates = 0
        self.volume = volume
        self.at = at
    }

    /// One line for a terminal: `▶ Title — Artist (Album)  1:02 / 3:45  from Sender`, or `nothing is playing`.
    public var summary: String {
        guard state != "idle" else { return "nothing is playing" }
        var line = "\(state == "playing" ? "▶" : state == "paused" ? "⏸" : "■") \(title ?? "untitled")"
        if let artist { line += " — \(artist)" }
        if let album { line += " (\(album))" }
        if let position {
            line += "  \(NowPlayingInfo.clockText(position))"
            if let duration { line += " / \(NowPlayingInfo.clockText(duration))" }
        }
        if let sender { line += "  from \(sender)" }
        return line
    }
}
