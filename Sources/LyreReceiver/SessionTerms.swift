import FoundationEssentials
import LyreClock
import LyreSRTP
import LyreWire

/// A request refused: its status, the reason sent in `Lyre-Error` (none for the plain statuses of RTSP), and
/// whether it counts as bad input in the receiver's statistics (a sender Lyre wrote never sends it).
struct SessionRefusal: Error, Equatable {
    let status: Int
    let reason: String?
    let counted: Bool
    /// What the log says, for a refusal whose status tells the sender enough.
    var detail: String?
    /// Seconds after which the sender may try again (`Retry-After`), for a refusal of the moment.
    var retryAfter: Int?

    init(_ status: Int, _ reason: String? = nil, counted: Bool = false, detail: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.reason = reason
        self.counted = counted
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// `text/parameters` and SDP bodies are read only up to this (streaming.md §2): theirs are a few hundred
    /// bytes, and parsing 2 MiB of short lines would hold the event loop, and every session on it, for seconds.
    static let maximumTextBody = 64 * 1024

    /// 413 for a text body over `maximumTextBody`, else nil.
    static func longText(_ request: RTSPMessage) -> SessionRefusal? {
        guard request.body.count > maximumTextBody else { return nil }
        return SessionRefusal(413, "a \(request.method ?? "") text body is at most \(maximumTextBody) bytes", counted: true)
    }
}

/// What an ANNOUNCE asks of a session (streaming.md §3, §7; pairing.md §6), read from its SDP and headers, or
/// why it is refused. Plain values: what depends on the receiver's other sessions (taking over, playing over)
/// and on its output is the connection handler's to decide after.
struct AnnounceTerms: Equatable {
    var format: AudioFormat
    /// The SRTP key, from an SDP that came over TLS.
    var crypto: SDPCrypto?
    var channels = ChannelMap.stereo
    var latencyMilliseconds: Int
    /// To mix or duck over a session that plays (`Lyre-Mix`), and how deep a duck goes, dB.
    var mix: MixRequest?
    var duckDB: Double
    /// Its sender plays spoken audio (`Lyre-Mode`).
    var spokenAudio = false
    /// An overlay that pauses spoken audio rather than mixes over it (`Lyre-Interrupt`).
    var interrupts = false
    /// Its sender's name, at most 64 bytes: `Lyre-Sender-Name`, else `User-Agent`.
    var senderName: String
    /// The sender's stable id (`Lyre-Sender-ID`, 32 hex digits); nil when it sent none or something else.
    var senderID: DeviceID?

    /// The answer's headers: the channel map echoed, so the sender knows this receiver applies it (a version 1
    /// receiver does not answer it).
    var answer: [(String, String)] { [("Lyre-Channels", channels.rawValue)] }

