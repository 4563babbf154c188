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
