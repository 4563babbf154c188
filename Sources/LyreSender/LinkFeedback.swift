import LyreClock
import LyreSRTP
import LyreWire
import NIOCore
import Synchronization

/// A room's RTCP feedback at the sender: what arrives on the link's RTCP socket, taken only from the
/// receiver's own RTCP address and for this stream's SSRC.
/// - Generic NACKs (streaming.md §4.1): each packet asked for is resent byte for byte, within
///   `RetransmissionBudget`'s limits, from what the timeline kept.
/// - Receiver reports with Lyre's reception report (§4.2): the room's link quality.
/// Everything else is dropped and counted; the stream goes on.
///
/// Sendable: state is behind `lock`, which is a leaf: nothing outside this class is called while it is held.
/// Runs on the link's event loop.
final class LinkFeedback: Sendable {
    private struct State {
        var expected: SocketAddress?
        var budget: RetransmissionBudget
        var counters = RetransmissionReport(requested: 0, resent: 0, unavailable: 0, refused: 0, dropped: 0)
        var lookup: (@Sendable (UInt16) -> [UInt8]?)?
        var send: (@Sendable ([UInt8]) -> Void)?
        /// Reads SRTCP (a paired session): nil for what does not verify.
        var srtcp: SRTPSession?
        var quality: LinkQuality?
        /// RTP packets and payload bytes sent to this room (for sender reports and the loss figure).
        var packetsSent: UInt32 = 0
        var octetsSent: UInt32 = 0
        /// The highest sequence number sent to this room, for Lyre's sent report (§4.1).
        var highestSent: UInt16?
        /// When the last datagram from the receiver was taken (or feedback started), sender clock.
        var lastHeard: UInt64?
    }

    let ssrc: UInt32
    private let lock: Mutex<State>

    init(ssrc: UInt32, bitrate: Int) {
        self.ssrc = ssrc
        // The cap: the stream's own bitrate, with a second of it to spend at once (a burst of losses).
        lock = Mutex(State(budget: RetransmissionBudget(bytesPerSecond: Double(bitrate) / 8)))
    }

    /// Starts taking feedback from `receiver`: resends from `lookup`, sent with `send`; with `srtcp` (a paired
    /// link), the feedback is SRTCP and what does not verify under it is dropped (pairing.md §6.3).
    func start(receiver: SocketAddress, lookup: @escaping @Sendable (UInt16) -> [UInt8]?,
               srtcp: SRTPSession? = nil, now: UInt64 = HostClock.now(),
               send: @escaping @Sendable ([UInt8]) -> Void) {
        lock.withLock {
            $0.expected = receiver
            $0.lastHeard = now
            $0.lookup = lookup
            $0.srtcp = srtcp
            $0.send = send
        }
    }

    var report: RetransmissionReport { lock.withLock { $0.counters } }

    /// How long nothing has come from the receiver, at `now`; nil before feedback started.
    func silence(now: UInt64 = HostClock.now()) -> UInt64? {
        lock.withLock { state in state.lastHeard.map { SessionSilence.silence(since: $0, now: now) } }
    }

    /// The room's link quality from its last reception report; nil before the first.
    var quality: LinkQuality? { lock.withLock { $0.quality } }

    /// RTP packet `sequence` of `payloadBytes` went to the room.
    func sent(sequence: UInt16, payloadBytes: Int) {
        lock.withLock {
            $0.packetsSent &+= 1
            $0.octetsSent &+= UInt32(truncatingIfNeeded: payloadBytes)
            if $0.highestSent.map({ Int16(bitPattern: sequence &- $0) > 0 }) ?? true { $0.highestSent = sequence }
        }
    }

    /// The reports to send now, as one compound RTCP datagram (nil when there are none): the sender report
    /// (§4.2) when the room takes reports, `now` on the sender's clock and `rtpTime` the stream's timestamp
    /// for it; and Lyre's sent report (§4.1) when it takes NACKs and something was sent.
    func reports(now: UInt64, rtpTime: UInt32, kinds: Set<FeedbackHeader.Kind>) -> [UInt8]? {
        lock.withLock {
            var packets: [[UInt8]] = []
            if kinds.contains(.report) {
                packets.append(RTCPSenderReport(ssrc: ssrc, ntpTime: NTPTime.from(nanoseconds: now), rtpTime: rtpTime,
                                                packetCount: $0.packetsSent, octetCount: $0.octetsSent).serialized())
            }
            if kinds.contains(.nack), let highest = $0.highestSent {
                packets.append(LyreSentReport(ssrc: ssrc, highestSequence: highest).serialized())
            }
            return packets.isEmpty ? nil : RTCPPacket.compound(packets)
        }
    }

