import Foundation
import LyreClock
import LyreWire
import NIOConcurrencyHelpers

/// The receiver's side of the timing exchange (streaming.md §5), on its own thread: 5 requests 20 ms
/// apart, then one a second, each answer turned into an offset and round trip for the session's playout.
///
/// Its own thread and the kernel's receive time (`TimingSocket`) keep `t4` true when the event loops are
/// busy: a `t4` read late on a loaded machine once moved the offset by a millisecond and more, and the
/// playout then slewed its way through the first seconds of audio.
///
/// `@unchecked Sendable`: the socket and the exchange's state are used by the client's thread only (`close`
/// only shuts the socket down); `stopped` is locked.
final class TimingClient: @unchecked Sendable {
    /// One answered exchange: when it completed (local clock), sender-minus-local offset and round trip, ns.
    typealias Sample = (localTime: UInt64, offset: Int64, delay: Int64)

    private let socket: TimingSocket
    private let peer: String
    private let peerPort: UInt16
    private let onSample: @Sendable (Sample) -> Void
    private let onDropped: @Sendable () -> Void
    private let stopped = NIOLockedValueBox(false)
    private let authenticator: TimingAuthenticator?

    /// Binds on `host` and starts asking `peer`:`peerPort` at once. With `authenticator` (a paired session,
    /// pairing.md §6.4), requests carry a tag and a reply whose tag does not verify is dropped.
    init(host: String, peer: String, peerPort: UInt16, authenticator: TimingAuthenticator? = nil,
         onSample: @escaping @Sendable (Sample) -> Void, onDropped: @escaping @Sendable () -> Void) throws(SocketError) {
        self.authenticator = authenticator
        socket = try TimingSocket(host: host)
        self.peer = peer
        self.peerPort = peerPort
        self.onSample = onSample
        self.onDropped = onDropped
        let thread = Thread { [self] in loop() }
        thread.name = "lyred-timing"
        thread.start()
    }

    /// Stops the thread at once (its wait ends with the socket's shutdown); the socket closes with the client.
    func close() {
        stopped.withLockedValue { $0 = true }
        socket.shutdown()
    }

    private func loop() {
        var sequence: UInt32 = 0
        var outstanding: [UInt32: UInt64] = [:]
        var next = HostClock.now()
        while !stopped.withLockedValue({ $0 }) {
            if HostClock.now() >= next {
                sequence &+= 1
                let t1 = HostClock.now()
                outstanding[sequence] = t1
                if outstanding.count > 16, let oldest = outstanding.keys.min() { outstanding[oldest] = nil }
                let request = TimingPacket(kind: .request, sequence: sequence, t1: t1).serialized()
                socket.send(authenticator?.seal(request) ?? request, to: peer, port: peerPort)
                next = t1 + (sequence < 5 ? 20_000_000 : 1_000_000_000)
            }
            // Until the next request is due: `close()` ends the wait sooner.
            let wait = Int(max(1, (Int64(bitPattern: next) - Int64(bitPattern: HostClock.now())) / 1_000_000))
            guard let datagram = socket.receive(timeoutMilliseconds: wait) else { continue }
            let bytes = authenticator.map { $0.open(datagram.bytes) } ?? datagram.bytes
            guard datagram.host == peer, datagram.port == peerPort, let bytes, let packet = TimingPacket(parsing: bytes),
                packet.kind == .response, let t1 = outstanding.removeValue(forKey: packet.sequence), t1 == packet.t1
            else {
                onDropped()
                continue
            }
            let (offset, delay) = packet.offsetAndDelay(t4: datagram.arrival)
            onSample((datagram.arrival, offset, delay))
        }
    }
}
