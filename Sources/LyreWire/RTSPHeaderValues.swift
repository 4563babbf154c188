/// The `Transport` header (RFC 2326 §12.39), the forms Lyre uses.
public struct TransportSpec: Sendable, Equatable {
    public enum Lower: Sendable, Equatable {
        /// RTP and RTCP over UDP; ports are (rtp, rtcp).
        case udp(client: (UInt16, UInt16)?, server: (UInt16, UInt16)?)
        /// Interleaved in the RTSP connection on channels (rtp, rtcp).
        case tcp(channels: (UInt8, UInt8))

        public static func == (a: Lower, b: Lower) -> Bool {
            switch (a, b) {
            case (.udp(let c1, let s1), .udp(let c2, let s2)):
                c1?.0 == c2?.0 && c1?.1 == c2?.1 && s1?.0 == s2?.0 && s1?.1 == s2?.1
            case (.tcp(let a), .tcp(let b)): a == b
            default: false
            }
        }
    }

    public var lower: Lower
    public var ssrc: UInt32?
    public var modeRecord: Bool

    public init(lower: Lower, ssrc: UInt32? = nil, modeRecord: Bool = true) {
        self.lower = lower
        self.ssrc = ssrc
        self.modeRecord = modeRecord
    }

    /// Reads the first transport in the header that Lyre supports; nil when none is.
    public init?(parsing header: String) {
        for spec in header.split(separator: ",") {
            let params = spec.split(separator: ";").map { String($0).trimmingSpaces }
            guard let proto = params.first?.uppercased() else { continue }
            var client: (UInt16, UInt16)?
            var server: (UInt16, UInt16)?
            var interleaved: (UInt8, UInt8)?
            var ssrc: UInt32?
            var record = false
            var unicast = true
            for param in params.dropFirst() {
                let pair = param.split(separator: "=", maxSplits: 1).map(String.init)
                guard let key = pair.first?.lowercased() else { continue }  // "=" alone
                let value = pair.count > 1 ? pair[1] : ""
                switch key {
                case "client_port": client = Self.pair(value)
                case "server_port": server = Self.pair(value)
                case "interleaved": interleaved = Self.pair(value).flatMap { a, b in UInt8(exactly: a).flatMap { x in UInt8(exactly: b).map { (x, $0) } } }
                case "ssrc": ssrc = UInt32(value, radix: 16)
                case "mode": record = value.trimming(["\""]).lowercased() == "record"
                case "multicast": unicast = false
                default: break
                }
            }
            guard unicast else { continue }
            switch proto {
            case "RTP/AVP", "RTP/AVP/UDP":
                guard client != nil || server != nil else { continue }
                self.init(lower: .udp(client: client, server: server), ssrc: ssrc, modeRecord: record)
                return
            case "RTP/AVP/TCP":
                self.init(lower: .tcp(channels: interleaved ?? (0, 1)), ssrc: ssrc, modeRecord: record)
                return
            default: continue
            }
        }
        return nil
    }

    public var serialized: String {
        var parts: [String]
        switch lower {
        case .udp(let client, let server):
            parts = ["RTP/AVP/UDP", "unicast"]
            if let client { parts.append("client_port=\(client.0)-\(client.1)") }
            if let server { parts.append("server_port=\(server.0)-\(server.1)") }
        case .tcp(let channels):
            parts = ["RTP/AVP/TCP", "unicast", "interleaved=\(channels.0)-\(channels.1)"]
        }
        if let ssrc { parts.append("ssrc=\(String(ssrc, radix: 16, uppercase: true))") }
        if modeRecord { parts.append("mode=record") }
        return parts.joined(separator: ";")
    }

    private static func pair(_ text: String) -> (UInt16, UInt16)? {
        let ends = text.split(separator: "-").map { UInt16($0) }
        guard let first = ends.first, let a = first else { return nil }
        if ends.count == 1 { return (a, a &+ 1) }
        guard ends.count == 2, let b = ends[1] else { return nil }
        return (a, b)
    }
}

/// `RTP-Info: seq=N;rtptime=T` (RFC 2326 §12.33), for the one stream Lyre sends.
public struct RTPInfo: Sendable, Equatable {
    public var sequence: UInt16?
    public var rtpTime: UInt32?

    public init(sequence: UInt16?, rtpTime: UInt32?) {
        self.sequence = sequence
        self.rtpTime = rtpTime
    }

    public init(parsing header: String) {
        let fields = ParameterList(header.split(separator: ",").first.map(String.init) ?? "")
        sequence = fields["seq"].flatMap { UInt16($0) }
        rtpTime = fields["rtptime"].flatMap { UInt32($0) }
    }