    /// A datagram on the link's RTCP socket.
    func received(_ datagram: [UInt8], from source: SocketAddress, now: UInt64 = HostClock.now()) {
        let (asked, lookup) = lock.withLock { state -> ([UInt16], (@Sendable (UInt16) -> [UInt8]?)?) in
            guard let expected = state.expected, let lookup = state.lookup, source == expected,
                case .success(let rtcp) = RTCPPacket.read(datagram, through: state.srtcp)
            else {
                state.counters.dropped += 1
                return ([], nil)
            }
            state.lastHeard = now
            var asked: [UInt16] = []
            for packet in rtcp {
                switch packet {
                case .nack(let nack) where nack.mediaSSRC == ssrc:
                    asked += nack.sequences
                case .receiverReport(let report):
                    guard let block = report.blocks.first(where: { $0.ssrc == ssrc }) else { continue }
                    var quality = state.quality ?? LinkQuality()
                    quality.update(block, now: now)
                    state.quality = quality
                case .lyreReception(let reception) where reception.mediaSSRC == ssrc:
                    var quality = state.quality ?? LinkQuality()
                    quality.update(reception, packetsSent: state.packetsSent)
                    state.quality = quality
                case .nack, .lyreReception: state.counters.dropped += 1  // for another stream
                case .senderReport, .lyreSent, .other: continue
                }
            }
            return (asked, lookup)
        }
        guard let lookup, !asked.isEmpty else { return }
        // Looked up without `lock`: the lookup takes the playback's lock, and the playback reads this feedback
        // under its own lock (`linkQualities`, the rooms' report). Taken in both orders, two threads would each
        // wait for the other's lock.
        let found = asked.map { ($0, lookup($0)) }
        let (packets, send) = lock.withLock { state -> ([[UInt8]], (@Sendable ([UInt8]) -> Void)?) in
            var packets: [[UInt8]] = []
            for (sequence, packet) in found {
                state.counters.requested += 1
                guard let packet else {
                    state.counters.unavailable += 1
                    continue
                }
                guard state.budget.allow(sequence: sequence, bytes: packet.count, now: now) == .send else {
                    state.counters.refused += 1
                    continue
                }
                state.counters.resent += 1
                packets.append(packet)
            }
            return (packets, state.send)
        }
        if let send { for packet in packets { send(packet) } }
    }
}

/// What a room's receiver reports of its link (streaming.md §4.2), as `lyre play` and `lyre group` show it.
public struct LinkQuality: Sendable, Equatable, Codable {
    /// Packets the network lost on the first try, % of those sent, since the session began.
    public var lossPercent = 0.0
    /// Packets the network lost on the first try; of them, those resent in time, those rebuilt from FEC,
    /// and those never played (concealed).
    public var missed = 0
    public var recovered = 0
    public var recoveredByFEC = 0
    public var lost = 0
    /// Frames (48 kHz) of concealment the room played.
    public var concealedFrames = 0
    /// Interarrival jitter, ms (RFC 3550).
    public var jitterMilliseconds = 0.0
    /// Round trip from the last sender report to the receiver's answer, ms; nil before one.
    public var roundTripMilliseconds: Double?

    public init() {}

    /// A report block at `now` (sender clock): jitter and, when it answers a sender report, the round trip
    /// (RFC 3550 §6.4.1: arrival − LSR − DLSR, on the compact NTP scale of the sender's own clock).
    mutating func update(_ block: RTCPReportBlock, now: UInt64) {
        jitterMilliseconds = Double(block.jitter) / 48
        guard block.lastSenderReport != 0 else { return }
        let trip = NTPTime.compact(nanoseconds: now) &- block.lastSenderReport &- block.delaySinceLastSenderReport
        // More than a minute is a report that makes no sense (or a forged one): no round trip from it.
        if trip < 60 << 16 { roundTripMilliseconds = Double(NTPTime.nanoseconds(compact: trip)) / 1e6 }
    }

    mutating func update(_ reception: LyreReceptionReport, packetsSent: UInt32) {
        missed = Int(reception.missed)
        recovered = Int(reception.recoveredByRetransmission)
        recoveredByFEC = Int(reception.recoveredByFEC)
        lost = Int(reception.lost)
        concealedFrames = Int(reception.concealedFrames)
        lossPercent = packetsSent > 0 ? min(100, Double(missed) * 100 / Double(packetsSent)) : 0
    }

    /// `loss 4.8% (22 of 22 recovered), jitter 0.2 ms, rtt 0.3 ms`: for a status line.
    public var summary: String {
        let repaired = recovered + recoveredByFEC
        let loss = "loss \(NumberText.fixed(lossPercent))%" + (missed > 0 ? " (\(repaired) of \(missed) recovered)" : "")
        let rtt = roundTripMilliseconds.map { ", rtt \(NumberText.fixed($0)) ms" } ?? ""
        return loss + ", jitter \(NumberText.fixed(jitterMilliseconds)) ms" + rtt
    }
}

/// Passes what arrives on a link's RTCP socket to its feedback.
final class RTCPInput: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let feedback: LinkFeedback

    init(_ feedback: LinkFeedback) { self.feedback = feedback }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        feedback.received(Array(envelope.data.readableBytesView), from: envelope.remoteAddress)
    }
}
