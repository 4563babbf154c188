import LyreClock
import LyreRTSP
import LyreSRTP
import LyreWire
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A receiver a playback can go to: where it is, what to call it, and which channels it plays.
public struct OutputRoute: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    /// For messages and listings: the receiver's name, or HOST:PORT.
    public var name: String
    /// The receiver's device id when it was found by discovery.
    public var id: String?
    /// Which of the stream's channels this room plays (the receiver applies it).
    public var channels: ChannelMap
    /// The fingerprint of the receiver's key as it advertises it (TXT `pk`), when found by discovery.
    public var keyFingerprint: String?

    public init(host: String, port: UInt16, name: String? = nil, id: String? = nil, channels: ChannelMap = .stereo,
                keyFingerprint: String? = nil) {
        self.host = host
        self.port = port
        self.name = name ?? HostPort.text(host, port)
        self.id = id
        self.channels = channels
        self.keyFingerprint = keyFingerprint
    }

    public var description: String { "'\(name)'" }

    /// HOST:PORT, an IPv6 address in brackets.
    public var address: String { HostPort.text(host, port) }

    /// True when `text` names this route: its id, its name (case-insensitively) or HOST:PORT.
    public func isNamed(_ text: String) -> Bool {
        id == text.lowercased() || name.lowercased() == text.lowercased() || address == text
    }
}

/// One room of a playback: the RTSP session with one receiver, the RTP and RTCP sockets its media leaves by,
/// and the timing responder that receiver asks (streaming.md §3, §5). A link never owns audio: the
/// session's timeline encodes once and hands every link the same packets.
///
/// Sendable: everything is set at init; the channels are thread-safe, and a packet sent after the link
/// closed is dropped by its closed channel.
final class Link: Sendable {
    let route: OutputRoute
    /// The id the receiver answered as (its `Lyre-Receiver-ID`), or the route's own; nil for a receiver that
    /// tells none (version 1, or not Lyre).
    let receiverID: String?
    let sessionID: String
    /// The receiver's volume (dB, RAOP scale) when the session was set up.
    let initialVolume: Double?
    private let client: RTSPClient
    /// What the playback's rooms reached from one local address share: its timing responder, and the socket
    /// RTP leaves from for all of them (on the playback's media loop).
    struct LocalEndpoints: @unchecked Sendable {
        // Safe to share: both are thread-safe (a TimingResponder locks its state; a Channel is NIO's).
        let timing: TimingResponder
        let sender: any Channel
    }

    /// The socket this link's RTP leaves from: shared with the playback's other rooms reached from the same
    /// local address, so that a frame's packets to all of them go out in one system call. The link's own RTP
    /// port (named in SETUP) receives nothing.
    private let sender: any Channel
    /// The socket to send on now: the shared one, or the link's own RTP socket once the shared one has been
    /// closed. NIO closes a datagram socket on a send error other than an unreachable host or an oversized
    /// datagram (a route that prohibits one receiver's address, say): one room's failing sends must not
    /// silence the others, which each go on from their own socket. On the media loop.
    private static func out(_ sender: any Channel, _ own: any Channel) -> any Channel { sender.isActive ? sender : own }
    /// The playback's timing responder for this link's local address, and the link's admission to it.
    private let timing: TimingResponder
    private let timingAdmission: TimingResponder.Admission
    private let rtp: Channel
    private let rtcp: Channel
    /// The receiver's RTP port.
    private let destination: SocketAddress
    /// Takes the receiver's RTCP feedback: answers its NACKs (streaming.md §4.1) and reads its reports (§4.2).
    let feedback: LinkFeedback
    /// The feedback the receiver said it will send (`Lyre-Feedback` in SETUP's answer).
    let feedbackKinds: Set<FeedbackHeader.Kind>
    /// True when the receiver takes this playback's FEC packets (`Lyre-FEC` echoed in SETUP's answer).
    let takesFEC: Bool
    /// Sends the reports a second (§4.1, §4.2), while the receiver takes them.
    private let reportTask: RepeatedTask?
    /// Sends the reports now; nil when the receiver takes none.
    private let sendReports: (@Sendable () -> Void)?
    /// The link's SRTP over a paired (TLS) connection: every RTP packet it sends, resends and FEC included.
    private let srtp: SRTPSession?

