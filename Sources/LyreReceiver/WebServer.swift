import Dispatch
import FoundationEssentials
import Logging
import LyreClock
import LyreWire
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// `lyred --web` could not listen.
public struct WebServerError: Error, CustomStringConvertible {
    public var port: Int
    public var underlying: any Error
    public var description: String { "cannot serve the web page on port \(port): \(underlying); pass --web-port PORT or --web off" }
}

/// The receiver's web page and its API (Protocol/control-api.md), on NIO's HTTP/1 and WebSocket codecs and
/// the receiver's own event loop: `GET /` the page, `GET /api/state` the snapshot, `GET /artwork` the cover,
/// and `/api/ws` the WebSocket that pushes events and takes commands in the control socket's vocabulary.
enum WebServer {
    /// At most this many connections at once (the page holds one); more are closed at once (§5).
    static let maximumConnections = 64
    /// A client message, and a WebSocket frame, of more than this is refused (§5).
    static let maximumMessageBytes = 4096
    /// A request must arrive whole within this (a client that opens and says nothing is closed).
    static let requestTimeout = TimeAmount.seconds(10)
    /// Queued for a client that does not read: past this it is dropped (§5).
    static let maximumQueuedBytes = 256 * 1024

    /// Listens on loopback (`local`) or every address (`lan`, or `host` when lyred was given `--listen`).
    static func bind(registry: SessionRegistry, access: WebAccess, port: Int, host: String?) async throws -> [Channel] {
        let hosts: [String] =
            switch access {
            case .off: []
            case .local: ["127.0.0.1", "::1"]
            case .lan: host.map { [$0] } ?? ["0.0.0.0", "::"]
            }
        var channels: [Channel] = []
        for (index, address) in hosts.enumerated() {
            let bootstrap = ServerBootstrap(group: registry.eventLoop)
                .serverChannelOption(.backlog, value: 128)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 * 1024, high: maximumQueuedBytes))
                // The kernel's share of a client's backlog kept small too (the page's messages are small).
                .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try configure(channel, registry: registry) }
                }
            if address.contains(":") { _ = bootstrap.serverChannelOption(.socket(SocketOptionLevel(IPPROTO_IPV6), IPV6_V6ONLY), value: 1) }
            do {
                channels.append(try await bootstrap.bind(host: address, port: port).get())
            } catch where index > 0 && address.contains(":") {
                registry.logger.warning("web page on IPv4 only: cannot listen on [\(address)]:\(port): \(error)")
            } catch {
                for channel in channels { try? await channel.close() }
                throw error
            }
        }
        return channels
    }

    private static func configure(_ channel: Channel, registry: SessionRegistry) throws {
        registry.webConnections += 1
        channel.closeFuture.whenComplete { _ in registry.webConnections -= 1 }
        guard registry.webConnections <= maximumConnections else {
            registry.count(\.webRefused)
            channel.close(promise: nil)
            return
        }
        let mayPair = channel.remoteAddress.map(isLoopback) ?? false
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: maximumMessageBytes,
            shouldUpgrade: { channel, head in
                // Only the API's path, and only from a page of this receiver's own (a page elsewhere that a
                // browser on this network opened cannot drive it: its Origin names another host).
                let sameOrigin = head.headers.first(name: "origin").map { origin in
                    head.headers.first(name: "host").map { origin.hasSuffix("//" + $0) } ?? false
                } ?? true
                return channel.eventLoop.makeSucceededFuture(head.uri == "/api/ws" && sameOrigin ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 16,
                                                    maxAccumulatedFrameSize: maximumMessageBytes))
                    try channel.pipeline.syncOperations.addHandler(WebSocketSession(registry: registry, mayPair: mayPair))
                }
            })
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                context.pipeline.syncOperations.removeHandler(name: "lyre-http", promise: nil)
            }))
        try channel.pipeline.syncOperations.addHandler(HTTPRequestHandler(registry: registry, mayPair: mayPair), name: "lyre-http")
    }

    static func isLoopback(_ address: SocketAddress) -> Bool {
        switch address {
        case .v4: return address.ipAddress?.hasPrefix("127.") ?? false
        case .v6: return address.ipAddress == "::1" || (address.ipAddress?.hasPrefix("::ffff:127.") ?? false)
        default: return false
        }
    }
}

