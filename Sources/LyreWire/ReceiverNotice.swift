/// What a receiver asks of its sender on the session's own connection (streaming.md §7, now-playing.md §4): a
/// `SET_PARAMETER` that ends the session, or one that relays a remote command. The receiver writes it and
/// reads the answer here, the sender reads it and writes the answer here, so the two ends cannot drift.
public enum ReceiverNotice: Sendable, Equatable {
    /// `session-end`: the receiver ended the session and closes the connection.
    case sessionEnd(SessionEnd)
    /// `remote-command`, with the session it names.
    case command(RemoteCommandEvent)

    /// Why a receiver ended a session, as it tells the sender.
    public struct SessionEnd: Sendable, Equatable {
        public enum Reason: String, Sendable, CaseIterable { case takenOver = "taken-over", shutdown, timeout, unpaired }
        /// The reason as sent; a value this sender does not know is kept, and read as the receiver gone.
        public var reason: String
        /// `Lyre-Taken-Over-By`: the name of the sender that took over.
        public var takenOverBy: String?
        /// `Lyre-Stopped-At`: the RTP timestamp of the first sample the output did not play.
        public var stoppedAt: UInt32?

        public init(_ reason: Reason, takenOverBy: String? = nil, stoppedAt: UInt32? = nil) {
            self.init(sent: reason.rawValue, takenOverBy: takenOverBy, stoppedAt: stoppedAt)
        }

        /// The reason as it came, known or not.
        public init(sent reason: String, takenOverBy: String?, stoppedAt: UInt32?) {
            self.reason = reason
            self.takenOverBy = takenOverBy
            self.stoppedAt = stoppedAt
        }

        public var known: Reason? { Reason(rawValue: reason) }
    }

    /// The request's headers and body; a command names `session` (a session's end names none).
    public func request(session: String? = nil) -> (headers: [(String, String)], body: [UInt8]) {
        switch self {
        case .sessionEnd(let end):
            var headers = [("Content-Type", "text/parameters")]
            if let by = end.takenOverBy { headers.append(("Lyre-Taken-Over-By", by)) }
            if let at = end.stoppedAt { headers.append((FlushTerms.stoppedAtName, String(at))) }
            return (headers, Array("session-end: \(end.reason)\r\n".utf8))
        case .command(let event):
            let named = session.map { [(SessionHeader.name, $0)] } ?? []
            return (named + [("Content-Type", "text/parameters")], Array(event.parameters.serialized.utf8))
        }
    }

    /// A notice refused by the sender: the status and the `Lyre-Error` it answers.
    public struct Refusal: Error, Sendable, Equatable {
        public var status: Int
        public var reason: String

        public init(status: Int, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// The notice in a receiver's `SET_PARAMETER`, read by a sender whose session with it is `session`. Only
    /// the room's own receiver commands it: a command must name the room's session (454). A session's end is
    /// taken as it comes (the connection is the receiver's).
    public static func read(_ request: RTSPMessage, session: String?) -> Result<ReceiverNotice, Refusal> {
        let parameters = TextParameters(parsing: request.bodyText)
        if let reason = parameters["session-end"] {
            return .success(.sessionEnd(SessionEnd(sent: reason, takenOverBy: request.headers["Lyre-Taken-Over-By"],
                                                   stoppedAt: request.headers[FlushTerms.stoppedAtName].flatMap(UInt32.init))))
        }
        guard parameters["remote-command"] != nil else {
            return .failure(Refusal(status: 451, reason: "a sender takes session-end and remote-command"))
        }
        guard SessionHeader.id(request.headers[SessionHeader.name]) == session else {
            return .failure(Refusal(status: 454, reason: "not this session"))
        }
        do {
            return .success(.command(try RemoteCommandEvent(parsing: parameters)))
        } catch {
            return .failure(Refusal(status: 451, reason: error.description))
        }
    }

    /// The sender's answer to a command its handler answered with `status`.
    public static func answer(_ status: RemoteCommandStatus) -> (status: Int, headers: [(String, String)]) {
        (status.rtspStatus, [("Lyre-Command-Status", status.rawValue)])
    }

    /// What a sender's answer to a command says: its `Lyre-Command-Status`, else read from the RTSP status
    /// (a sender that sends no such header: 200, 404 and 403 as their statuses, anything else failed); and
    /// its `Lyre-Error`.
    public static func status(of response: RTSPMessage) -> (status: RemoteCommandStatus, detail: String?) {
        let code = response.status ?? 500
        let said = response.headers["Lyre-Command-Status"].flatMap(RemoteCommandStatus.init(rawValue:))
        let status = said ?? (code == 200 ? .success : code == 404 ? .noSuchContent : code == 403 ? .disabled : .commandFailed)
        return (status, response.headers["Lyre-Error"])
    }
}
