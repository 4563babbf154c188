import LyreSRTP
import LyreWire
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A link's set-up as the sender makes it (streaming.md §3; pairing.md §6): OPTIONS, ANNOUNCE with the room's
/// channel map, SETUP, and a GET_PARAMETER for the receiver's volume; the requests in order, and what each
/// answer must hold. Sans-I/O: `Link` sends each request it gives and hands it the answer; it decides what
/// comes next, or why the link cannot be made.
struct SenderHandshake: Sendable {
    /// What this end offers: the room, the playback's terms, and this link's ports and keys.
    struct Offer: Sendable {
        var route: OutputRoute
        var configuration: StreamConfiguration
        /// This end's address on the receiver's network, the SDP's origin.
        var local: String
        var ssrc: UInt32
        /// This link's RTP and RTCP ports.
        var ports: (rtp: UInt16, rtcp: UInt16)
        var timingPort: UInt16
        var fec: FECHeader?
        /// The SRTP key (key and salt), over TLS only.
        var srtpKey: [UInt8]?
        /// The timing exchange's key, over TLS only.
        var timingKey: [UInt8]?
    }

    /// A request to send, as the connection's next.
    struct Request: Sendable {
        let method: String
        let uri: String
        let headers: [(String, String)]
        let body: [UInt8]
    }

    /// What the receiver agreed to: the link is made.
    struct Agreed: Equatable, Sendable {
        /// The receiver's id: the route's, or the one OPTIONS told.
        var receiverID: String?
        var sessionID: String
        /// The receiver's RTP and RTCP ports.
        var server: Ports
        var feedback: Set<FeedbackHeader.Kind>
        var takesFEC: Bool
        /// The receiver's volume when the link was made (the sender owns it from then on); nil when it did not say.
        var volume: Double?

        struct Ports: Equatable, Sendable {
            var rtp: UInt16
            var rtcp: UInt16
        }
    }

    enum Next {
        case send(Request)
        case done(Agreed)
    }

    private enum Step { case options, announce, setup, volume, done }

    let offer: Offer
    private var step = Step.options
    private var agreed = Agreed(sessionID: "", server: .init(rtp: 0, rtcp: 0), feedback: [], takesFEC: false)

    init(_ offer: Offer) {
        self.offer = offer
    }

    /// The first request: OPTIONS.
    var first: Request { Request(method: "OPTIONS", uri: "*", headers: [], body: []) }

    private var base: String { "rtsp://\(HostPort.uri(offer.route.host, offer.route.port))/" }

    /// Takes the answer to the last request; returns the next one, or what was agreed once all are answered.
    mutating func answer(_ response: RTSPMessage) throws(LyreSenderError) -> Next {
        let route = offer.route
        switch step {
        case .options:
            try Self.check(response, "OPTIONS")
            // A route found by id (discovery, or an address remembered from it) must reach that receiver:
            // another may have the address now. A receiver that tells no id (version 1, or not Lyre) is taken.
            let told = response.headers[ReceiverIDHeader.name]?.lowercased()
            if let id = route.id, let told, told != id {
                throw .failed("\(route.address) is now another receiver (id \(told), not \(id))")
            }
            agreed.receiverID = route.id ?? told
            step = .announce
            return .send(announce)
        case .announce:
            try Self.check(response, "ANNOUNCE")
            // A version 1 receiver does not echo the map: it would play both channels.
            if route.channels != .stereo, response.headers["Lyre-Channels"].flatMap(ChannelMap.init(parsing:)) != route.channels {
                throw .failed("it cannot play only the \(route.channels.rawValue) channel (a version 1 receiver: update its lyred)")
            }
            step = .setup
            return .send(setup)
        case .setup:
            try Self.check(response, "SETUP")
            guard let session = SessionHeader.id(response.headers[SessionHeader.name]),
                let answer = response.headers["Transport"].flatMap(TransportSpec.init(parsing:)),
                case .udp(_, let server?) = answer.lower
            else { throw .failed("the receiver's SETUP answer has no Session or server_port") }
            agreed.sessionID = session
            agreed.server = .init(rtp: server.0, rtcp: server.1)
            agreed.feedback = FeedbackHeader.kinds(response.headers[FeedbackHeader.name])
            agreed.takesFEC = offer.fec != nil && FECHeader(parsing: response.headers[FECHeader.name]) == offer.fec
            step = .volume
            return .send(Request(method: "GET_PARAMETER", uri: base, headers: [("Session", session), ("Content-Type", "text/parameters")],
                                 body: Array("volume\r\n".utf8)))
        case .volume:
            // The sender owns the volume (as in AirPlay): it starts from what the receiver has now, if it says.
            agreed.volume = response.status == 200 ? TextParameters(parsing: response.bodyText)["volume"].flatMap(Double.init) : nil
            step = .done
            return .done(agreed)
        case .done:
            throw .failed("the link is made: no request was pending")
        }
    }