    /// Connects and sets the stream up, without blocking: OPTIONS, ANNOUNCE (with the room's channel map),
    /// SETUP, and a GET_PARAMETER for the receiver's volume; the link once all are answered, or why it cannot
    /// be made (a `LyreSenderError`), with everything opened on the way closed again. `endpoints` gives the
    /// playback's socket and timing responder for a local address. `kept` finds a packet the timeline sent,
    /// by sequence number, to resend when the receiver asks. `onRequest` takes the receiver's own requests
    /// (session-end notices, remote commands); `onClose` is called once when the connection drops. Both run
    /// on the connection's event loop, in order, and must not block. The media sockets are on `mediaLoop`, the
    /// playback's for all rooms.
    static func connect(route: OutputRoute, configuration: StreamConfiguration, ssrc: UInt32, mediaLoop: any EventLoop,
                        endpoints: @escaping @Sendable (_ localHost: String) -> EventLoopFuture<LocalEndpoints>, fec: FECHeader?,
                        kept: @escaping @Sendable (UInt16) -> [UInt8]?, rtpTime: @escaping @Sendable (UInt64) -> UInt32,
                        onRequest: @escaping @Sendable (Link, RTSPMessage, @escaping RTSPClient.Reply) -> Void,
                        onClose: @escaping @Sendable (Link) -> Void) -> EventLoopFuture<Link>
    {
        let made = Made()
        let tls: RTSPClient.PinnedTLS?
        do {
            tls = try configuration.security?.connection(to: route)
        } catch {
            return mediaLoop.makeFailedFuture(error)
        }
        let srtpKey = tls == nil ? nil : SRTPSession.makeKey()
        let connected = RTSPClient.connect(
            host: route.host, port: route.port, connectTimeout: .milliseconds(Int64(configuration.connectTimeoutMilliseconds)), tls: tls,
            onRequest: { request, reply in
                if let link = made.link.withLock({ $0 }) { onRequest(link, request, reply) } else { reply(503, []) }
            },
            onClose: { if let link = made.link.withLock({ $0 }) { onClose(link) } })
        return connected.flatMap { (client: RTSPClient) -> EventLoopFuture<Link> in
            let local = client.localHost
            let peer = client.channel.remoteAddress?.hostText ?? route.host
            // Over TLS, the timing exchange is authenticated too, under a key of the link's own (pairing.md §6.4).
            let timingKey = tls == nil ? nil : TimingAuthenticator.makeKey()
            return endpoints(local).flatMap { (shared: LocalEndpoints) -> EventLoopFuture<Link> in
                let admission = shared.timing.admit(peer: peer, authenticator: timingKey.flatMap(TimingAuthenticator.init(key:)))
                let feedback = LinkFeedback(ssrc: ssrc, bitrate: configuration.bitrate)
                // Nothing is expected on the RTP socket; what comes is left to the pipeline's end, which drops it.
                let bound = MediaPorts.bindPair(host: local, eventLoop: mediaLoop) { channel, rtcp in
                    if rtcp { try channel.pipeline.syncOperations.addHandler(RTCPInput(feedback)) }
                }
                return bound.flatMapErrorThrowing { error in
                    throw RTSPClient.Failure(description: "cannot open the media sockets: \(error)")
                }.flatMap { (rtp: Channel, rtcp: Channel) -> EventLoopFuture<Link> in
                    let handshake = SenderHandshake(.init(
                        route: route, configuration: configuration, local: local, ssrc: ssrc,
                        ports: (UInt16(rtp.localAddress?.port ?? 0), UInt16(rtcp.localAddress?.port ?? 0)), timingPort: shared.timing.port,
                        fec: fec, srtpKey: srtpKey, timingKey: timingKey))
                    return handshake.drive { request in
                        client.send(request.method, uri: request.uri, headers: request.headers, body: request.body)
                    }.flatMapThrowing { (agreed: SenderHandshake.Agreed) -> Link in
                        try Link(route: route, client: client, agreed: agreed, peer: peer, shared: shared, admission: admission,
                                 feedback: feedback, rtp: rtp, rtcp: rtcp, srtpKey: srtpKey, kept: kept, rtpTime: rtpTime)
                    }.flatMapErrorThrowing { (error: any Error) throws -> Link in
                        rtp.close(promise: nil)
                        rtcp.close(promise: nil)
                        // A failed handshake shows as a closed connection: say why.
                        if client.keyMismatch { throw SenderSecurity.keyChanged(route) }
                        throw error
                    }
                }.flatMapErrorThrowing { (error: any Error) throws -> Link in
                    shared.timing.dismiss(admission)
                    throw error
                }
            }.flatMapErrorThrowing { (error: any Error) throws -> Link in
                client.close()
                throw error
            }
        }.map { (link: Link) -> Link in
            made.link.withLock { $0 = link }
            return link
        }
    }

