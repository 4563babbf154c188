/// RECORD and FLUSH (streaming.md §3, §9.3): what a sender asks of a room and what the room answers, written and
/// read here for both ends.
public struct RecordRequest: Sendable, Equatable {
    /// `Lyre-Anchor`: the RTP time due at an instant of the sender's clock. A session with a timing exchange
    /// needs it.
    public var anchor: PlaybackAnchor?
    /// `RTP-Info`: the first frame's sequence number and RTP time. A room that joins a playback under way gets
    /// none: the packets sent since its SETUP are in its buffer already, in step.
    public var info: RTPInfo?
    /// `Lyre-Start-At`: after a resume, the RTP time of the first sample to play; what comes before it primes
    /// the decoder.
    public var startAt: UInt32?

    public init(anchor: PlaybackAnchor?, info: RTPInfo?, startAt: UInt32?) {
        self.anchor = anchor
        self.info = info
        self.startAt = startAt
    }

    /// An anchor without `RTP-Info`: the room joins a playback under way.
    public var joins: Bool { anchor != nil && info == nil }

    public static let startAtName = "Lyre-Start-At"

    public var headers: [(String, String)] {
        var headers: [(String, String)] = []
        if let info { headers.append(("RTP-Info", info.serialized)) }
        if let anchor { headers.append(("Lyre-Anchor", anchor.serialized)) }
        if let startAt { headers.append((Self.startAtName, String(startAt))) }
        return headers
    }

    /// What a RECORD asks, or nil (400) when the session is `timed` and it names no anchor a receiver can read.
    public static func read(_ request: RTSPMessage, timed: Bool) -> RecordRequest? {
        let anchor = request.headers["Lyre-Anchor"].flatMap(PlaybackAnchor.init(parsing:))
        guard anchor != nil || !timed else { return nil }
        return RecordRequest(anchor: timed ? anchor : nil, info: request.headers["RTP-Info"].map(RTPInfo.init(parsing:)),
                             startAt: request.headers[startAtName].flatMap { UInt32($0) })
    }
}

/// A room's answer to RECORD: its output's latency and delay, which the sender's now playing adds to the
/// elapsed time, and the request's `RTP-Info` and `Lyre-Start-At` echoed (a version 1 receiver does not echo
/// `Lyre-Start-At`, and would play the priming).
public struct RecordAnswer: Sendable, Equatable {
    /// `Lyre-Output-Latency`, ns, sent in milliseconds to the microsecond.
    public var outputLatency: UInt64
    public var outputLatencyMilliseconds: Double { Double(outputLatency) / 1_000_000 }
    /// `Lyre-Output-Delay`, ms.
    public var outputDelayMilliseconds: Int
    public var info: RTPInfo?
    public var startAt: UInt32?

    public init(outputLatency: UInt64, outputDelayMilliseconds: Int, info: RTPInfo?, startAt: UInt32?) {
        self.outputLatency = outputLatency
        self.outputDelayMilliseconds = outputDelayMilliseconds
        self.info = info
        self.startAt = startAt
    }

    /// The receiver's answer: its output's figures, and the request's `RTP-Info` and start echoed.
    public init(outputLatency: UInt64, outputDelayMilliseconds: Int, echoing request: RecordRequest) {
        self.init(outputLatency: outputLatency, outputDelayMilliseconds: outputDelayMilliseconds, info: request.info, startAt: request.startAt)
    }

    public var headers: [(String, String)] {
        var headers = [("Lyre-Output-Latency", Self.milliseconds(outputLatency)), ("Lyre-Output-Delay", String(outputDelayMilliseconds))]
        if let info { headers.append(("RTP-Info", info.serialized)) }
        if let startAt { headers.append((RecordRequest.startAtName, String(startAt))) }
        return headers
    }

    /// What a room answered; what it did not say is 0 (a version 1 receiver).
    public static func read(_ response: RTSPMessage) -> RecordAnswer {
        let latency = response.headers["Lyre-Output-Latency"].flatMap(Double.init).map { UInt64((max(0, $0) * 1_000_000).rounded()) } ?? 0
        return RecordAnswer(outputLatency: latency, outputDelayMilliseconds: response.headers["Lyre-Output-Delay"].flatMap { Int($0) } ?? 0,
                            info: response.headers["RTP-Info"].map(RTPInfo.init(parsing:)),
                            startAt: response.headers[RecordRequest.startAtName].flatMap { UInt32($0) })
    }

    /// `ns` as milliseconds with three decimals.
    public static func milliseconds(_ ns: UInt64) -> String {
        let us = ns / 1000
        let frac = String(us % 1000)
        return "\(us / 1000).\(String(repeating: "0", count: 3 - frac.count))\(frac)"
    }
}

/// FLUSH: the sender stops; `RTP-Info` names the next frame it would send. The room answers where its output
/// stopped (`Lyre-Stopped-At`), so that a resume loses no sample and plays none twice.
public enum FlushTerms {
    public static let stoppedAtName = "Lyre-Stopped-At"

    public static func request(next: RTPInfo) -> [(String, String)] { [("RTP-Info", next.serialized)] }

    /// The next frame's sequence number a FLUSH names, if any.
    public static func nextSequence(_ request: RTSPMessage) -> UInt16? {
        request.headers["RTP-Info"].map(RTPInfo.init(parsing:))?.sequence
    }

    public static func answer(stoppedAt: UInt32?) -> [(String, String)] { stoppedAt.map { [(stoppedAtName, String($0))] } ?? [] }

    /// Where the room's output stopped, when it said (a version 1 receiver does not).
    public static func stoppedAt(_ response: RTSPMessage) -> UInt32? { response.headers[stoppedAtName].flatMap(UInt32.init) }
}
