import LyreWire

/// How a session meets the receiver's others (streaming.md §7), from its ANNOUNCE to its end: what it asked
/// (to mix in or duck over a session that plays; spoken audio), whether it plays over another now, and its own
/// volume while it does. A plain value: the connection handler applies it to the output, and `SessionStage`
/// decides where the session goes.
struct SessionMix: Equatable {
    /// What its ANNOUNCE asked (`Lyre-Mix`); nil for a plain session.
    private(set) var asked: MixRequest?
    /// How deep it ducks (dB) when it asked to duck; nil otherwise.
    private(set) var duckDepth: Double?
    /// Its sender plays spoken audio (`Lyre-Mode: spokenAudio`): an overlay that interrupts pauses it.
    private(set) var isSpokenAudio = false
    /// How it plays over another session; nil while it plays as the main one (or has no session).
    private(set) var overlay: MixRequest?
    /// Its own volume while it plays over another (dB, RAOP scale), applied to its samples only.
    private(set) var overlayVolume = 0.0

    /// A connection with no session.
    static let none = SessionMix()

    /// How far it lowers the main session (dB), while it ducks over it; nil while it only mixes, or plays as
    /// the main session.
    var overlayDuckDB: Double? { overlay == .duck ? duckDepth : nil }

    /// The session's ANNOUNCE asked `terms`, and it plays over a session that plays (`over`), or as the main
    /// one. A second ANNOUNCE on the connection starts over with its own terms; an overlay's volume stays, as
    /// the receiver's volume stays for a main session.
    mutating func announce(_ terms: AnnounceTerms, over: Bool) {
        asked = terms.mix
        duckDepth = terms.mix == .duck ? terms.duckDB : nil
        isSpokenAudio = terms.spokenAudio
        overlay = over ? terms.mix : nil
    }

    /// A plain session comes while this one, which asked to mix or duck, plays as the main session (there was
    /// nothing to play over when it came): it goes on over the new one, as if it had come after it, at its own
    /// volume (0 dB); it is not taken over. Returns how, or nil when it did not ask to mix or plays over another
    /// already.
    mutating func playOver() -> MixRequest? {
        guard let asked, overlay == nil else { return nil }
        overlay = asked
        overlayVolume = 0
        return asked
    }

    /// The sender set the session's volume to `db`. An overlay's volume is its own, and this returns true; a main
    /// session's is the receiver's, which stays the main session's: false, and the caller sets the receiver's.
    mutating func takesVolume(_ db: Double) -> Bool {
        guard overlay != nil else { return false }
        overlayVolume = db
        return true
    }
}