    /// The link once it is made, for the connection's handlers, which are set before it is.
    private final class Made: Sendable {
        let link = Mutex<Link?>(nil)
    }

    /// The link over a connection whose handshake the receiver agreed to: its SRTP, and its feedback and
    /// reports, started.
    private init(route: OutputRoute, client: RTSPClient, agreed: SenderHandshake.Agreed, peer: String, shared: LocalEndpoints,
                 admission: TimingResponder.Admission, feedback: LinkFeedback, rtp: Channel, rtcp: Channel, srtpKey: [UInt8]?,
                 kept: @escaping @Sendable (UInt16) -> [UInt8]?, rtpTime: @escaping @Sendable (UInt64) -> UInt32) throws {
        self.route = route
        self.client = client
        (timing, sender) = (shared.timing, shared.sender)
        timingAdmission = admission
        self.feedback = feedback
        (self.rtp, self.rtcp) = (rtp, rtcp)
        receiverID = agreed.receiverID
        sessionID = agreed.sessionID
        let server = agreed.server
        // Out: RTP and this end's RTCP; in: the receiver's RTCP, as SRTCP under the same key (its SSRC is its own).
        let srtp: SRTPSession?
        let srtcp: SRTPSession?
        do {
            srtp = try srtpKey.map { try SRTPSession(.send, key: $0) }
            srtcp = try srtpKey.map { try SRTPSession(.receive, key: $0) }
        } catch {
            throw RTSPClient.Failure(description: "\(error)")
        }
        self.srtp = srtp
        let destination = try SocketAddress.numeric(peer, port: Int(server.rtp))
        self.destination = destination
        feedbackKinds = agreed.feedback
        takesFEC = agreed.takesFEC
        let receiverRTCP = try SocketAddress.numeric(peer, port: Int(server.rtcp))
        if !feedbackKinds.isEmpty {
            let kinds = feedbackKinds
            let (sender, own) = (self.sender, rtp)
            feedback.start(receiver: receiverRTCP, lookup: kept, srtcp: srtcp) { packet in
                guard let bytes = srtp.map({ $0.protect(packet) }) ?? packet else { return }
                Self.out(sender, own).writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: ByteBuffer(bytes: bytes)), promise: nil)
            }
            let send: @Sendable () -> Void = {
                let now = HostClock.now()
                guard let reports = feedback.reports(now: now, rtpTime: rtpTime(now), kinds: kinds),
                    let bytes = srtp.map({ $0.protectRTCP(reports) }) ?? reports
                else { return }
                rtcp.writeAndFlush(AddressedEnvelope(remoteAddress: receiverRTCP, data: ByteBuffer(bytes: bytes)), promise: nil)
            }
            sendReports = send
            // A receiver that reports does so every second for as long as its session lasts: one silent for
            // `SessionSilence.limit` is gone without a word, and its connection is closed: the room is lost (§9.1).
            let reports = kinds.contains(.report)
            reportTask = SessionPulse.start(
                on: rtcp.eventLoop, initialDelay: .milliseconds(500), silence: { reports ? feedback.silence() : nil },
                gone: { client.close() }, report: send)
        } else {
            sendReports = nil
            reportTask = nil
        }
        initialVolume = agreed.volume
    }

    var isClosed: Bool { client.isClosed }

    /// The event loop the RTSP connection runs on.
    var connectionLoop: any EventLoop { client.channel.eventLoop }

    /// A request in this link's session (`Session` is added): its answer when it is 200, else the failure.
    /// `written` completes as the request has been written to the connection.
    func send(_ method: String, headers: [(String, String)] = [], body: [UInt8] = [], what: String? = nil, timeout: Double = 5,
              written: EventLoopPromise<Void>? = nil) -> EventLoopFuture<RTSPMessage>
    {
        client.send(method, headers: [("Session", sessionID)] + headers, body: body, timeout: timeout, written: written).flatMapThrowing { response in
            try SenderHandshake.check(response, what ?? method)
        }
    }

    /// Sends one RTP packet (from the pacing thread): media, or an FEC packet (not counted in the sender
    /// report's counts, which are the media stream's).
    func send(_ packet: [UInt8], parity: Bool = false) {
        let shared = ByteBuffer(bytes: packet)
        sender.eventLoop.execute {
            self.write(packet, shared: shared, parity: parity)?.flush()
        }
    }

    /// Sends one frame's packet, and the FEC packet it completed if any (to the rooms that take FEC), to
    /// every link, from the pacing thread. The media loop (every link's sender is on it) is woken once for
    /// all links; links without SRTP share one buffer; and each send socket is flushed once, after all its
    /// links' packets are queued, which NIO sends in one `sendmmsg`. What a room costs the sender is its
    /// datagrams.
    static func send(_ packet: [UInt8], parity: [UInt8]?, to links: [Link]) {
        guard let loop = links.first?.sender.eventLoop else { return }
        let media = ByteBuffer(bytes: packet)
        let fec = parity.map { ByteBuffer(bytes: $0) }
        loop.execute {
            var used: [ObjectIdentifier: any Channel] = [:]
            for link in links {
                assert(link.sender.eventLoop === loop && link.rtp.eventLoop === loop, "every link's sockets are on the playback's media loop")
                if let channel = link.write(packet, shared: media, parity: false) { used[ObjectIdentifier(channel)] = channel }
                if let parity, let fec, link.takesFEC, let channel = link.write(parity, shared: fec, parity: true) {
                    used[ObjectIdentifier(channel)] = channel
                }
            }
            for channel in used.values { channel.flush() }
        }
    }

    /// Queues a packet on the socket to send on (on the media loop), and returns that socket to flush:
    /// `shared` is `packet` as a buffer, sent as is unless the link protects its packets (SRTP), which differ
    /// from room to room.
    @discardableResult
    private func write(_ packet: [UInt8], shared: ByteBuffer, parity: Bool) -> (any Channel)? {
        if !parity, packet.count >= 12 { feedback.sent(sequence: UInt16(packet[2]) << 8 | UInt16(packet[3]), payloadBytes: packet.count - 12) }
        var buffer = shared
        if let srtp {
            guard let protected = srtp.protect(packet) else { return nil }
            buffer = ByteBuffer(bytes: protected)
        }
        let channel = Self.out(sender, rtp)
        channel.write(AddressedEnvelope(remoteAddress: destination, data: buffer), promise: nil)
        return channel
    }

    /// Sends the reports now, after the stream's last packet: Lyre's sent report lets the receiver ask for
    /// last packets that were lost, which no later packet shows missing (streaming.md §4.1).
    func reportNow() { sendReports?() }

    /// Ends the link: TEARDOWN first when `teardown` and the connection is still up (its answer waited for a
    /// second at most), then closes everything. Completes once it is closed.
    func closing(teardown: Bool) -> EventLoopFuture<Void> {
        let said = teardown && !client.isClosed
            ? client.send("TEARDOWN", headers: [("Session", sessionID)], timeout: 1).map { _ in }
            : client.channel.eventLoop.makeSucceededVoidFuture()
        // A TEARDOWN that failed (the receiver gone meanwhile) ends the link all the same.
        return said.recover { _ in }.map { [self] in
            reportTask?.cancel()
            client.close()
            timing.dismiss(timingAdmission)
            rtp.close(promise: nil)
            rtcp.close(promise: nil)
        }
    }
}
