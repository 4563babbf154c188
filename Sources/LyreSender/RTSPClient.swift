import Dispatch
import LyreRTSP
import LyreWire
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The sender's end of an RTSP connection (streaming.md §1), on SwiftNIO: the same framing and
/// `RTSPPeerHandler` as the receiver's end, so requests in both directions are numbered and matched by
/// `CSeq` in one place. `request` blocks its caller (never an event loop) until the answer comes. The
/// receiver's own requests (session-end notices, remote commands) and the loss of the connection are
/// handed, in the order they happened, to `onRequest` and `onClose` on a serial queue of the client's own,
/// off the event loop, because what they start may wait on other requests; a request is answered through
/// `reply`, at once or later, from any thread.
final class RTSPClient: Sendable {
    typealias Failure = LyreSenderError

    /// A reply to one of the receiver's requests: status and headers.
    typealias Reply = @Sendable (Int, [(String, String)]) -> Void

    /// One loop for every connection and media socket of the process's playbacks.
    static var eventLoopGroup: MultiThreadedEventLoopGroup { .singleton }

    let channel: Channel
    let host: String
    let port: UInt16
    /// Where `onRequest` and `onClose` run.
    private let events: DispatchQueue
    /// Set from the TLS handshake's verify callback, which is made before `self` is: a reference it can hold.
    private final class Flag: Sendable { let raised = Mutex(false) }
    private let mismatch = Flag()

    /// TLS to a paired receiver (Protocol/pairing.md §6): the sender's context, and the key the receiver
    /// must prove it holds.
    struct PinnedTLS: Sendable {
        let context: NIOSSLContext
        let key: [UInt8]
    }

    /// With `tls`, the connection is TLS 1.3 and the handshake fails unless the receiver holds the pinned
    /// key (`keyMismatch` then says so).
    init(host: String, port: UInt16, connectTimeout: TimeAmount = .seconds(5), tls: PinnedTLS? = nil,
         onRequest: @escaping @Sendable (RTSPMessage, @escaping Reply) -> Void,
         onClose: @escaping @Sendable () -> Void) throws(Failure)
    {
        let events = DispatchQueue(label: "lyre-rtsp-events")
        events.setSpecific(key: Self.eventsKey, value: true)
        let mismatch = self.mismatch
        do {
            let bootstrap = ClientBootstrap(group: Self.eventLoopGroup)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connectTimeout(connectTimeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            let handler = try NIOSSLClientHandler(context: tls.context, serverHostname: nil) { certificates, promise in
                                let proven = certificates.first.flatMap(TLSIdentity.ed25519Key(of:))
                                if proven != tls.key { mismatch.raised.withLock { $0 = true } }
                                promise.succeed(proven == tls.key ? .certificateVerified : .failed)
                            }
                            try channel.pipeline.syncOperations.addHandler(handler)
                        }
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(RTSPPeerHandler())
                        try channel.pipeline.syncOperations.addHandler(ReceiverRequests(events: events, onRequest: onRequest, onClose: onClose))
                    }
                }
            // A numeric address as it is (with its zone, when link-local), a name through NIO's resolver.
            if let address = try? SocketAddress.numeric(host, port: Int(port)) {
                channel = try bootstrap.connect(to: address).wait()
            } else {
                channel = try bootstrap.connect(host: host, port: Int(port)).wait()
            }
        } catch {
            // An fe80:: address needs its interface; the kernel only says "Invalid argument".
            if HostPort.lacksZone(host) {
                throw .connectionLost("cannot connect to \(HostPort.text(host, port)): a link-local address needs its interface, as in [\(host)%eth0]:\(port)")
            }
            throw .connectionLost("cannot connect to \(HostPort.text(host, port)): \(Self.describe(error))")
        }
        self.host = host
        self.port = port
        self.events = events
    }

    var isClosed: Bool { !channel.isActive }

    /// True when the TLS handshake failed because the receiver holds another key than the pinned one.
    var keyMismatch: Bool { mismatch.raised.withLock { $0 } }

    /// The local address the connection uses: the host media and timing sockets bind on.
    var localHost: String { channel.localAddress?.hostText ?? "127.0.0.1" }

    /// Sends a request and waits for its response (at most `timeout` seconds). Not on an event loop.
    func request(_ method: String, uri: String? = nil, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 5)
        throws(Failure) -> RTSPMessage
    {
        let request = RTSPRequest(method, uri: uri ?? "rtsp://\(HostPort.uri(host, port))/", headers: headers, body: body, timeout: timeout)
        do {
            return try channel.rtspRequest(request).wait()
        } catch RTSPPeerStateMachine<Int>.Failure.closed {
            throw .connectionLost("the receiver closed the connection")
        } catch RTSPPeerStateMachine<Int>.Failure.timeout(let method, let seconds) {
            throw .timedOut(method: method, seconds: seconds)
        } catch {
            throw Failure(description: "\(error)")
        }
    }

    /// Waits until what the connection has told `onRequest` and `onClose` so far has been handled: after a
    /// request failed because the connection closed, the owner knows why it closed.
    /// Returns at once when called from those handlers themselves.
    func drainEvents() {
        guard DispatchQueue.getSpecific(key: Self.eventsKey) == nil else { return }
        events.sync {}
    }

    private static let eventsKey = DispatchSpecificKey<Bool>()

    func close() { channel.close(promise: nil) }

    private static func describe(_ error: Error) -> String {
        if let error = error as? IOError { return error.description }
        return "\(error)"
    }
}

/// Passes the receiver's requests and the connection's end to the client's owner, on its queue.
private final class ReceiverRequests: ChannelInboundHandler {
    typealias InboundIn = RTSPFrame
    typealias OutboundOut = RTSPOutbound

    let events: DispatchQueue
    let onRequest: @Sendable (RTSPMessage, @escaping RTSPClient.Reply) -> Void
    let onClose: @Sendable () -> Void

    init(events: DispatchQueue, onRequest: @escaping @Sendable (RTSPMessage, @escaping RTSPClient.Reply) -> Void,
         onClose: @escaping @Sendable () -> Void) {
        self.events = events
        self.onRequest = onRequest
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Interleaved frames from a receiver are not part of Lyre (it sends none): ignored.
        guard case .message(let request) = unwrapInboundIn(data) else { return }
        let channel = context.channel
        let cseq = request.cseq
        let onRequest = onRequest
        events.async {
            onRequest(request) { status, headers in
                channel.writeAndFlush(RTSPOutbound.response(.response(status, cseq: cseq, headers: headers)), promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        events.async(execute: onClose)
        context.fireChannelInactive()
    }
}
