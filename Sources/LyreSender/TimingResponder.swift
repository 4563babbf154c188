import Foundation
import LyreAudio
import LyreWire
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// Answers receivers' timing requests with the sender's clock (streaming.md §5), on its own thread.
/// Anything that is not a timing request from the session's receiver is dropped and counted.
final class TimingResponder: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let peer: String
    private let dropped = NIOLockedValueBox(0)

    /// Binds on `host` (the address the RTSP connection uses) and answers only `peer`.
    init(host: String, peer: String) throws(SocketError) {
        fd = try IPv4.bindUDP(host: host)
        port = IPv4.localAddress(fd).1
        self.peer = peer
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in loop() }
        thread.name = "lyre-timing"
        thread.start()
    }

    var droppedCount: Int { dropped.withLockedValue { $0 } }

    private let stopped = NIOLockedValueBox(false)

    func close() { stopped.withLockedValue { $0 = true } }

    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 256)
        var from = sockaddr_in()
        while !stopped.withLockedValue({ $0 }) {
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            let t2 = HostClock.now()
            guard n > 0 else { continue }
            guard IPv4.text(from) == peer, let request = TimingPacket(parsing: buffer[0..<n]), request.kind == .request else {
                dropped.withLockedValue { $0 += 1 }
                continue
            }
            var reply = TimingPacket(kind: .response, sequence: request.sequence, t1: request.t1, t2: t2)
            reply.t3 = HostClock.now()
            let bytes = reply.serialized()
            _ = bytes.withUnsafeBytes { raw in
                IPv4.withSockaddr(from) { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) }
            }
        }
        Glibc.close(fd)
    }
}
