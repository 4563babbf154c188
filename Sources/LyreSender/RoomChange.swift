import LyreWire

/// Why the route to the receiver changed, as `AVAudioSession.RouteChangeReason` says it on iOS.
public enum OutputRouteChangeReason: Sendable, Equatable {
    /// The receiver went away, stopped, or the connection was lost.
    case oldDeviceUnavailable
    /// Another sender took the receiver over (its name when the receiver said).
    case takenOver(by: String?)
    /// The receiver's owner unpaired this sender (`lyre remote unpair`, the receiver's page): the receiver
    /// ends its sessions and refuses it until it is paired again.
    case unpaired
    /// The app's category changed, and with it where its audio goes (`AudioSession.setCategory`): told by
    /// `AudioSession.observeRouteChange` and in `QueuePlayer.Outcome`, never by a StreamSession's rooms.
    case categoryChange
}

extension OutputRouteChangeReason: CustomStringConvertible {
    /// What happened, as a log line says it (`lyre sink`: "stream to 'Kitchen' ended: …").
    public var description: String {
        switch self {
        case .oldDeviceUnavailable: "the receiver is no longer available"
        case .takenOver(let by): "\(by.map { "'\($0)'" } ?? "another sender") took the receiver over"
        case .unpaired: "the receiver unpaired this sender"
        case .categoryChange: "the audio session's category moved the audio"
        }
    }

    /// The route change a receiver's `session-end` notice is (streaming.md §7): a reason this sender does not
    /// know reads as the receiver gone.
    init(_ end: ReceiverNotice.SessionEnd) {
        switch end.known {
        case .takenOver: self = .takenOver(by: end.takenOverBy)
        case .unpaired: self = .unpaired
        case .shutdown, .timeout, nil: self = .oldDeviceUnavailable
        }
    }
}

/// A change to one room of a playback (the seed's route change, per output).
public struct RoomChange: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The room joined the playback (`newDeviceAvailable`).
        case joined
        /// The room left: with the reason when it went away by itself, nil when the app removed it.
        case left(OutputRouteChangeReason?)
    }

    public var route: OutputRoute
    public var kind: Kind
    /// Rooms still playing after the change.
    public var remaining: Int
}

/// What `rooms()` reports of each room.
public struct RoomReport: Sendable {
    public var route: OutputRoute
    /// `playing`, `paused` or `joining`.
    public var state: String
    /// dB, RAOP scale (−144 is mute).
    public var volume: Double
    /// The receiver's output latency and its output delay (`lyred --output-delay`), ms.
    public var outputLatencyMilliseconds: Double
    public var outputDelayMilliseconds: Int
    /// The receiver's own statistics (streaming.md §3 `stats`), nil when it did not answer.
    public var statistics: [String: String]?
    /// This sender's answers to the room's retransmission requests; nil when the receiver does not ask.
    public var retransmission: RetransmissionReport?
    /// The room's link as its receiver reports it (streaming.md §4.2); nil before its first report, or when
    /// it does not report.
    public var quality: LinkQuality?
    /// True when the room's session is encrypted (paired: TLS and SRTP), false when it is plain.
    public var encrypted: Bool
}

/// What a sender did with one room's retransmission requests (streaming.md §4.1).
public struct RetransmissionReport: Sendable, Equatable, Codable {
    /// Sequence numbers asked for, and resent.
    public var requested: Int
    public var resent: Int
    /// Asked for but no longer kept; refused for asking too often or over the bandwidth cap.
    public var unavailable: Int
    public var refused: Int
    /// Datagrams on the RTCP port dropped: from another address, for another stream, or not RTCP.
    public var dropped: Int
}
