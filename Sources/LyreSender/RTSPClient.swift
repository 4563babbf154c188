import Foundation
import LyreAudio
import LyreWire
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// The sender's end of an RTSP connection (streaming.md §1): blocking requests, and a reader thread that
/// matches responses by `CSeq` and passes the receiver's own requests (session-end notices) to a handler.
///
/// `@unchecked Sendable`: mutable state is behind `lock`; the socket is written only with `lock` held.
final class RTSPClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { let description: String }

    let fd: Int32
    let host: String
    let port: UInt16
    private let lock = NIOLock()
    private var responses: [Int: RTSPMessage] = [:]
    private var nextCSeq = 1
    private var closed = false
    private let onRequest: @Sendable (RTSPMessage) -> Void
    private let onClose: @Sendable () -> Void

    init(host: String, port: UInt16, onRequest: @escaping @Sendable (RTSPMessage) -> Void, onClose: @escaping @Sendable () -> Void)
        throws(SocketError)
    {
        fd = try IPv4.connectTCP(host: host, port: port)
        self.host = host
        self.port = port
        self.onRequest = onRequest
        self.onClose = onClose
        let thread = Thread { [self] in readLoop() }
        thread.name = "lyre-rtsp"
        thread.start()
    }

    var isClosed: Bool { lock.withLock { closed } }

    /// Sends a request and waits for its response (at most `timeout` seconds).
    func request(_ method: String, uri: String? = nil, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 5)
        throws(Failure) -> RTSPMessage
    {
        let cseq: Int = lock.withLock {
            defer { nextCSeq += 1 }
            return nextCSeq
        }
        let message = RTSPMessage.request(method, uri: uri ?? "rtsp://\(host):\(port)/", cseq: cseq, headers: headers, body: body)
        guard write(message.serialized()) else { throw Failure(description: "the receiver closed the connection") }
        let deadline = HostClock.now() + UInt64(timeout * 1e9)
        while true {
            if let response = lock.withLock({ responses.removeValue(forKey: cseq) }) { return response }
            if isClosed { throw Failure(description: "the receiver closed the connection") }
            if HostClock.now() > deadline { throw Failure(description: "no answer to \(method) within \(Int(timeout)) s") }
            usleep(300)
        }
    }

    /// Writes raw bytes (a response, or an interleaved frame); false when the connection is gone.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        lock.withLock {
            guard !closed else { return false }
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
    }

    func close() {
        let wasOpen = lock.withLock {
            defer { closed = true }
            return !closed
        }
        if wasOpen { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func readLoop() {
        var parser = RTSPParser()
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        reading: while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            pending += chunk[0..<n]
            do {
                while let frame = try parser.next(&pending) {
                    guard case .message(let message) = frame else { continue }
                    if message.status != nil {
                        if let cseq = message.cseq { lock.withLock { responses[cseq] = message } }
                    } else {
                        write(RTSPMessage.response(200, cseq: message.cseq).serialized())
                        onRequest(message)
                    }
                }
            } catch {
                break reading
            }
        }
        lock.withLock { closed = true }
        Glibc.close(fd)
        onClose()
    }
}
