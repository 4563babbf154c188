import LyreClock
import LyreRTSP
import LyreWire
import NIOCore
import NIOPosix
import NIOSSL

/// The sender's end of an RTSP connection (streaming.md §1), on SwiftNIO: the same framing and
/// `RTSPPeerHandler` as the receiver's end, so requests in both directions are numbered and matched by
/// `CSeq` in one place. `connect` and `send` return futures; `connected` and `request` block their caller
/// (never an event loop) until the connection is up or the answer comes. The
/// receiver's own requests (session-end notices, remote commands) and the loss of the connection are
/// handed, in the order they happened, to `onRequest` and `onClose` on the connection's event loop, so that
/// what a request tells is known before a request of the sender's fails because the connection closed:
/// they must not block (what they start that may wait runs elsewhere); a request is answered through
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
    /// Set from the TLS handshake's verify callback, which is made before `self` is: a reference it can hold.
    private let mismatch: Latch

    /// TLS to a paired receiver (Protocol/pairing.md §6): the sender's context, and the key the receiver
    /// must prove it holds.
    struct PinnedTLS: Sendable {
        let context: NIOSSLContext
        let key: [UInt8]
    }

    private init(channel: Channel, host: String, port: UInt16, mismatch: Latch) {
        self.channel = channel
        self.mismatch = mismatch
        self.host = host
        self.port = port
    }

    /// Connects, without blocking: the client once the connection is up, or why it could not be made. With
    /// `tls`, the connection is TLS 1.3 and the handshake fails unless the receiver holds the pinned key
    /// (`keyMismatch` then says so).
    static func connect(host: String, port: UInt16, connectTimeout: TimeAmount = .seconds(5), tls: PinnedTLS? = nil,
                        onRequest: @escaping @Sendable (RTSPMessage, @escaping Reply) -> Void,
                        onClose: @escaping @Sendable () -> Void) -> EventLoopFuture<RTSPClient>
    {
        let mismatch = Latch()
        let bootstrap = ClientBootstrap(group: Self.eventLoopGroup)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        let handler = try NIOSSLClientHandler(context: tls.context, serverHostname: nil) { certificates, promise in
                            let proven = certificates.first.flatMap(TLSIdentity.ed25519Key(of:))
                            if proven != tls.key { mismatch.raise() }
                            promise.succeed(proven == tls.key ? .certificateVerified : .failed)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(RTSPPeerHandler())
                    try channel.pipeline.syncOperations.addHandler(ReceiverRequests(onRequest: onRequest, onClose: onClose))
                }
            }
        // A numeric address as it is (with its zone, when link-local), a name through NIO's resolver.
        let connected = if let address = try? SocketAddress.numeric(host, port: Int(port)) {
            bootstrap.connect(to: address)
        } else {
            bootstrap.connect(host: host, port: Int(port))
        }
        return connected.map { channel in
            RTSPClient(channel: channel, host: host, port: port, mismatch: mismatch)
        }.flatMapErrorThrowing { error in
            // An fe80:: address needs its interface; the kernel only says "Invalid argument".
            if HostPort.lacksZone(host) {
                throw Failure.connectionLost("cannot connect to \(HostPort.text(host, port)): a link-local address needs its interface, as in [\(host)%eth0]:\(port)")
            }
            throw Failure.connectionLost("cannot connect to \(HostPort.text(host, port)): \(Self.describe(error))")
        }
    }

    /// Connects, blocking its caller (never an event loop) until the connection is up.
    static func connected(host: String, port: UInt16, connectTimeout: TimeAmount = .seconds(5), tls: PinnedTLS? = nil,
                          onRequest: @escaping @Sendable (RTSPMessage, @escaping Reply) -> Void,
                          onClose: @escaping @Sendable () -> Void) throws(Failure) -> RTSPClient
    {
        try Self.wait(connect(host: host, port: port, connectTimeout: connectTimeout, tls: tls, onRequest: onRequest, onClose: onClose))
    }

    var isClosed: Bool { !channel.isActive }

    /// True when the TLS handshake failed because the receiver holds another key than the pinned one.
    var keyMismatch: Bool { mismatch.isRaised }

    /// The local address the connection uses: the host media and timing sockets bind on.
    var localHost: String { channel.localAddress?.hostText ?? "127.0.0.1" }

    /// Sends a request: its response (within `timeout` seconds), or why none came, as a `Failure`. `written`
    /// completes as the request has been written to the connection.
    func send(_ method: String, uri: String? = nil, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 5,
              written: EventLoopPromise<Void>? = nil) -> EventLoopFuture<RTSPMessage>
    {
        let request = RTSPRequest(method, uri: uri ?? "rtsp://\(HostPort.uri(host, port))/", headers: headers, body: body, timeout: timeout)
        return channel.rtspRequest(request, written: written).flatMapErrorThrowing { error in
            switch error {
            case RTSPPeerStateMachine<Int>.Failure.closed: throw Failure.connectionLost("the receiver closed the connection")
            case RTSPPeerStateMachine<Int>.Failure.timeout(let method, let seconds): throw Failure.timedOut(method: method, seconds: seconds)
            default: throw Failure(description: "\(error)")
            }
        }
    }

    /// Sends a request and waits for its response (at most `timeout` seconds). Not on an event loop.
    func request(_ method: String, uri: String? = nil, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 5)
        throws(Failure) -> RTSPMessage
    {
        try Self.wait(send(method, uri: uri, headers: headers, body: body, timeout: timeout))
    }

    /// Waits for `future`, whose failures are `Failure`s. Not on an event loop.
    static func wait<T: Sendable>(_ future: EventLoopFuture<T>) throws(Failure) -> T {
        do { return try future.wait() } catch { throw failure(error) }
    }

    /// `wait(_:)`, awaited: no thread waits for `future`.
    static func awaited<T: Sendable>(_ future: EventLoopFuture<T>) async throws(Failure) -> T {
        do { return try await future.get() } catch { throw failure(error) }
    }

    /// What a future's error is to a caller: itself when it is a `Failure`, else a `Failure` that describes it.
    private static func failure(_ error: any Error) -> Failure {
        error as? Failure ?? Failure(description: "\(error)")
    }

    func close() { channel.close(promise: nil) }

    private static func describe(_ error: Error) -> String {
        if let error = error as? IOError { return error.description }
        return "\(error)"
    }
}

/// Passes the receiver's requests and the connection's end to the client's owner, on the event loop, as they
/// are read: a request the receiver sent before it closed is passed before `RTSPPeerHandler`, ahead of this
/// handler, fails the sender's requests left unanswered.
private final class ReceiverRequests: ChannelInboundHandler {
    typealias InboundIn = RTSPFrame
    typealias OutboundOut = RTSPOutbound

    let onRequest: @Sendable (RTSPMessage, @escaping RTSPClient.Reply) -> Void
    let onClose: @Sendable () -> Void

    init(onRequest: @escaping @Sendable (RTSPMessage, @escaping RTSPClient.Reply) -> Void, onClose: @escaping @Sendable () -> Void) {
        self.onRequest = onRequest
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Interleaved frames from a receiver are not part of Lyre (it sends none): ignored.
        guard case .message(let request) = unwrapInboundIn(data) else { return }
        let channel = context.channel
        let cseq = request.cseq
        onRequest(request) { status, headers in
            channel.writeAndFlush(RTSPOutbound.response(.response(status, cseq: cseq, headers: headers)), promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        onClose()
        context.fireChannelInactive()
    }
}
