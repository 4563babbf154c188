import LyreClock
import LyreWire
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Answers receivers' timing requests with the sender's clock (streaming.md §5), on its own thread: one
/// responder per playback and local address, for all of its rooms (each room is admitted by its address
/// and, over TLS, its timing key). Anything that is not a timing request from an admitted receiver is
/// dropped and counted.
///
/// `t2` is the kernel's receive time, so a busy sender answers late without skewing the exchange; `t3` is
/// taken just before the reply is sent. The thread is a dedicated one because `t3` must be taken just
/// before the send: on a shared event loop a reply could wait behind other work after its stamp.
///
/// `@unchecked Sendable`: the socket is received from and sent on by the responder thread only (`close`
/// shuts it down, which ends the thread's wait); the rest is locked.
final class TimingResponder: @unchecked Sendable {
    let port: UInt16
    private let socket: TimingSocket
    private let state = Mutex(State())

    private struct State {
        var stopped = false
        var dropped = 0
        var nextToken = 0
        /// By receiver address: each admitted room's key (nil: a room whose exchange is not authenticated).
        var peers: [String: [Int: TimingAuthenticator?]] = [:]
    }

    /// A room admitted with `admit`, to `dismiss` when it leaves.
    struct Admission: Sendable {
        fileprivate let peer: String
        fileprivate let token: Int
    }

    /// Binds on `host` (the local address of the rooms' RTSP connections) on any port.
    init(host: String) throws(SocketError) {
        socket = try TimingSocket(host: host)
        port = socket.port
        do {
            try DedicatedThread.detach("lyre-timing") { [self] in loop() }
        } catch {
            throw SocketError(description: error.description)
        }
    }

    /// Answers `peer` from now on; with `authenticator`, only its requests whose tag verifies, with tagged
    /// replies (pairing.md §6.4).
    func admit(peer: String, authenticator: TimingAuthenticator?) -> Admission {
        state.withLock { s in
            s.nextToken += 1
            s.peers[peer, default: [:]][s.nextToken] = authenticator
            return Admission(peer: peer, token: s.nextToken)
        }
    }

    func dismiss(_ admission: Admission) {
        state.withLock { s in
            s.peers[admission.peer]?[admission.token] = nil
            if s.peers[admission.peer]?.isEmpty == true { s.peers[admission.peer] = nil }
        }
    }

    var droppedCount: Int { state.withLock { $0.dropped } }

    /// Ends the thread at once; the socket closes with the responder.
    func close() {
        state.withLock { $0.stopped = true }
        socket.shutdown()
    }

    private func loop() {
        while !state.withLock({ $0.stopped }) {
            guard let datagram = socket.receive(timeoutMilliseconds: -1) else { continue }
            let keys = state.withLock { s in s.peers[datagram.host].map { Array($0.values) } ?? [] }
            // A tagged request opens under one of its address's keys; a plain one is answered only when a
            // room at that address has no key.
            var request: (packet: TimingPacket, key: TimingAuthenticator?)?
            for key in keys {
                guard let bytes = key.map({ $0.open(datagram.bytes) }) ?? datagram.bytes,
                    let packet = TimingPacket(parsing: bytes[...]), packet.kind == .request
                else { continue }
                request = (packet, key)
                if key != nil { break }
            }
            guard let request else {
                state.withLock { $0.dropped += 1 }
                continue
            }
            var reply = TimingPacket(kind: .response, sequence: request.packet.sequence, t1: request.packet.t1, t2: datagram.arrival)
            reply.t3 = HostClock.now()
            let serialized = reply.serialized()
            socket.send(request.key?.seal(serialized) ?? serialized, to: datagram.host, port: datagram.port)
        }
    }
}
