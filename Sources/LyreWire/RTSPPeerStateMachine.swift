/// One end of a Lyre RTSP connection, sans I/O (streaming.md §1). Requests flow both ways: the sender asks
/// the receiver to set up and play; the receiver asks the sender to run a remote command or tells it that
/// the session ended. This machine numbers this end's requests (`CSeq`), matches each response to its
/// request, times requests out on the clock it is given, hands the peer's requests up to be answered exactly
/// once, and bounds how many the peer may have unanswered. It returns actions; whoever drives it (the NIO
/// `RTSPPeerHandler`, at both ends) does the I/O.
///
/// `Token` is the driver's handle for one of its requests (a promise's key).
public struct RTSPPeerStateMachine<Token: Hashable & Sendable>: Sendable {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No response within the request's timeout.
        case timeout(method: String, seconds: Double)
        /// The connection closed before the response came.
        case closed
        /// The response's body was over the size limit (it was skipped).
        case oversizedResponse(length: Int)

        public var description: String {
            switch self {
            case .timeout(let method, let seconds): "no answer to \(method) within \(Self.seconds(seconds)) s"
            case .closed: "the peer closed the connection"
            case .oversizedResponse(let length): "the answer's body of \(length) bytes is over the limit"
            }
        }

        private static func seconds(_ s: Double) -> String { s == s.rounded() ? String(Int(s)) : String(s) }
    }

    /// Input from the peer that was not passed on; the driver counts it.
    public enum Drop: Sendable, Equatable {
        /// A request with no usable `CSeq` (answered 400).
        case requestWithoutCSeq
        /// A response to no request of ours that is waiting (late after a timeout, or forged).
        case unmatchedResponse(cseq: Int?)
        /// A request over the limit of unanswered requests (answered 503).
        case tooManyRequests
    }

    public enum Action: Sendable, Equatable {
        /// Send this message to the peer.
        case write(RTSPMessage)
        /// A request from the peer: answer it once, with `answer`.
        case deliver(RTSPMessage)
        /// A request from the peer whose body was skipped: answer it once (413), with `answer`.
        case deliverOversized(RTSPMessage, length: Int)
        /// The response to one of ours.
        case complete(Token, RTSPMessage)
        /// One of ours failed.
        case fail(Token, Failure)
        case drop(Drop)
    }

    private struct Pending: Sendable {
        var token: Token
        var method: String
        var deadline: UInt64
        var seconds: Double
    }

    /// At most this many of the peer's requests may wait for their answer at once.
    public let maximumUnanswered: Int
    private var nextCSeq = 1
    private var pending: [Int: Pending] = [:]
    private var unanswered: Set<Int> = []
    private var isClosed = false

    public init(maximumUnanswered: Int = 32) {
        self.maximumUnanswered = maximumUnanswered
    }

    /// Requests of ours waiting for a response.
    public var waiting: Int { pending.count }

    /// The earliest time (ns, on the clock `now` is given on) at which a request of ours times out.
    public var nextDeadline: UInt64? { pending.values.map(\.deadline).min() }

    /// Sends a request of ours: numbered here (`CSeq` first, as `RTSPMessage.request` writes it).
    public mutating func request(_ method: String, uri: String, headers: [(String, String)] = [], body: [UInt8] = [],
                                 token: Token, now: UInt64, timeout seconds: Double) -> Action
    {
        guard !isClosed else { return .fail(token, .closed) }
        let cseq = nextCSeq
        nextCSeq += 1
        pending[cseq] = Pending(token: token, method: method, deadline: now + UInt64(max(0, seconds) * 1e9), seconds: seconds)
        return .write(.request(method, uri: uri, cseq: cseq, headers: headers, body: body))
    }

    /// A message from the peer.
    public mutating func received(_ message: RTSPMessage) -> [Action] {
        if message.status != nil {
            guard let cseq = message.cseq, let request = pending.removeValue(forKey: cseq) else {
                return [.drop(.unmatchedResponse(cseq: message.cseq))]
            }
            return [.complete(request.token, message)]
        }
        guard let cseq = message.cseq else {
            return [.drop(.requestWithoutCSeq), .write(.response(400, cseq: nil))]
        }
        guard unanswered.count < maximumUnanswered, !unanswered.contains(cseq) else {
            return [.drop(.tooManyRequests), .write(.response(503, cseq: cseq, headers: [("Lyre-Error", "too many requests unanswered")]))]
        }
        unanswered.insert(cseq)
        return [.deliver(message)]
    }

    /// A message whose body was too large and skipped (`RTSPFrame.oversizedMessage`): a request is passed up
    /// like any other, to be answered (413); a response fails its request.
    public mutating func receivedOversized(_ head: RTSPMessage, length: Int) -> [Action] {
        guard head.status == nil else {
            guard let cseq = head.cseq, let request = pending.removeValue(forKey: cseq) else {
                return [.drop(.unmatchedResponse(cseq: head.cseq))]
            }
            return [.fail(request.token, .oversizedResponse(length: length))]
        }
        let actions = received(head)
        guard case .deliver = actions.first else { return actions }
        return [.deliverOversized(head, length: length)]
    }

    /// Answers a request the machine delivered: written once; a second answer, or an answer to a request
    /// never delivered, is not written. A response without `CSeq` (to input that had none) is written.
    public mutating func answer(_ response: RTSPMessage) -> Action? {
        guard !isClosed else { return nil }
        guard let cseq = response.cseq else { return .write(response) }
        guard unanswered.remove(cseq) != nil else { return nil }
        return .write(response)
    }

    /// Fails the requests of ours whose time is up.
    public mutating func expire(now: UInt64) -> [Action] {
        let expired = pending.filter { $0.value.deadline <= now }.sorted { $0.key < $1.key }
        for (cseq, _) in expired { pending[cseq] = nil }
        return expired.map { .fail($0.value.token, .timeout(method: $0.value.method, seconds: $0.value.seconds)) }
    }

    /// The connection is gone: every request of ours waiting fails, and later ones fail at once.
    public mutating func closed() -> [Action] {
        isClosed = true
        unanswered.removeAll()
        let failed = pending.sorted { $0.key < $1.key }.map { Action.fail($0.value.token, .closed) }
        pending.removeAll()
        return failed
    }
}
