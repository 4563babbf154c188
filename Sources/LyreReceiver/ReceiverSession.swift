import LyreWire

/// A connection's session at the receiver, from ANNOUNCE to its end: its id (the Session header) and how far
/// it has come, and the rules of streaming.md §3 on which requests it takes when. Plain values: the connection
/// handler asks, and answers as told.
struct ReceiverSession: Equatable {
    enum Phase: Equatable { case announced, ready, recording }

    /// Requests that change a session, so only its own connection may make them.
    static let sessionMethods: Set<String> = ["SETUP", "RECORD", "FLUSH", "SET_PARAMETER", "TEARDOWN"]

    let id: String
    var phase: Phase

    /// Whether a request goes on, or how it is refused.
    enum Admission: Equatable {
        case admitted
        /// It names a session other than this connection's: 454.
        case otherSession
        /// It would change a session on a connection that has none, and names one: 454, counted.
        case notThisConnections
        /// It would change a session on a connection that has none, and names none: 455, counted.
        case noSession
        /// Not in this phase (SETUP once, after ANNOUNCE; RECORD and FLUSH after SETUP): 455.
        case notNow
    }

    /// The admission of `method`, whose Session header named `given` (its id, before any `;`), on a
    /// connection whose session is `session`. Only a session's own connection changes it; a connection
    /// without one changes nothing.
    static func admission(of method: String, naming given: String?, on session: ReceiverSession?) -> Admission {
        guard let session else {
            guard sessionMethods.contains(method) else { return .admitted }
            return given != nil ? .notThisConnections : .noSession
        }
        if let given, given != session.id { return .otherSession }
        switch (method, session.phase) {
        case ("SETUP", .ready), ("SETUP", .recording), ("RECORD", .announced), ("FLUSH", .announced): return .notNow
        default: return .admitted
        }
    }
}

extension ReceiverSession {
    /// The requests a receiver takes, by method; `Public` and `Allow` list them.
    enum Request: String, CaseIterable {
        case options = "OPTIONS", announce = "ANNOUNCE", setup = "SETUP", record = "RECORD", flush = "FLUSH"
        case setParameter = "SET_PARAMETER", getParameter = "GET_PARAMETER", teardown = "TEARDOWN", pair = "PAIR"
    }

    /// What `Public` and `Allow` say.
    static let methodList = Request.allCases.map(\.rawValue).joined(separator: ", ")

    /// A player's methods (RFC 2326 §10), which a receiver that only records does not take: 405, not 501.
    static let playerMethods: Set<String> = ["DESCRIBE", "PLAY", "PAUSE", "REDIRECT"]

    /// Where a request goes (streaming.md §2's errors, §3's flow).
    enum Route: Equatable {
        /// To the request's own rules.
        case take(Request)
        /// Refused here, with `methodList` under `listing` when it names a header.
        case refuse(SessionRefusal, listing: String?)
    }

    /// The route of `method`, whose Session header named `given`, on a connection whose session is `session`:
    /// first whether this connection's session lets it through (`admission`), then whether the receiver takes
    /// the method at all.
    static func route(_ method: String, naming given: String?, on session: ReceiverSession?) -> Route {
        switch admission(of: method, naming: given, on: session) {
        case .admitted: break
        case .otherSession: return .refuse(SessionRefusal(454), listing: nil)
        case .notNow: return .refuse(SessionRefusal(455), listing: nil)
        case .notThisConnections: return .refuse(SessionRefusal(454, "no such session on this connection", counted: true), listing: nil)
        case .noSession: return .refuse(SessionRefusal(455, "no session: ANNOUNCE first", counted: true), listing: nil)
        }
        if let request = Request(rawValue: method) { return .take(request) }
        if playerMethods.contains(method) { return .refuse(SessionRefusal(405), listing: "Allow") }
        return .refuse(SessionRefusal(501, counted: true), listing: "Public")
    }
}

extension ReceiverSession {
    /// How a session's media goes on the output once its SETUP's ports are bound.
    enum Output: Equatable {
        /// As the main session.
        case play
        /// Over the main session, which it ducks by `duckDB` (nil: mixed at full level), at its own `volume`.
        case mix(duckDB: Double?, volume: Double)
    }

    /// What a SETUP whose ports came back does: the SETUP was asked by the session `asked` (its id) for the media
    /// `media`; the connection's session and media are `session` and `current` now; `bound` is the bind's
    /// outcome (the ports). A sender may pipeline (streaming.md §1), so the session may have ended while they
    /// were bound (TEARDOWN, a takeover; a second ANNOUNCE keeps the id but releases the media): then its media
    /// must not take the output, which may play another session by now, and the SETUP is refused with 454. Else
    /// a bind that failed is 500, and a bound session is ready (streaming.md §3) and plays as its `mix` says.
    static func setupBound<Ports>(
        asked: String, media: ObjectIdentifier, on session: inout ReceiverSession?, current: ObjectIdentifier?,
        bound: Result<Ports, any Error>, mix: SessionMix
    ) -> Result<(Output, Ports), SessionRefusal> {
        guard current == media, session?.id == asked else {
            return .failure(SessionRefusal(454, "the session ended before its SETUP was answered"))
        }
        guard case .success(let ports) = bound else { return .failure(SessionRefusal(500)) }
        session?.phase = .ready
        guard mix.overlay != nil else { return .success((.play, ports)) }
        return .success((.mix(duckDB: mix.overlayDuckDB, volume: mix.overlayVolume), ports))
    }
}

extension ReceiverSession {
    /// What becomes of an ANNOUNCE.
    enum Entry<Member: AnyObject> {
        /// Its session plays under `terms`: over `over`, which goes on, or as the main session when nil.
        case plays(AnnounceTerms, over: Member?)
        /// Refused; `notice` is what the receiver's log says at notice level (a sender turned away that its
        /// owner may want to know of), nil when the refusal's own `detail` says enough.
        case refused(SessionRefusal, notice: String?)
    }

    /// The output is gone (its device unplugged, or taken by another program): a refusal of the moment
    /// (streaming.md §8).
    static let outputUnavailable = SessionRefusal(503, retryAfter: 5)

    /// The entry of an ANNOUNCE whose terms are `terms`, asked in this order (pairing.md §6; streaming.md §2,
    /// §7, §8): whether the receiver admits its sender at all (`access`, the 403 of `--access paired`), so that
    /// a sender it does not admit learns nothing more; whether its terms are read; where it would play
    /// (`place`: as the main session, over the one that plays, or 453 when that one has its most overlays);
    /// and whether the output is there to play it (503 with `Retry-After`). `name` is a session's sender as
    /// the reason names it.
    static func entry<Member: AnyObject>(
        access: SessionRefusal?, terms: Result<AnnounceTerms, SessionRefusal>,
        place: (AnnounceTerms) -> SessionStage<Member>.Placement, name: (Member) -> String, outputAvailable: Bool
    ) -> Entry<Member> {
        if let access { return .refused(access, notice: "not paired (\(access.detail ?? ""))") }
        let read: AnnounceTerms
        switch terms {
        case .success(let terms): read = terms
        case .failure(let refusal): return .refused(refusal, notice: nil)
        }
        var over: Member?
        switch place(read) {
        case .main: break
        case .over(let playing): over = playing
        case .full(let playing, let others):
            let playing = Printable.quoted(name(playing))
            return .refused(
                SessionRefusal(453, "it plays \(others) sessions over \(playing) already, the most it mixes; try again when one ends"),
                notice: "\(others) sessions play over \(playing) already")
        }
        guard outputAvailable else { return .refused(outputUnavailable, notice: nil) }
        return .plays(read, over: over)
    }
}
