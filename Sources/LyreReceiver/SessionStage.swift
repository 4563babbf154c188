/// Which session plays on the receiver and which play over it (streaming.md §7): the main session, the
/// overlays that mix or duck over it (at most `maximumOverlays`), and those of them that paused it (spoken
/// audio). A plain value over its members, compared by identity; each change returns what its owner must do
/// (tell a sender it was taken over, pause or play on a session), so the rule is tested without a connection.
struct SessionStage<Member: AnyObject> {
    static var maximumOverlays: Int { 4 }

    private(set) var active: Member?
    /// Oldest first.
    private(set) var overlays: [Member] = []
    /// The overlays that paused the active session: it plays on when the last of them ends.
    private(set) var interrupting: [Member] = []

    /// Where a new session that asked to mix or duck (or not) would go.
    enum Placement {
        /// It plays as the main session: it asked for neither, or nothing else plays.
        case main
        /// Over `playing`, which goes on.
        case over(Member)
        /// Refused (453): `others` sessions play over `playing` already.
        case full(playing: Member, others: Int)
    }

    func placement(of member: Member, mixing: Bool) -> Placement {
        guard mixing, let playing = active, playing !== member else { return .main }
        let others = overlays.filter { $0 !== member }.count
        return others < Self.maximumOverlays ? .over(playing) : .full(playing: playing, others: others)
    }

    /// What became of the session that played when another took the main place.
    enum Claim {
        /// Nothing else played, or `member` played already.
        case alone
        /// It is ended: the new one took over.
        case tookOver(Member)
        /// It asked to mix or duck and goes on over the new one, as its first overlay.
        case playsOver(Member)
    }

    /// `member` becomes the main session. The one it replaces goes on over it if `goesOn` says it asked to
    /// mix or duck (asked only when there is room and no interruption had paused it: nothing would tell a
    /// paused session to play), else is taken over. The interruptions end with the session they paused.
    mutating func claim(_ member: Member, goesOn: (Member) -> Bool) -> Claim {
        overlays.removeAll { $0 === member }
        defer { active = member }
        guard let previous = active, previous !== member else { return .alone }
        let paused = !interrupting.isEmpty
        interrupting.removeAll()
        if !paused, overlays.count < Self.maximumOverlays, goesOn(previous) {
            overlays.insert(previous, at: 0)
            return .playsOver(previous)
        }
        return .tookOver(previous)
    }

    /// `member` plays over the active session. `pauses`: it interrupts spoken audio, and the active session is
    /// spoken audio. Returns whether the active session must be told to pause now (the first interruption).
    mutating func addOverlay(_ member: Member, pauses: Bool) -> Bool {
        if !overlays.contains(where: { $0 === member }) { overlays.append(member) }
        guard pauses else { return false }
        let first = interrupting.isEmpty
        if !interrupting.contains(where: { $0 === member }) { interrupting.append(member) }
        return first
    }

    /// Whether `member` paused the active session.
    func interrupts(_ member: Member) -> Bool { interrupting.contains { $0 === member } }

    /// What a session's end changed.
    struct Release {
        /// It was an overlay: the list shown changed.
        var wasOverlay = false
        /// It was the main session: nothing plays as one now.
        var wasActive = false
        /// The last interruption ended: this session is told to play on.
        var playsOn: Member?
    }

    mutating func release(_ member: Member) -> Release {
        var release = Release()
        release.wasOverlay = overlays.contains { $0 === member }
        overlays.removeAll { $0 === member }
        if let index = interrupting.firstIndex(where: { $0 === member }) {
            interrupting.remove(at: index)
            if interrupting.isEmpty { release.playsOn = active }
        }
        if active === member {
            // What paused it pauses nothing now.
            interrupting.removeAll()
            active = nil
            release.wasActive = true
        }
        return release
    }
}