    /// The terms `request` asks, checked in the order a sender is told of them; `overTLS` when it came on a
    /// TLS connection; `latency` and `duckDB` are the receiver's own, taken when the request names none.
    static func read(_ request: RTSPMessage, overTLS: Bool, latency: Int, duckDB: Double) -> Result<AnnounceTerms, SessionRefusal> {
        if let type = request.headers["Content-Type"], !type.lowercased().hasPrefix("application/sdp") {
            return .failure(SessionRefusal(415))
        }
        if let refusal = SessionRefusal.longText(request) { return .failure(refusal) }
        let headers = request.headers
        var terms: AnnounceTerms
        do {
            let sdp = try SessionDescription(parsing: request.bodyText)
            let name = headers["Lyre-Sender-Name"] ?? headers["User-Agent"] ?? "RTSP sender"
            terms = AnnounceTerms(format: try sdp.audioFormat(), crypto: try sdp.crypto(), latencyMilliseconds: latency, duckDB: duckDB,
                                  senderName: String(decoding: name.utf8.prefix(64), as: UTF8.self),
                                  senderID: headers["Lyre-Sender-ID"].flatMap { DeviceID($0) })
        } catch {
            if case .unsupported = error { return .failure(SessionRefusal(415, counted: true, detail: error.description)) }
            return .failure(SessionRefusal(400, counted: true, detail: error.description))
        }
        if let crypto = terms.crypto {
            guard overTLS else { return .failure(SessionRefusal(400, "an SRTP key is taken only over TLS", counted: true)) }
            guard crypto.suite == SRTPSession.suite else {
                return .failure(SessionRefusal(415, "SRTP suite \(crypto.suite) is not supported; use \(SRTPSession.suite)"))
            }
            guard crypto.key.count == SRTPSession.keyLength else {
                return .failure(SessionRefusal(400, "an SRTP key is \(SRTPSession.keyLength) bytes", counted: true))
            }
        }
        if let text = headers["Lyre-Channels"] {
            guard let map = ChannelMap(parsing: text) else {
                return .failure(SessionRefusal(400, "Lyre-Channels must be one of \(ChannelMap.choices)"))
            }
            terms.channels = map
        }
        if let text = headers["Lyre-Latency"] {
            guard let value = Int(text), SessionLatency.milliseconds.contains(value) else { return .failure(SessionRefusal(400)) }
            terms.latencyMilliseconds = value
        }
        if let text = headers["Lyre-Mix"] {
            guard let asked = MixRequest(parsing: text) else {
                return .failure(SessionRefusal(400, "Lyre-Mix must be one of \(MixRequest.choices)", counted: true))
            }
            terms.mix = asked
        }
        if let text = headers["Lyre-Duck-DB"] {
            guard terms.mix == .duck else { return .failure(SessionRefusal(400, "Lyre-Duck-DB goes with Lyre-Mix: duck", counted: true)) }
            guard let depth = MixRequest.duckDepth(parsing: text) else {
                let range = MixRequest.duckDepthRange
                return .failure(SessionRefusal(
                    400, "Lyre-Duck-DB must be a number of dB from \(Int(range.lowerBound)) to \(Int(range.upperBound))", counted: true))
            }
            terms.duckDB = depth
        }
        if let text = headers["Lyre-Mode"] {
            guard let mode = MixRequest.mode(parsing: text) else {
                return .failure(SessionRefusal(400, "Lyre-Mode must be one of \(MixRequest.modes.joined(separator: ", "))", counted: true))
            }
            terms.spokenAudio = mode == MixRequest.spokenAudio
        }
        if let text = headers["Lyre-Interrupt"] {
            guard terms.mix != nil, MixRequest.interruptsSpokenAudio(text) else {
                return .failure(SessionRefusal(400, "Lyre-Interrupt must be \(MixRequest.spokenAudio), with Lyre-Mix", counted: true))
            }
            terms.interrupts = true
        }
        return .success(terms)
    }
}

/// What a SETUP asks of an announced session (streaming.md §3, §4; pairing.md §6.4), read from its headers, or
/// why it is refused. The ports it binds and the feedback address it answers are the connection handler's.
struct SetupTerms {
    var transport: TransportSpec
    /// The sender's timing port (`Lyre-Timing-Port`): the session plays on the sender's clock.
    var timingPort: UInt16?
    /// A paired session's timing key (`Lyre-Timing-Key`), which comes only over TLS.
    var timingAuthenticator: TimingAuthenticator?
    /// The sender's FEC, on a payload type of its own (other than the media's).
    var fec: FECHeader?
    /// The RTCP feedback the sender takes (NACKs, reports).
    var feedback: Set<FeedbackHeader.Kind>

    /// The answer's headers: the transport with this end's ports, the session's id and timeout, and the
    /// feedback and FEC this end takes (none when it takes none).
    static func answer(session id: String, transport: TransportSpec, feedback: Set<FeedbackHeader.Kind>, fec: FECHeader?) -> [(String, String)] {
        var headers = [("Transport", transport.serialized), ("Session", "\(id);timeout=60")]
        if !feedback.isEmpty { headers.append((FeedbackHeader.name, FeedbackHeader.value(feedback))) }
        if let fec { headers.append((FECHeader.name, fec.serialized)) }
        return headers
    }

    static func read(_ request: RTSPMessage, overTLS: Bool, format: AudioFormat) -> Result<SetupTerms, SessionRefusal> {
        let headers = request.headers
        guard let transport = headers["Transport"].flatMap(TransportSpec.init(parsing:)) else { return .failure(SessionRefusal(461)) }
        var terms = SetupTerms(transport: transport,
                               fec: FECHeader(parsing: headers[FECHeader.name]).flatMap { $0.payloadType == format.payloadType ? nil : $0 },
                               feedback: FeedbackHeader.kinds(headers[FeedbackHeader.name]))
        if let text = headers["Lyre-Timing-Port"] {
            guard let port = UInt16(text), port > 0 else { return .failure(SessionRefusal(400)) }
            terms.timingPort = port
        }
        if let text = headers["Lyre-Timing-Key"] {
            guard overTLS else { return .failure(SessionRefusal(400, "a timing key is taken only over TLS", counted: true)) }
            guard let key = Data(base64Encoded: text).flatMap({ TimingAuthenticator(key: Array($0)) }) else {
                return .failure(SessionRefusal(400, "Lyre-Timing-Key must be 32 bytes in base64", counted: true))
            }
            terms.timingAuthenticator = key
        }
        return .success(terms)
    }
}

/// What a `text/parameters` SET_PARAMETER asks (streaming.md §3; now-playing.md §4), read whole before any of
/// it is applied: a request with one parameter refused changes nothing (RFC 2326 §10.9: a server acts on such a
/// request only if every parameter in it can be set).
struct ParameterUpdate: Equatable {
    /// The volume, dB (RAOP's scale); the last one named, when it names several.
    var volume: Double?
    /// The remote commands the sender takes (`remote-commands`, with `skip-interval`).
    var commands: EnabledCommands?
    /// The playback's rooms (`room` lines), when it names them.
    var rooms: RoomList?

