import LyreClock
import LyreWire
import NIOConcurrencyHelpers
import NIOCore

/// A room's answers to its receiver's retransmission requests (streaming.md §4.1): RTCP generic NACKs that
/// arrive on the link's RTCP socket are taken only from the receiver's own RTCP address and for this
/// stream's SSRC; each packet asked for is resent byte for byte, within `RetransmissionBudget`'s limits,
/// from what the timeline kept. Everything else is dropped and counted; the stream goes on.
///
/// Sendable: state is behind `lock`. Runs on the link's event loop.
final class Retransmitter: Sendable {
    private struct State {
        var expected: SocketAddress?
        var budget: RetransmissionBudget
        var counters = RetransmissionReport(requested: 0, resent: 0, unavailable: 0, refused: 0, dropped: 0)
        var lookup: (@Sendable (UInt16) -> [UInt8]?)?
        var send: (@Sendable ([UInt8]) -> Void)?
    }

    let ssrc: UInt32
    private let lock: NIOLockedValueBox<State>

    init(ssrc: UInt32, bitrate: Int) {
        self.ssrc = ssrc
        // The cap: the stream's own bitrate, with a second of it to spend at once (a burst of losses).
        lock = NIOLockedValueBox(State(budget: RetransmissionBudget(bytesPerSecond: Double(bitrate) / 8)))
    }

    /// Starts answering: NACKs from `receiver` only, packets from `lookup`, sent with `send`.
    func start(receiver: SocketAddress, lookup: @escaping @Sendable (UInt16) -> [UInt8]?, send: @escaping @Sendable ([UInt8]) -> Void) {
        lock.withLockedValue {
            $0.expected = receiver
            $0.lookup = lookup
            $0.send = send
        }
    }

    var report: RetransmissionReport { lock.withLockedValue { $0.counters } }

    /// A datagram on the link's RTCP socket.
    func received(_ datagram: [UInt8], from source: SocketAddress, now: UInt64 = HostClock.now()) {
        let (packets, send) = lock.withLockedValue { state -> ([[UInt8]], (@Sendable ([UInt8]) -> Void)?) in
            guard let expected = state.expected, let lookup = state.lookup, source == expected,
                let nacks = try? RTCPGenericNACK.all(in: datagram)
            else {
                state.counters.dropped += 1
                return ([], nil)
            }
            var packets: [[UInt8]] = []
            for nack in nacks {
                guard nack.mediaSSRC == ssrc else {
                    state.counters.dropped += 1
                    continue
                }
                for sequence in nack.sequences {
                    state.counters.requested += 1
                    guard let packet = lookup(sequence) else {
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
            }
            return (packets, state.send)
        }
        if let send { for packet in packets { send(packet) } }
    }
}

/// Passes what arrives on a link's RTCP socket to its retransmitter.
final class RTCPInput: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let retransmitter: Retransmitter

    init(_ retransmitter: Retransmitter) { self.retransmitter = retransmitter }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        retransmitter.received(Array(envelope.data.readableBytesView), from: envelope.remoteAddress)
    }
}