    /// Sends each request with `send` and answers it, to the end, without blocking: what the receiver agreed
    /// to, or why not (a `LyreSenderError`).
    func drive(_ send: @escaping @Sendable (Request) -> EventLoopFuture<RTSPMessage>) -> EventLoopFuture<Agreed> {
        Self.drive(self, first, send)
    }

    private static func drive(_ machine: Self, _ request: Request, _ send: @escaping @Sendable (Request) -> EventLoopFuture<RTSPMessage>)
        -> EventLoopFuture<Agreed>
    {
        let answered = send(request)
        return answered.flatMap { response in
            var machine = machine
            do {
                switch try machine.answer(response) {
                case .send(let next): return drive(machine, next, send)
                case .done(let agreed): return answered.eventLoop.makeSucceededFuture(agreed)
                }
            } catch {
                return answered.eventLoop.makeFailedFuture(error)
            }
        }
    }

    /// ANNOUNCE: the stream's SDP (with its SRTP key over TLS) and the playback's terms.
    private var announce: Request {
        let configuration = offer.configuration
        let sdp = SessionDescription(audio: AudioFormat(encoding: .opus, payloadType: FrameEncoder.payloadType), origin: offer.local,
                                     crypto: offer.srtpKey.map { SDPCrypto(suite: SRTPSession.suite, key: $0) })
        var headers = [("Content-Type", "application/sdp"), ("Lyre-Sender-Name", configuration.senderName),
                       ("Lyre-Latency", String(configuration.latencyMilliseconds)), ("Lyre-Channels", offer.route.channels.rawValue)]
        if let id = configuration.senderID { headers.append(("Lyre-Sender-ID", id)) }
        if let mixing = configuration.mixing { headers.append(("Lyre-Mix", mixing.rawValue)) }
        if configuration.mixing == .duck, let depth = configuration.duckDB { headers.append(("Lyre-Duck-DB", "\(depth)")) }
        if configuration.mixing != nil, configuration.interruptsSpokenAudio { headers.append(("Lyre-Interrupt", MixRequest.spokenAudio)) }
        if configuration.mode != .default { headers.append(("Lyre-Mode", configuration.mode.rawValue)) }
        return Request(method: "ANNOUNCE", uri: base, headers: headers, body: Array(sdp.serialized().utf8))
    }

    /// SETUP: this link's ports, its SSRC, the timing exchange, the feedback it takes and its FEC.
    private var setup: Request {
        let transport = TransportSpec(lower: .udp(client: (offer.ports.rtp, offer.ports.rtcp), server: nil), ssrc: offer.ssrc)
        var headers = [("Transport", transport.serialized), ("Lyre-Timing-Port", String(offer.timingPort)),
                       (FeedbackHeader.name, FeedbackHeader.value(offer.configuration.resend ? [.nack, .report] : [.report]))]
        if let fec = offer.fec { headers.append((FECHeader.name, fec.serialized)) }
        if let key = offer.timingKey { headers.append(("Lyre-Timing-Key", Data(key).base64EncodedString())) }
        return Request(method: "SETUP", uri: base + "streamid=0", headers: headers, body: [])
    }

    /// The answer, when it is 200; else why the receiver refused, as a sender tells it.
    @discardableResult
    static func check(_ response: RTSPMessage, _ method: String) throws(LyreSenderError) -> RTSPMessage {
        guard let status = response.status, status == 200 else {
            let status = response.status ?? 0
            let why = status == 503 ? "its audio output is unavailable"
                : response.headers["Lyre-Error"] ?? "\(status) \(RTSPStatus.reason(status))"
            throw .refused(what: method, status: status, reason: why)
        }
        return response
    }
}
