import LyreWire

/// Why a playback's request failed: what `StreamSession`, `QueuePlayer` and their room changes throw. Each
/// case says what happened in terms an app can act on; its description is the line `lyre play` prints.
public enum LyreSenderError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The receiver answered `what` (a method, or what it carried: "volume SET_PARAMETER") with `status`;
    /// `reason` is its `Lyre-Error`, or what the status means.
    case refused(what: String, status: Int, reason: String)
    /// The connection to the receiver could not be made, or closed: why.
    case connectionLost(String)
    /// No answer to `method` within `seconds`.
    case timedOut(method: String, seconds: Double)
    /// The receiver's key is not the one paired with (pairing.md §6): what to do about it.
    case keyChanged(String)
    /// The playback has ended: nothing more can be asked of it.
    case ended
    /// A change to the playback's rooms that cannot be made (no such room, already playing, the only one).
    case rooms(String)
    /// One room of several could not be set up: which, and why.
    indirect case room(String, LyreSenderError)
    /// Anything else (a socket that cannot open, an answer that breaks the protocol): what happened.
    case failed(String)

    /// A failure described in words alone.
    init(description: String) { self = .failed(description) }

    public var description: String {
        switch self {
        case .refused(let what, _, let reason): "the receiver refused \(what): \(reason)"
        case .connectionLost(let why): why
        case .timedOut(let method, let seconds): RTSPPeerStateMachine<Int>.Failure.timeout(method: method, seconds: seconds).description
        case .keyChanged(let what): what
        case .ended: "the playback has ended"
        case .rooms(let what): what
        case .room(let room, let error): "\(room): \(error)"
        case .failed(let what): what
        }
    }
}