    static func read(_ request: RTSPMessage) -> Result<ParameterUpdate, SessionRefusal> {
        if let refusal = SessionRefusal.longText(request) { return .failure(refusal) }
        guard String(validating: request.body, as: UTF8.self) != nil else {
            return .failure(SessionRefusal(400, NowPlayingError.invalidUTF8.description, counted: true))
        }
        let parameters = TextParameters(parsing: request.bodyText)
        var update = ParameterUpdate()
        do { update.rooms = try RoomList(parsing: parameters) } catch {
            return .failure(SessionRefusal(451, error.description, counted: true))
        }
        for (name, value) in parameters.entries {
            switch name {
            case "volume":
                guard let db = Double(value).flatMap(ReceiverTXT.validVolume) else {
                    return .failure(SessionRefusal(451, "volume must be -30 to 0 dB, or -144 for mute"))
                }
                update.volume = db
            case "remote-commands":
                do { update.commands = try EnabledCommands(list: value, skipInterval: parameters["skip-interval"]) } catch {
                    return .failure(SessionRefusal(451, error.description, counted: true))
                }
            case "skip-interval", "room": continue
            case "remote-command":
                return .failure(SessionRefusal(403, "remote commands go from the receiver to the sender, not to a receiver", counted: true))
            default:
                return .failure(SessionRefusal(451, "unknown parameter '\(String(decoding: name.utf8.prefix(64), as: UTF8.self))'"))
            }
        }
        return .success(update)
    }
}

/// What a SET_PARAMETER changes, read by its `Content-Type` (streaming.md §3, now-playing.md §2–3), or why it
/// is refused. Only a whole request is applied.
enum ParameterChange: Equatable {
    /// `text/parameters` (the default): volume, rooms and the remote commands taken.
    case parameters(ParameterUpdate)
    /// `application/json`: the now-playing snapshot.
    case nowPlaying(NowPlayingInfo)
    /// `image/jpeg` or `image/png`: the cover, or none for an empty body.
    case artwork(Artwork?)

    static let contentTypes = "text/parameters, application/json or image/jpeg|png"

    static func read(_ request: RTSPMessage) -> Result<ParameterChange, SessionRefusal> {
        let type = request.contentType
        switch type ?? "text/parameters" {
        case "text/parameters":
            return ParameterUpdate.read(request).map(ParameterChange.parameters)
        case "application/json":
            do { return .success(.nowPlaying(try NowPlayingInfo(parsing: request.body))) } catch {
                return .failure(SessionRefusal(error.status, "now playing refused: \(error)", counted: true, detail: "now playing refused: \(error)"))
            }
        case "image/jpeg", "image/png":
            guard !request.body.isEmpty else { return .success(.artwork(nil)) }
            do { return .success(.artwork(try Artwork(bytes: request.body, declared: type))) } catch {
                return .failure(SessionRefusal(error.status, "artwork refused: \(error)", counted: true, detail: "artwork refused: \(error)"))
            }
        default:
            return .failure(SessionRefusal(415, "SET_PARAMETER takes \(contentTypes)"))
        }
    }
}

/// The names a GET_PARAMETER asks (streaming.md §3), each once however often it is asked, so that the answer
/// stays small whatever the body; an empty one is a keep-alive.
enum ParameterQuery {
    enum Name: String, CaseIterable {
        case volume, outputLatency = "output-latency", outputDelay = "output-delay", stats
    }

    /// The names in the order first asked; an unknown one refuses the request (451, RFC 2326 §10.8).
    static func read(_ request: RTSPMessage) -> Result<[Name], SessionRefusal> {
        if let refusal = SessionRefusal.longText(request) { return .failure(refusal) }
        var names: [Name] = []
        for (asked, _) in TextParameters(parsing: request.bodyText).entries {
            guard let name = Name(rawValue: asked) else { return .failure(SessionRefusal(451)) }
            if !names.contains(name) { names.append(name) }
        }
        return .success(names)
    }
}
