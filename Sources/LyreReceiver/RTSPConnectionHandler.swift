import FoundationEssentials
import Logging
import LyreAudio
import LyreClock
import LyrePairing
import LyreSRTP
import LyreRTSP
import LyreWire
import NIOCore
import NIOPosix

/// Why a session ended; the first four are told to the sender (streaming.md §7).
enum SessionEnd: Equatable {
    case takenOver(by: String)
    case shutdown
    case timeout
    /// The sender was unpaired on the receiver (pairing.md §6.5).
    case unpaired
    case teardown
    case connectionClosed

    var notice: ReceiverNotice.SessionEnd.Reason? {
        switch self {
        case .takenOver: .takenOver
        case .shutdown: .shutdown
        case .timeout: .timeout
        case .unpaired: .unpaired
        case .teardown, .connectionClosed: nil
        }
    }
}

/// One RTSP connection: answers the sender's requests and owns its session's media sockets, timing
/// exchange and playout. Lives on the receiver's event loop, above the `RTSPPeerHandler` that numbers its
/// own requests to the sender and matches their answers.
final class RTSPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = RTSPFrame
    typealias OutboundOut = RTSPOutbound

    private let registry: SessionRegistry
    private var logger: Logger
    private var context: ChannelHandlerContext?
    /// Nil until ANNOUNCE, and again once the session ends.
    private var session: ReceiverSession?
    /// Set once the sender was told its session ended and the connection's output was shut (`end`): what the
    /// sender sends meanwhile is read and dropped.
    private var toldEnd = false
    /// What the session's ANNOUNCE asked: kept after it ends, for the log.
    private var terms: AnnounceTerms?
    /// How the session meets the receiver's others: over another (`Lyre-Mix`, streaming.md §7) or as the main
    /// one, spoken audio, an overlay's own volume.
    private(set) var mix = SessionMix.none
    var senderName: String { terms?.senderName ?? "RTSP sender" }
    /// The sender's stable id from `Lyre-Sender-ID` (32 hex digits), for the log; nil when it sent none or
    /// something else.
    var senderID: DeviceID? { terms?.senderID }

    /// The sender as the log names it: its name, quoted, and its id when it sent one.
    var senderLabel: String { Printable.quoted(senderName) + (senderID.map { " (id \($0))" } ?? "") }
    /// The session's media path and playout, from SETUP to the session's end.
    private var media: SessionMedia?
    var controller: PlayoutController? { media?.controller }
    private var timing: TimingClient?
    private var timingPort: UInt16?
    /// The session's SRTP, when its SDP came over TLS with a key (pairing.md §6): the sender's RTP and RTCP in,
    /// and this end's RTCP out (`srtcp`), under the same key.
    private var srtp: SRTPSession?
    private var srtcp: SRTPSession?
    private var peerIP = ""
    /// When the sender last sent a request (or interleaved data) on this connection.
    private var lastRequest = HostClock.now()
    /// When the sender was last heard from: a request, or its session's media.
    var lastActivity: UInt64 { max(lastRequest, media?.lastMedia ?? 0) }
    private var timer: RepeatedTask?
    // Now playing and remote control (now-playing.md).
    private var nowPlaying: NowPlayingInfo?
    private var artworkPath: String?
    private var artworkType: Artwork.ImageType?
    private var enabled = EnabledCommands([])
    /// The rooms of this session's playback, as its sender tells them (streaming.md §3 `room`); empty for one room.
    private(set) var rooms: [String] = []
    private var nowPlayingUpdates = 0
    /// Relayed commands waiting for the sender's answer, to be told when the session ends first.
    private var pendingCommands: [Int: EventLoopPromise<RemoteCommandOutcome>] = [:]
    private var nextCommand = 0
    /// This connection's number, for pairing.
    private let number: Int
    /// The Ed25519 key the peer proved in the TLS handshake (nil on plain RTSP): read at its first request,
    /// which comes after the handshake.
    private lazy var peerKey: [UInt8]? = context.flatMap { RTSPPeerKey.of($0.channel) }
    /// The key this connection's sender proved over TLS, nil on plain RTSP.
    var senderKey: [UInt8]? { peerKey }

    init(registry: SessionRegistry, logger: Logger) {
        self.registry = registry
        self.logger = logger
        number = registry.connectionNumber()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        peerIP = context.remoteAddress?.hostText ?? ""
        logger[metadataKey: "peer"] = "\(context.remoteAddress.map { "\($0)" } ?? "?")"
        registry.opened(self)
    }

    /// Closes the connection (the registry makes room for a new one).
    func close() { context?.close(promise: nil) }

    func channelInactive(context: ChannelHandlerContext) {
        registry.closed(self)
        if let pairing = registry.pairing {
            let before = pairing.pending
            pairing.connectionClosed(number)
            if pairing.pending != before { registry.changed(.pairing) }
        }
        end(.connectionClosed)
        self.context = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // After the session-end notice the output is shut: what the sender sent meanwhile is not answered.
        guard !toldEnd else { return }
        registry.count(\.badRequests)
        if let parseError = error as? RTSPParseError {
            logger.debug("bad RTSP input: \(parseError)")
            send(.response(parseError.status, cseq: nil, headers: [("Connection", "close")]))
        } else {
            logger.debug("connection error: \(error)")
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let dropped = event as? RTSPPeerDropped else { return context.fireUserInboundEventTriggered(event) }
        guard !toldEnd else { return }
        registry.count(\.badRequests)
        logger.debug("dropped RTSP input: \(dropped.drop)")
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !toldEnd else { return }
        lastRequest = HostClock.now()
        switch unwrapInboundIn(data) {
        case .message(let message):
            handle(message)
        case .oversizedMessage(let message, let length):
            registry.count(\.badRequests)
            logger.debug("refused a \(length)-byte \(message.method ?? "response") body")
            if message.method != nil {
                refuse(413, cseq: message.cseq, "a body of \(length) bytes is over the limit of \(RTSPParser.Limits().body)")
            }
        case .interleaved(let channel, let payload):
            guard let media, media.isInterleaved else {
                // Interleaved data on a connection whose session does not use TCP (streaming.md §2): nothing
                // any sender does. The connection is closed, so that a flood of it costs one frame.
                dropInterleaved(.foreign)
                logger.debug("interleaved data outside an interleaved session; closing")
                context.close(promise: nil)
                return
            }
            media.interleaved(channel: channel, payload)
        case .oversizedInterleaved:
            dropInterleaved(.malformed)
        }
    }

    /// Counts interleaved data dropped: in the session's statistics when there is one, and receiver-wide.
    private func dropInterleaved(_ kind: MediaIngress.Dropped) {
        if let media { media.drop(kind) } else { registry.count(\.droppedMedia) }
    }

    // MARK: requests

    private func handle(_ request: RTSPMessage) {
        // `RTSPPeerHandler` below answers a request without a CSeq (400) and does not pass it up.
        guard let cseq = request.cseq else { return }
        let method = request.method ?? ""
        logger.trace("\(method) \(request.uri ?? "")")
        switch ReceiverSession.route(method, naming: SessionHeader.id(request.headers[SessionHeader.name]), on: session) {
        case .refuse(let refusal, let listing):
            refuse(refusal, cseq: cseq, headers: listing.map { [($0, ReceiverSession.methodList)] } ?? [])
        case .take(.options):
            let id = registry.configuration.deviceID.map { [(ReceiverIDHeader.name, $0)] } ?? []
            send(.response(200, cseq: cseq, headers: [("Public", ReceiverSession.methodList)] + id))
        case .take(.announce): announce(request, cseq: cseq)
        case .take(.setup): setup(request, cseq: cseq)
        case .take(.record): record(request, cseq: cseq)
        case .take(.flush): flush(request, cseq: cseq)
        case .take(.setParameter): setParameter(request, cseq: cseq)
        case .take(.getParameter): getParameter(request, cseq: cseq)
        case .take(.teardown):
            end(.teardown)
            send(.response(200, cseq: cseq))
        case .take(.pair): pair(request, cseq: cseq)
        }
    }

    private func announce(_ request: RTSPMessage, cseq: Int) {
        let pairing = registry.pairing
        let entry = ReceiverSession.entry(
            access: registry.access.admits(key: peerKey, isPaired: { pairing?.isPaired($0) == true }, receiverName: pairing?.receiverName ?? "NAME"),
            terms: AnnounceTerms.read(request, overTLS: peerKey != nil, latency: registry.configuration.defaultLatencyMilliseconds,
                                      duckDB: registry.configuration.duckDB),
            place: { registry.stage.placement(of: self, mixing: $0.mix != nil) }, name: \.senderName,
            outputAvailable: registry.output.isAvailable)
        let terms: AnnounceTerms
        let over: RTSPConnectionHandler?
        switch entry {
        case .plays(let read, let playing): (terms, over) = (read, playing)
        case .refused(let refusal, let notice):
            if let notice {
                let who = request.headers["Lyre-Sender-Name"] ?? request.headers["User-Agent"] ?? "a sender"
                logger.notice("refused \(Printable.quoted(who)) at \(peerIP): \(notice)")
            }
            return refuse(refusal, cseq: cseq)
        }
        var srtp: SRTPSession?
        var srtcp: SRTPSession?
        if let crypto = terms.crypto {
            do {
                srtp = try SRTPSession(.receive, key: crypto.key)
                srtcp = try SRTPSession(.send, key: crypto.key)
            } catch {
                return refuse(400, cseq: cseq, error.description)
            }
        }
        releaseMedia()
        self.terms = terms
        self.srtp = srtp
        self.srtcp = srtcp
        // A second ANNOUNCE starts over under the same id.
        session = ReceiverSession(id: session?.id ?? Self.newSessionID(), phase: .announced)
        mix.announce(terms, over: over != nil)
        if let over {
            registry.addOverlay(self, over: over, duckDB: mix.overlayDuckDB, interruptsSpokenAudio: terms.interrupts)
        } else {
            registry.claim(self)
        }
        logger.info("session from \(Printable.quoted(senderName)): \(terms.format.encoding.rawValue), latency \(terms.latencyMilliseconds) ms, channels \(terms.channels.rawValue)\(srtp != nil ? ", TLS and SRTP" : "")\(senderID.map { ", sender id \($0)" } ?? "")")
        send(.response(200, cseq: cseq, headers: terms.answer))
    }

    private func setup(_ request: RTSPMessage, cseq: Int) {
        guard let id = session?.id, let terms, let context else {
            send(.response(455, cseq: cseq))
            return
        }
        let asked: SetupTerms
        switch SetupTerms.read(request, overTLS: peerKey != nil, format: terms.format) {
        case .success(let read): asked = read
        case .failure(let refusal): return refuse(refusal, cseq: cseq)
        }
        let transport = asked.transport
        timingPort = asked.timingPort
        let playout: Playout
        do {
            playout = try Playout(
                format: terms.format, latency: UInt64(terms.latencyMilliseconds) * 1_000_000, timed: timingPort != nil,
                channels: terms.channels)
        } catch {
            send(.response(500, cseq: cseq))
            return
        }
        let controller = PlayoutController(playout: playout, senderName: senderName)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let media: SessionMedia
        let reply: EventLoopFuture<TransportSpec>
        switch transport.lower {
        case .tcp(let channels):
            let ingress = MediaIngress(sender: context.remoteAddress, srtp: srtp, ssrc: transport.ssrc, interleaved: channels)
            media = SessionMedia(controller: controller, ingress: ingress, srtcp: srtcp, registry: registry, eventLoop: context.eventLoop)
            reply = context.eventLoop.makeSucceededFuture(TransportSpec(lower: .tcp(channels: channels), ssrc: transport.ssrc))
        case .udp(let client, _):
            // A sender that takes RTCP feedback (NACKs, reports) names its RTCP port: the second client port.
            var feedback: (target: SocketAddress, kinds: Set<FeedbackHeader.Kind>)?
            if !asked.feedback.isEmpty, let client, let target = try? SocketAddress.numeric(peerIP, port: Int(client.1)) {
                feedback = (target, asked.feedback)
            }
            let ingress = MediaIngress(
                sender: context.remoteAddress, srtp: srtp, ssrc: transport.ssrc, fec: asked.fec, feedbackTarget: feedback?.target, feedback: feedback?.kinds ?? [])
            media = SessionMedia(controller: controller, ingress: ingress, srtcp: srtcp, registry: registry, eventLoop: context.eventLoop)
            reply = media.bind(host: context.localAddress?.hostText ?? "127.0.0.1").map { ports in
                TransportSpec(lower: .udp(client: client, server: (ports.rtp, ports.rtcp)), ssrc: transport.ssrc)
            }
        }
        self.media = media
        let (feedback, fec) = (media.feedback, media.fec)
        if let timingPort {
            do {
                let registry = registry
                timing = try TimingClient(
                    host: context.localAddress?.hostText ?? "127.0.0.1", peer: peerIP, peerPort: timingPort,
                    authenticator: asked.timingAuthenticator,
                    onSample: { sample in
                        controller.withPlayout { $0.addTimingSample(localTime: sample.localTime, offset: sample.offset, delay: sample.delay) }
                    },
                    // From the timing thread: counted on the receiver's loop.
                    onDropped: { registry.eventLoop.execute { registry.count(\.droppedTiming) } })
            } catch {
                logger.error("SETUP failed: cannot open the timing socket: \(error)")
                send(.response(500, cseq: cseq))
                return
            }
        }
        let mediaID = ObjectIdentifier(media)
        reply.whenComplete { result in
            let me = bound.value
            // A session that ended while the ports were bound has had its media released, and the ports are
            // closed as they come (SessionMedia.bind). (The bind completes at once on the connection's own loop
            // today, so a pipelined TEARDOWN comes after the answer; setupBound keeps it right whenever it does not.)
            switch ReceiverSession.setupBound(
                asked: id, media: mediaID, on: &me.session, current: me.media.map(ObjectIdentifier.init), bound: result, mix: me.mix)
            {
            case .failure(let refusal):
                if refusal.status == 500, case .failure(let error) = result { me.logger.error("SETUP failed: \(error)") }
                me.refuse(refusal, cseq: cseq)
            case .success((let output, let spec)):
                switch output {
                case .play: me.registry.output.play(controller)
                case .mix(let duckDB, let volume):
                    me.registry.output.mix(controller, duckDB: duckDB)
                    me.registry.output.setOverlayVolume(controller, volume)
                }
                me.startTimer()
                me.send(.response(200, cseq: cseq, headers: SetupTerms.answer(session: id, transport: spec, feedback: feedback, fec: fec)))
            }
        }
    }

    private func record(_ request: RTSPMessage, cseq: Int) {
        guard let id = session?.id, let controller else {
            send(.response(455, cseq: cseq))
            return
        }
        guard let asked = RecordRequest.read(request, timed: timingPort != nil) else {
            send(.response(400, cseq: cseq))
            return
        }
        controller.withPlayout { playout in
            if let sequence = asked.info?.sequence { playout.flush(nextSequence: sequence) }
            // Where the output starts after a resume: what comes before primes the decoder (streaming.md §3).
            playout.record(anchor: asked.anchor, joining: asked.joins, startAt: asked.startAt)
        }
        session?.phase = .recording
        let answer = RecordAnswer(outputLatency: registry.output.outputLatency, outputDelayMilliseconds: registry.outputDelayMilliseconds, echoing: asked)
        send(.response(200, cseq: cseq, headers: [(SessionHeader.name, id)] + answer.headers))
    }

    private func flush(_ request: RTSPMessage, cseq: Int) {
        guard let id = session?.id, let controller else {
            send(.response(455, cseq: cseq))
            return
        }
        let stopped = controller.withPlayout { $0.flush(nextSequence: FlushTerms.nextSequence(request)) }
        session?.phase = .ready
        send(.response(200, cseq: cseq, headers: [(SessionHeader.name, id)] + FlushTerms.answer(stoppedAt: stopped)))
    }

    /// Only on a connection with a session (`handle` refuses the rest), so every parameter is that session's.
    private func setParameter(_ request: RTSPMessage, cseq: Int) {
        switch ParameterChange.read(request) {
        case .failure(let refusal): refuse(refusal, cseq: cseq)
        case .success(.parameters(let update)): setParameters(update, cseq: cseq)
        case .success(.nowPlaying(let info)):
            nowPlaying = info
            nowPlayingUpdates += 1
            registry.nowPlayingChanged(self)
            send(.response(200, cseq: cseq))
        case .success(.artwork(let artwork)): setArtwork(artwork, cseq: cseq)
        }
    }

    private func setParameters(_ update: ParameterUpdate, cseq: Int) {
        if let db = update.volume {
            if mix.takesVolume(db) {
                if let controller { registry.output.setOverlayVolume(controller, db) }
            } else {
                registry.setVolume(db)
            }
        }
        if let roomList = update.rooms, roomList.names != rooms {
            rooms = roomList.names
            logger.info("the playback's rooms: \(rooms.map(Printable.quoted).joined(separator: ", "))")
            registry.roomsChanged(self)
        }
        if let commands = update.commands {
            enabled = commands
            logger.info("\(Printable.quoted(senderName)) accepts: \(RemoteCommand.allCases.filter(commands.commands.contains).map(\.rawValue).joined(separator: ", "))")
            registry.nowPlayingChanged(self)
        }
        send(.response(200, cseq: cseq))
    }

    /// The cover, or none.
    private func setArtwork(_ artwork: Artwork?, cseq: Int) {
        guard let artwork else {
            artworkPath = nil
            artworkType = nil
            registry.artwork?.remove()
            registry.nowPlayingChanged(self)
            return send(.response(200, cseq: cseq))
        }
        artworkType = artwork.type
        // An overlay's cover is not shown (the main session's is) and must not replace the file that is.
        guard mix.overlay == nil, let store = registry.artwork, let context else {
            registry.nowPlayingChanged(self)
            return send(.response(200, cseq: cseq))
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        store.write(artwork, on: context.eventLoop).whenComplete { result in
            let me = bound.value
            switch result {
            case .success where me.registry.active !== me:
                // The session ended while the file was written: it is nobody's artwork any more.
                store.remove()
                me.send(.response(200, cseq: cseq))
            case .success(let path):
                me.artworkPath = path
                me.registry.nowPlayingChanged(me)
                me.send(.response(200, cseq: cseq))
            case .failure(let error):
                me.logger.warning("\(error)")
                me.refuse(500, cseq: cseq, "\(error)")
            }
        }
    }

    /// A step of pairing (Protocol/pairing.md §3): answered by the receiver's pairing, whatever the session.
    private func pair(_ request: RTSPMessage, cseq: Int) {
        guard let pairing = registry.pairing else { return refuse(501, cseq: cseq, "this receiver does not pair") }
        guard let step = request.headers[PairingMessage.stepHeader].flatMap(PairingMessage.Step.init(rawValue:)) else {
            registry.count(\.badRequests)
            return refuse(400, cseq: cseq, "\(PairingMessage.stepHeader) must be start, exchange or confirm")
        }
        guard request.body.count <= PairingMessage.maximumBody else {
            registry.count(\.badRequests)
            return refuse(413, cseq: cseq, "a pairing body is at most \(PairingMessage.maximumBody) bytes")
        }
        let outcome = pairing.step(step, connection: number, body: request.body, peer: peerIP)
        // The page on the receiver shows the PIN as it appears and the paired senders as they change.
        registry.changed(.pairing)
        switch outcome {
        case .success(let body):
            send(.response(200, cseq: cseq, headers: body.isEmpty ? [] : [("Content-Type", "application/octet-stream")], body: body))
        case .failure(let refusal):
            if refusal.status == 400 { registry.count(\.badRequests) }
            var headers = [("Lyre-Error", refusal.message)]
            if let seconds = refusal.retryAfter { headers.append(("Retry-After", String(seconds))) }
            send(.response(refusal.status, cseq: cseq, headers: headers))
        }
    }

    private func refuse(_ refusal: SessionRefusal, cseq: Int, headers: [(String, String)] = []) {
        if refusal.counted { registry.count(\.badRequests) }
        if let detail = refusal.detail { logger.debug("\(refusal.status): \(detail)") }
        let retry = refusal.retryAfter.map { [("Retry-After", String($0))] } ?? []
        send(.response(refusal.status, cseq: cseq, headers: headers + retry + (refusal.reason.map { [Self.errorHeader($0)] } ?? [])))
    }

    /// A 4xx/5xx with the reason in `Lyre-Error`, so a sender can say what went wrong.
    private func refuse(_ status: Int, cseq: Int?, _ reason: String) {
        send(.response(status, cseq: cseq, headers: [Self.errorHeader(reason)]))
    }

    /// `Lyre-Error` with `reason` on one line of at most 300 characters.
    private static func errorHeader(_ reason: String) -> (String, String) {
        ("Lyre-Error", String(reason.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) }.prefix(300)))
    }

    private func getParameter(_ request: RTSPMessage, cseq: Int) {
        let names: [ParameterQuery.Name]
        switch ParameterQuery.read(request) {
        case .success(let read): names = read
        case .failure(let refusal): return refuse(refusal, cseq: cseq)
        }
        let answers: [(String, String)] = names.map { name in
            switch name {
            case .volume: (name.rawValue, "\(registry.volume)")
            case .outputLatency: (name.rawValue, RecordAnswer.milliseconds(registry.output.outputLatency))
            case .outputDelay: (name.rawValue, String(registry.outputDelayMilliseconds))
            case .stats: (name.rawValue, controller?.statistics.text ?? "")
            }
        }
        let body = Array(TextParameters(answers).serialized.utf8)
        send(.response(200, cseq: cseq, headers: body.isEmpty ? [] : [("Content-Type", "text/parameters")], body: body))
    }

    // MARK: now playing and remote control

    /// The session's now-playing state for the receiver's owner.
    func snapshot() -> NowPlayingSnapshot {
        var localAnchor: UInt64?
        if let nowPlaying {
            // Offset is sender minus local; before the first timing sample the clocks are taken as equal.
            let offset: Int64 = controller?.withPlayout { $0.clock.offset(at: HostClock.now()) } ?? 0
            localAnchor = UInt64(clamping: Int64(clamping: nowPlaying.anchor) &- offset)
        }
        return NowPlayingSnapshot(sender: senderName, info: nowPlaying, localAnchor: localAnchor, artworkPath: artworkPath,
                                  artworkType: artworkType, enabled: enabled, updates: nowPlayingUpdates)
    }

    /// Sends a command to this session's sender over its own connection (now-playing.md §4).
    func relay(_ event: RemoteCommandEvent, promise: EventLoopPromise<RemoteCommandOutcome>) {
        guard let context, let sessionID = session?.id else {
            return promise.succeed(RemoteCommandOutcome(.noSession, "nothing is playing"))
        }
        guard enabled.commands.contains(event.command) else {
            return promise.succeed(RemoteCommandOutcome(.disabled, "'\(senderName)' does not accept \(event.command.rawValue) now"))
        }
        let id = nextCommand
        nextCommand += 1
        pendingCommands[id] = promise
        logger.info("relaying \(event.command.rawValue) to \(Printable.quoted(senderName))")
        let notice = ReceiverNotice.command(event).request(session: sessionID)
        let request = RTSPRequest("SET_PARAMETER", uri: serverURI, headers: notice.headers, body: notice.body, timeout: 5)
        let sender = senderName
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.channel.rtspRequest(request).whenComplete { result in
            let outcome: RemoteCommandOutcome
            switch result {
            case .success(let response): outcome = Self.outcome(of: response, command: event.command, sender: sender)
            case .failure(RTSPPeerStateMachine<Int>.Failure.timeout(_, let seconds)):
                outcome = RemoteCommandOutcome(.timeout, "'\(sender)' did not answer \(event.command.rawValue) within \(Int(seconds)) s")
            case .failure: outcome = RemoteCommandOutcome(.noSession, "the session ended")
            }
            bound.value.pendingCommands.removeValue(forKey: id)?.succeed(outcome)
        }
    }

    /// What the sender's answer to a relayed command says.
    static func outcome(of response: RTSPMessage, command: RemoteCommand, sender: String) -> RemoteCommandOutcome {
        let (status, detail) = ReceiverNotice.status(of: response)
        let kind: RemoteCommandOutcome.Kind =
            switch status {
            case .success: .success
            case .noSuchContent: .noSuchContent
            case .commandFailed: .commandFailed
            case .disabled: .disabled
            }
        return RemoteCommandOutcome(kind, kind == .success ? "ok" : "'\(sender)' answered \(kind.rawValue) to \(command.rawValue)\(detail.map { ": \($0)" } ?? "")")
    }

    private var serverURI: String {
        "rtsp://\(context?.localAddress.map { HostPort.uri($0.hostText ?? "", $0.port ?? 0) } ?? "")/"
    }

    // MARK: idle timeout

    /// Once a second: checks that the sender is still there (the timing exchange has its own thread), and
    /// sends the reception report when the sender takes it (§4.2).
    private func startTimer() {
        guard timer == nil, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = SessionPulse.start(
            on: context.eventLoop,
            silence: { SessionSilence.silence(since: bound.value.lastActivity, now: HostClock.now()) },
            gone: {
                let me = bound.value
                me.logger.notice("session from \(Printable.quoted(me.senderName)) timed out")
                me.end(.timeout)
            },
            report: { bound.value.media?.report() })
    }

    // MARK: ending

    private func releaseMedia(drain: Bool = false) {
        timer?.cancel()
        timer = nil
        media?.close()
        let controller = media?.controller
        media = nil
        timing?.close()
        timing = nil
        timingPort = nil
        if let controller {
            logger.info("session from \(Printable.quoted(senderName)) stats: \(controller.statistics.text)")
            registry.output.stopIfPlaying(
                controller, drain: drain, drainLimit: UInt64((terms?.latencyMilliseconds ?? 0) + 200) * 1_000_000)
        }
        nowPlaying = nil
        artworkPath = nil
        artworkType = nil
        enabled = EnabledCommands([])
        nowPlayingUpdates = 0
        let abandoned = pendingCommands
        pendingCommands.removeAll()
        for promise in abandoned.values { promise.succeed(RemoteCommandOutcome(.noSession, "the session ended")) }
    }

    /// A plain session comes while this one, which asked to mix or duck, plays as the main session (there
    /// was nothing to play over when it came): it goes on over the new one, as if it had come after it, at its
    /// own volume; it is not taken over (streaming.md §7). Returns how, or nil when it did not ask to mix.
    func playOver() -> MixRequest? {
        guard let how = mix.playOver() else { return nil }
        if let controller { registry.output.demote(controller, duckDB: mix.overlayDuckDB) }
        return how
    }

    /// Ends the session, if any; tells the sender why when it should know, and closes the connection then.
    /// Returns when the connection is closed once the sender was told: when the sender has read the notice and
    /// closed, or 2 s after.
    @discardableResult
    func end(_ reason: SessionEnd) -> EventLoopFuture<Void>? {
        guard session != nil || controller != nil else { return nil }
        // Told to the sender: the sample where the output stopped, as FLUSH answers it, so that a sender that
        // waits for this room resumes there (streaming.md §7).
        let stopped = reason.notice == nil ? nil : controller.flatMap { $0.withPlayout { $0.flush(nextSequence: nil) } }
        releaseMedia(drain: reason == .teardown || reason == .connectionClosed)
        session = nil
        mix = .none
        registry.release(self)
        logger.info("session from \(Printable.quoted(senderName)) ended: \(reason)")
        guard let told = reason.notice, let context else { return nil }
        var byName: String?
        if case .takenOver(let by) = reason { byName = by }
        let notice = ReceiverNotice.sessionEnd(.init(told, takenOverBy: byName, stoppedAt: stopped)).request()
        let request = RTSPRequest("SET_PARAMETER", uri: serverURI, headers: notice.headers, body: notice.body)
        context.writeAndFlush(wrapOutboundOut(.request(request, promise: nil)), promise: nil)
        // The output is shut after the notice, not the whole connection: closed with the sender's next request
        // unread, the connection would be reset, and a reset makes the sender's system drop the notice unread.
        // The sender closes once it has read it. A sender that does not is closed 2 s from now (not from the
        // shut, which waits for what was written to go out); where the output cannot be shut alone, at once.
        toldEnd = true
        let channel = context.channel
        let deadline = channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in deadline.cancel() }
        let shut = context.eventLoop.makePromise(of: Void.self)
        shut.futureResult.whenFailure { _ in channel.close(promise: nil) }
        context.close(mode: .output, promise: shut)
        return channel.closeFuture
    }

    /// Sends unless the peer has stopped reading: past the write buffer's high mark (256 KiB) the connection
    /// is closed and counted, rather than holding more for it.
    private func send(_ message: RTSPMessage) {
        guard let context else { return }
        guard context.channel.isWritable else {
            registry.count(\.slowReaders)
            logger.notice("closing a connection that does not read what it is sent")
            context.close(promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(.response(message)), promise: nil)
    }

    static func newSessionID() -> String { DeviceID.randomHex(bytes: 8).uppercased() }
}