    public var serialized: String {
        [sequence.map { "seq=\($0)" }, rtpTime.map { "rtptime=\($0)" }].compactMap { $0 }.joined(separator: ";")
    }
}

/// `Lyre-Latency: MS`: a session's target latency, from the time a sample is due at the sender to its
/// presentation at the receiver's output (streaming.md §3).
public enum SessionLatency {
    /// The milliseconds a sender may ask for and a receiver takes (`lyre play`, `lyre sink` and `lyred --latency`
    /// take the same). Under 20 a sender sends 5 ms frames (`StreamConfiguration.defaultFrameMilliseconds`).
    public static let milliseconds = 10...2000
    /// What a command line says of a latency outside `milliseconds`.
    public static let outOfRange = "--latency must be between \(milliseconds.lowerBound) and \(milliseconds.upperBound) ms"
}

/// `Lyre-Anchor: rtptime=T;clock=C`: the sample with RTP timestamp T is due at sender clock C (ns), before
/// the session latency is added (streaming.md §3, §6).
public struct PlaybackAnchor: Sendable, Equatable {
    public var rtpTime: UInt32
    public var senderClock: UInt64

    public init(rtpTime: UInt32, senderClock: UInt64) {
        self.rtpTime = rtpTime
        self.senderClock = senderClock
    }

    public init?(parsing header: String) {
        let fields = ParameterList(header)
        guard let t = fields["rtptime"].flatMap({ UInt32($0) }), let c = fields["clock"].flatMap({ UInt64($0) }) else {
            return nil
        }
        self.init(rtpTime: t, senderClock: c)
    }

    public var serialized: String { "rtptime=\(rtpTime);clock=\(senderClock)" }
}

/// `key=value;key=value` as in several RTSP headers.
struct ParameterList {
    var values: [String: String] = [:]

    init(_ text: String) {
        for part in text.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
            if pair.count == 2, values[pair[0].lowercased()] == nil { values[pair[0].lowercased()] = pair[1] }
        }
    }

    subscript(key: String) -> String? { values[key] }
}

/// A `text/parameters` body: `name: value` lines (RFC 2326 §C.1.4 style, as RAOP uses it).
public struct TextParameters: Sendable, Equatable {
    public var entries: [(name: String, value: String)]

    public init(_ entries: [(String, String)]) { self.entries = entries.map { (name: $0.0, value: $0.1) } }

    /// Lines without a colon are returned as names with an empty value (a GET_PARAMETER asks by name).
    public init(parsing text: String) {
        entries = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).compactMap { line in
            let trimmed = String(line).trimmingSpaces
            guard !trimmed.isEmpty else { return nil }
            guard let colon = trimmed.firstIndex(of: ":") else { return (name: trimmed.lowercased(), value: "") }
            return (name: String(trimmed[..<colon]).trimmingSpaces.lowercased(),
                    value: String(trimmed[trimmed.index(after: colon)...]).trimmingSpaces)
        }
    }

    public subscript(name: String) -> String? { entries.first { $0.name == name }?.value }

    public var serialized: String { entries.map { "\($0.name): \($0.value)\r\n" }.joined() }

    public static func == (a: TextParameters, b: TextParameters) -> Bool {
        a.entries.map(\.name) == b.entries.map(\.name) && a.entries.map(\.value) == b.entries.map(\.value)
    }
}

/// `Lyre-Receiver-ID` (streaming.md §3): in a receiver's OPTIONS answer, its device id (discovery.md), so that
/// a sender that connected to an address it remembered knows it reached the same receiver.
public enum ReceiverIDHeader {
    public static let name = "Lyre-Receiver-ID"
}

/// The `Session` header (RFC 2326 §12.37): the session's id, then its parameters (`;timeout=60`), which
/// Lyre's two ends do not act on.
public enum SessionHeader {
    public static let name = "Session"

    /// The id a Session header names: what comes before its parameters; nil with no header.
    public static func id(_ value: String?) -> String? {
        value.flatMap { $0.split(separator: ";").first.map(String.init) }
    }
}

/// How long either end waits for a silent peer (streaming.md §7, §9.1): a receiver ends a session that sent
/// neither requests nor media for this long (`timeout`), and a sender counts a room that sent no receiver
/// report for this long as gone.
public enum SessionSilence {
    public static let limit: UInt64 = 10_000_000_000

    /// Whether a peer silent for `silence` ns is gone.
    public static func isOver(_ silence: UInt64) -> Bool { silence > limit }

    /// How long a peer last heard from at `last` (ns, the host clock) has been silent at `now` (none when the
    /// clock reads earlier).
    public static func silence(since last: UInt64, now: UInt64) -> UInt64 { now > last ? now - last : 0 }
}
