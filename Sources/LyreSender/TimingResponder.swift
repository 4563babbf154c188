import Foundation
import LyreClock
import LyreWire
import NIOConcurrencyHelpers

/// Answers receivers' timing requests with the sender's clock (streaming.md §5), on its own thread.
/// Anything that is not a timing request from the session's receiver is dropped and counted.
///
/// `t2` is the kernel's receive time, so a busy sender answers late without skewing the exchange; `t3` is
/// taken just before the reply is sent.
///
/// `@unchecked Sendable`: the socket is used by the responder thread only; `dropped` and `stopped` are locked.
final class TimingResponder: @unchecked Sendable {
    let port: UInt16
    private let socket: TimingSocket
    private let peer: String
    private let dropped = NIOLockedValueBox(0)
    private let stopped = NIOLockedValueBox(false)
    private let authenticator: TimingAuthenticator?

    /// Binds on `host` (the address the RTSP connection uses) and answers only `peer`; with `authenticator`,
    /// only requests whose tag verifies, with tagged replies (pairing.md §6.4).
    init(host: String, peer: String, authenticator: TimingAuthenticator? = nil) throws(SocketError) {
        socket = try TimingSocket(host: host)
        port = socket.port
        self.peer = peer
        self.authenticator = authenticator
        let thread = Thread { [self] in loop() }
        thread.name = "lyre-timing"
        thread.start()
    }

    var droppedCount: Int { dropped.withLockedValue { $0 } }

    /// Stops the thread within 200 ms; the socket closes with the responder.
    func close() { stopped.withLockedValue { $0 = true } }

    private func loop() {
        while !stopped.withLockedValue({ $0 }) {
            guard let datagram = socket.receive(timeoutMilliseconds: 200) else { continue }
            let bytes = authenticator.map { $0.open(datagram.bytes) } ?? datagram.bytes
            guard datagram.host == peer, let bytes, let request = TimingPacket(parsing: bytes[...]), request.kind == .request else {
                dropped.withLockedValue { $0 += 1 }
                continue
            }
            var reply = TimingPacket(kind: .response, sequence: request.sequence, t1: request.t1, t2: datagram.arrival)
            reply.t3 = HostClock.now()
            let serialized = reply.serialized()
            socket.send(authenticator?.seal(serialized) ?? serialized, to: datagram.host, port: datagram.port)
        }
    }
}
