import LyreClock
import LyreRTSP
import LyreSRTP
import LyreWire
import NIOCore

/// A session's media path on the receiver's event loop, from SETUP to the session's end: its UDP sockets (or
/// the RTSP connection's interleaved channels), what each packet is (`MediaIngress`), the playout it feeds,
/// and the RTCP feedback the sender takes: NACKs on a timer of their own (streaming.md §4.1), reception
/// reports when asked (§4.2). The RTSP connection handler makes it and ends it; it never answers a request.
final class SessionMedia {
    let controller: PlayoutController
    private var ingress: MediaIngress
    /// This end's RTCP out, under the session's SRTP key, when it is paired (pairing.md §6).
    private let srtcp: SRTPSession?
    private let registry: SessionRegistry
    private let eventLoop: any EventLoop
    /// The RTP and RTCP sockets, once bound (none for interleaved media).
    private var channels: [any Channel] = []
    private var nackTimer: Scheduled<Void>?
    private var closed = false
    /// This end's SSRC in the RTCP it sends.
    private let receiverSSRC = UInt32.random(in: 1...UInt32.max)
    /// When a packet of the session's stream last came.
    private(set) var lastMedia: UInt64 = 0

    var feedback: Set<FeedbackHeader.Kind> { ingress.feedback }
    var fec: FECHeader? { ingress.fec }
    var isInterleaved: Bool { ingress.interleaved != nil }

    init(controller: PlayoutController, ingress: MediaIngress, srtcp: SRTPSession?, registry: SessionRegistry, eventLoop: any EventLoop) {
        self.controller = controller
        self.ingress = ingress
        self.srtcp = srtcp
        self.registry = registry
        self.eventLoop = eventLoop
        controller.withPlayout {
            $0.asksForResends = ingress.feedback.contains(.nack)
            $0.repairsFromFEC = ingress.fec != nil
        }
    }

    /// Binds the session's RTP and RTCP ports on `host`, a pair of neighbours, each read by this media path.
    /// Succeeds with their port numbers.
    func bind(host: String) -> EventLoopFuture<(rtp: UInt16, rtcp: UInt16)> {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        return MediaPorts.bindPair(host: host, eventLoop: eventLoop) { channel, rtcp in
            try channel.pipeline.syncOperations.addHandler(MediaHandler(owner: bound, rtcp: rtcp))
        }.map { ports in
            let me = bound.value
            // Ended while the ports were bound: they are closed at once.
            if me.closed {
                ports.0.close(promise: nil)
                ports.1.close(promise: nil)
            } else {
                me.channels = [ports.0, ports.1]
            }
            return (UInt16(ports.0.localAddress?.port ?? 0), UInt16(ports.1.localAddress?.port ?? 0))
        }
    }

    /// Counts media that was dropped: in the session's statistics, and receiver-wide.
    func drop(_ kind: MediaIngress.Dropped) {
        switch kind {
        case .foreign: controller.withPlayout { $0.countForeign() }
        case .malformed: controller.withPlayout { $0.countMalformed() }
        case .replayed: controller.withPlayout { $0.countReplayed() }
        case .unauthentic: controller.withPlayout { $0.countUnauthentic() }
        }
        registry.count(\.droppedMedia)
    }

    /// Interleaved data on the RTSP connection, on a session that takes it.
    func interleaved(channel: UInt8, _ payload: [UInt8]) {
        take(ingress.interleaved(channel: channel, payload))
    }

    /// A UDP datagram on the session's RTP or RTCP port.
    fileprivate func datagram(_ envelope: AddressedEnvelope<ByteBuffer>, rtcp: Bool) {
        guard !closed else { return registry.count(\.droppedMedia) }
        for outcome in ingress.datagram(envelope.data, from: envelope.remoteAddress, rtcp: rtcp) { take(outcome) }
    }

    /// Does what the ingress made of a packet: media and parity to the playout (asking again for what it
    /// found missing), the sender's reports to the clock and the resends, drops counted.
    private func take(_ outcome: MediaIngress.Outcome) {
        switch outcome {
        case .media(let packet):
            let now = HostClock.now()
            lastMedia = now
            askAgain(controller.withPlayout { $0.receive(packet, arrival: now) })
            armRetransmissionTimer()
        case .parity(let parity):
            controller.withPlayout { $0.receiveParity(parity) }
        case .senderReport(let report):
            controller.withPlayout { $0.senderReport(report, arrival: HostClock.now()) }
        case .senderSent(let sent):
            controller.withPlayout { $0.senderSent(sent, arrival: HostClock.now()) }
            armRetransmissionTimer()
        case .dropped(let kind):
            drop(kind)
        case .ignored:
            break
        }
    }

    /// Asks the sender for packets again with an RTCP generic NACK (streaming.md §4.1), when it takes them.
    private func askAgain(_ sequences: [UInt16]) {
        guard !sequences.isEmpty, ingress.feedback.contains(.nack), let ssrc = ingress.ssrc else { return }
        sendFeedback(RTCPGenericNACK(senderSSRC: receiverSSRC, mediaSSRC: ssrc, sequences: sequences).serialized())
    }

    /// Sends the receiver report and Lyre's reception report (streaming.md §4.2), when the sender takes them.
    func report() {
        guard ingress.feedback.contains(.report), let ssrc = ingress.ssrc else { return }
        sendFeedback(controller.withPlayout { $0.receptionReport(receiverSSRC: receiverSSRC, mediaSSRC: ssrc, now: HostClock.now()) })
    }

    /// RTCP from the session's RTCP port to the sender's.
    private func sendFeedback(_ plain: [UInt8]) {
        guard let target = ingress.feedbackTarget, channels.count == 2, let bytes = srtcp.map({ $0.protectRTCP(plain) }) ?? plain else { return }
        channels[1].writeAndFlush(AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: bytes)), promise: nil)
    }

    /// One timer, for the next time a missing packet is to be asked for again.
    private func armRetransmissionTimer() {
        guard ingress.feedback.contains(.nack), nackTimer == nil, !closed, let next = controller.withPlayout({ $0.nextRetransmission }) else { return }
        let now = HostClock.now()
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        nackTimer = eventLoop.scheduleTask(in: .nanoseconds(Int64(next > now ? next - now : 0))) {
            let me = bound.value
            me.nackTimer = nil
            guard !me.closed else { return }
            me.askAgain(me.controller.withPlayout { $0.retransmissionsDue(now: HostClock.now()) })
            me.armRetransmissionTimer()
        }
    }

    /// Ends the media path: its timer and sockets.
    func close() {
        closed = true
        nackTimer?.cancel()
        nackTimer = nil
        for channel in channels { channel.close(promise: nil) }
        channels = []
    }
}

/// Passes a session's UDP media to its media path.
private final class MediaHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let owner: NIOLoopBound<SessionMedia>
    let rtcp: Bool

    init(owner: NIOLoopBound<SessionMedia>, rtcp: Bool) {
        self.owner = owner
        self.rtcp = rtcp
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner.value.datagram(unwrapInboundIn(data), rtcp: rtcp)
    }
}