/// One HTTP request at a time, each answered and the connection closed (the page's few requests need no
/// keep-alive): the page, the snapshot, the cover, or an error.
private final class HTTPRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: SessionRegistry
    private let mayPair: Bool
    private var head: HTTPRequestHead?
    private var bodyBytes = 0
    private var timeout: Scheduled<Void>?
    /// One response per connection: whatever comes after it is ignored (the connection is closing).
    private var responded = false

    init(registry: SessionRegistry, mayPair: Bool) {
        self.registry = registry
        self.mayPair = mayPair
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timeout = context.eventLoop.scheduleTask(in: WebServer.requestTimeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { timeout?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !responded else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            bodyBytes = 0
        case .body(let body):
            bodyBytes += body.readableBytes
            if bodyBytes > WebServer.maximumMessageBytes, head != nil {
                head = nil
                respond(context, .payloadTooLarge, text: "a request body is at most \(WebServer.maximumMessageBytes) bytes\n")
            }
        case .end:
            guard let head else { return }
            self.head = nil
            route(context, head)
        }
    }

    private func route(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        guard head.method == .GET || head.method == .HEAD else {
            respond(context, .methodNotAllowed, text: "only GET; commands go over the WebSocket at /api/ws (control-api.md)\n")
            return
        }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        switch path {
        case "/", "/index.html":
            respond(context, .ok, type: "text/html; charset=utf-8", body: PackageResources.index_html, head: head)
        case "/api/state":
            let snapshot = WebAPI.snapshot(registry, mayPair: mayPair)
            respond(context, .ok, type: "application/json", body: Array(snapshot.utf8), head: head)
        case "/artwork":
            guard let snapshot = registry.active?.snapshot(), let path = snapshot.artworkPath else {
                respond(context, .notFound, text: "no artwork\n")
                return
            }
            let type = snapshot.artworkType.map { "image/" + $0.rawValue } ?? "application/octet-stream"
            // Read off the event loop: a file of the receiver's own, at most ArtworkStore's limit.
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            DispatchQueue.global().async {
                let bytes = FileManager.default.contents(atPath: path)
                loop.execute {
                    let (handler, context) = bound.value
                    if let bytes {
                        handler.respond(context, .ok, type: type, body: Array(bytes), head: head)
                    } else {
                        handler.respond(context, .notFound, text: "no artwork\n")
                    }
                }
            }
        default:
            respond(context, .notFound, text: "not found; the page is at /, the API at /api/state and /api/ws\n")
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, text: String) {
        respond(context, status, type: "text/plain; charset=utf-8", body: Array(text.utf8), head: nil)
    }

    private func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, type: String, body: [UInt8], head: HTTPRequestHead?) {
        guard !responded else { return }
        responded = true
        timeout?.cancel()
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: type)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if head?.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if error is NIOWebSocketUpgradeError {
            // An upgrade refused: another path, or a page of another origin (§5).
            respond(context, .forbidden, text: "the API's WebSocket is /api/ws, for pages of this receiver only\n")
            return
        }
        context.close(promise: nil)
    }
}

/// One WebSocket client of the API (control-api.md §2–§4): the snapshot when it connects, then each change as
/// an event and the link figures once a second while a session plays; its commands answered by the control
/// vocabulary's one code path (`ControlServer.answer`).
private final class WebSocketSession: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let registry: SessionRegistry
    private let mayPair: Bool
    private var link: RepeatedTask?
    private var closing = false

    init(registry: SessionRegistry, mayPair: Bool) {
        self.registry = registry
        self.mayPair = mayPair
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        send(context, WebAPI.snapshot(registry, mayPair: mayPair))
        if mayPair, let pairing = WebAPI.pairingEvent(registry) { send(context, pairing) }
        registry.observe(self) { change in
            let (session, context) = bound.value
            if let event = WebAPI.event(change, registry: session.registry, mayPair: session.mayPair) { session.send(context, event) }
        }
        link = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let (session, context) = bound.value
            if let event = WebAPI.linkEvent(session.registry) { session.send(context, event) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    private func stop() {
        link?.cancel()
        link = nil
        registry.stopObserving(self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            let text = data.readString(length: data.readableBytes) ?? ""
            let command: WebAPI.Command
            switch WebAPI.command(text) {
            case .success(let parsed): command = parsed
            case .failure(let error):
                registry.count(\.webBadMessages)
                send(context, WebAPI.errorFrame(error.description))
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            ControlServer.answer(command.line, registry: registry, mayPair: mayPair).whenSuccess { reply in
                let (session, context) = bound.value
                session.send(context, WebAPI.reply(id: command.id, reply))
            }
        case .binary:
            registry.count(\.webBadMessages)
            send(context, WebAPI.errorFrame("binary frames are not part of the API; send JSON text (control-api.md §3)"))
        case .ping:
            var data = frame.unmaskedData
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: data.readSlice(length: data.readableBytes) ?? data)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            close(context, code: .normalClosure)
        default:
            break
        }
    }

    /// Sends one text frame, unless the client stopped reading: then it is dropped (§5), never buffered without end.
    private func send(_ context: ChannelHandlerContext, _ text: String) {
        guard !closing, context.channel.isActive else { return }
        guard context.channel.isWritable else {
            registry.count(\.webSlowReaders)
            registry.logger.notice("web client \(context.channel.remoteAddress?.description ?? "?") does not read; closing it")
            closing = true
            context.close(promise: nil)
            return
        }
        let buffer = context.channel.allocator.buffer(string: text)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
    }

    private func close(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closing else { return }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A frame over the limit, or fragments past the aggregator's: NIO has answered 1009 or 1002.
        registry.count(\.webBadMessages)
        context.close(promise: nil)
    }
}
