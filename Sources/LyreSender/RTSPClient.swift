import Foundation
import LyreAudio
import LyreClock
import LyreWire
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// The sender's end of an RTSP connection (streaming.md §1): blocking requests, and a reader thread that
/// matches responses by `CSeq` and passes the receiver's own requests (session-end notices, remote commands)
/// to a handler, which answers them through `reply`, at once or later from any thread.
///
/// `@unchecked Sendable`: mutable state is behind `lock`; the socket is written only with `lock` held.
final class RTSPClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { let description: String }

    let fd: Int32
    let host: String
    let port: UInt16
    private let lock = NIOLock()
    /// Requests waiting for their response, by CSeq.
    private var waiting: [Int: Waiter] = [:]
    private var nextCSeq = 1
    private var closed = false
    /// A reply to one of the receiver's requests: status and headers.
    typealias Reply = @Sendable (Int, [(String, String)]) -> Void
    private let onRequest: @Sendable (RTSPMessage, @escaping Reply) -> Void
    private let onClose: @Sendable () -> Void

    init(host: String, port: UInt16, onRequest: @escaping @Sendable (RTSPMessage, @escaping Reply) -> Void,
         onClose: @escaping @Sendable () -> Void)
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
        let waiter = Waiter()
        let cseq: Int = lock.withLock {
            defer { nextCSeq += 1 }
            waiting[nextCSeq] = waiter
            return nextCSeq
        }
        defer { lock.withLock { waiting[cseq] = nil } }
        let message = RTSPMessage.request(method, uri: uri ?? "rtsp://\(host):\(port)/", cseq: cseq, headers: headers, body: body)
        guard write(message.serialized()) else { throw Failure(description: "the receiver closed the connection") }
        guard waiter.semaphore.wait(timeout: .now() + timeout) == .success else {
            throw Failure(description: "no answer to \(method) within \(Int(timeout)) s")
        }
        guard let response = lock.withLock({ waiter.response }) else {
            throw Failure(description: "the receiver closed the connection")
        }
        return response
    }

    /// One request's wait: signalled with its response, or without one when the connection closes.
    private final class Waiter: @unchecked Sendable {
        // `response` is written by the reader thread under the client's lock, before `semaphore` is signalled.
        let semaphore = DispatchSemaphore(value: 0)
        var response: RTSPMessage?
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
                        let waiter: Waiter? = lock.withLock {
                            guard let cseq = message.cseq, let waiter = waiting[cseq] else { return nil }
                            waiter.response = message
                            return waiter
                        }
                        waiter?.semaphore.signal()
                    } else {
                        let cseq = message.cseq
                        onRequest(message) { [self] status, headers in
                            write(RTSPMessage.response(status, cseq: cseq, headers: headers).serialized())
                        }
                    }
                }
            } catch {
                break reading
            }
        }
        let abandoned = lock.withLock {
            closed = true
            return Array(waiting.values)
        }
        // The owner hears of the loss before any waiting request fails, so it can tell why it failed.
        onClose()
        for waiter in abandoned { waiter.semaphore.signal() }
        Glibc.close(fd)
    }
}
