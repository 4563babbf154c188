import LyreWire
import NIOCore

/// What the handlers above `RTSPPeerHandler` write.
public enum RTSPOutbound: Sendable {
    /// A request of this end. `promise` gets the peer's response (any status), or fails with
    /// `RTSPPeerStateMachine.Failure` on timeout or when the connection closes; nil when no answer is awaited.
    case request(RTSPRequest, promise: EventLoopPromise<RTSPMessage>?)
    /// The answer to a request the handler passed up (once; `CSeq` echoed from the request).
    case response(RTSPMessage)
    /// Bytes as they are (an interleaved media frame).
    case bytes(ByteBuffer)
}

/// A request before it is numbered.
public struct RTSPRequest: Sendable {
    public var method: String
    public var uri: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Seconds to wait for the response.
    public var timeout: Double

    public init(_ method: String, uri: String, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double = 5) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// Fired inbound (`userInboundEventTriggered`) for input the handler dropped, for the owner to count.
public struct RTSPPeerDropped: Sendable, Equatable {
    public var drop: RTSPPeerStateMachine<Int>.Drop

    public init(drop: RTSPPeerStateMachine<Int>.Drop) { self.drop = drop }
}

/// Drives `RTSPPeerStateMachine` on a channel, at both ends of a Lyre connection: below it a
/// `RTSPFrameDecoder`, above it the end's own handler, which reads the peer's requests (`.message`, and
/// `.oversizedMessage` to be refused) and the interleaved frames as `RTSPFrame` (responses never get past
/// this handler), and writes `RTSPOutbound`.
public final class RTSPPeerHandler: ChannelDuplexHandler {
    public typealias InboundIn = RTSPFrame
    public typealias InboundOut = RTSPFrame
    public typealias OutboundIn = RTSPOutbound
    public typealias OutboundOut = ByteBuffer

    private var machine: RTSPPeerStateMachine<Int>
    private var promises: [Int: EventLoopPromise<RTSPMessage>] = [:]
    private var nextToken = 0
    private var timer: (deadline: UInt64, task: Scheduled<Void>)?

    public init(maximumUnanswered: Int = 32) {
        machine = RTSPPeerStateMachine(maximumUnanswered: maximumUnanswered)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame {
        case .message(let message): run(machine.received(message), context: context)
        case .oversizedMessage(let head, let length): run(machine.receivedOversized(head, length: length), context: context)
        case .interleaved, .oversizedInterleaved: context.fireChannelRead(data)
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .request(let request, let response):
            let token = nextToken
            nextToken += 1
            if let response { promises[token] = response }
            let action = machine.request(request.method, uri: request.uri, headers: request.headers, body: request.body,
                                         token: token, now: context.eventLoop.now.uptimeNanoseconds, timeout: request.timeout)
            run([action], context: context, promise: promise)
        case .response(let response):
            if let action = machine.answer(response) { run([action], context: context, promise: promise) } else { promise?.succeed() }
        case .bytes(let bytes):
            context.write(wrapOutboundOut(bytes), promise: promise)
        }
    }

    /// The handlers above hear of the loss before any request of theirs fails, so they can tell why it failed.
    public func channelInactive(context: ChannelHandlerContext) {
        context.fireChannelInactive()
        run(machine.closed(), context: context)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        run(machine.closed(), context: context)
    }

    private func run(_ actions: [RTSPPeerStateMachine<Int>.Action], context: ChannelHandlerContext, promise: EventLoopPromise<Void>? = nil) {
        var wrote = false
        for action in actions {
            switch action {
            case .write(let message):
                context.write(wrapOutboundOut(ByteBuffer(bytes: message.serialized())), promise: promise)
                wrote = true
            case .deliver(let request):
                context.fireChannelRead(wrapInboundOut(.message(request)))
            case .deliverOversized(let head, let length):
                context.fireChannelRead(wrapInboundOut(.oversizedMessage(head, length: length)))
            case .complete(let token, let response):
                promises.removeValue(forKey: token)?.succeed(response)
            case .fail(let token, let failure):
                promises.removeValue(forKey: token)?.fail(failure)
            case .drop(let drop):
                context.fireUserInboundEventTriggered(RTSPPeerDropped(drop: drop))
            }
        }
        if wrote { context.flush() } else { promise?.succeed() }
        armTimer(context: context)
    }

    /// One timer, for the earliest deadline of the requests waiting.
    private func armTimer(context: ChannelHandlerContext) {
        let deadline = machine.nextDeadline
        guard deadline != timer?.deadline else { return }
        timer?.task.cancel()
        timer = nil
        guard let deadline else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(deadline)) {
            let (handler, context) = bound.value
            handler.timer = nil
            handler.run(handler.machine.expire(now: context.eventLoop.now.uptimeNanoseconds), context: context)
        }
        timer = (deadline, task)
    }
}

extension Channel {
    /// Sends a request through the channel's `RTSPPeerHandler`; the future gets the response (any status),
    /// or fails when it does not come in time or the connection is gone. `written`, when given, completes as
    /// the request has been written to the connection (or could not be).
    public func rtspRequest(_ request: RTSPRequest, written told: EventLoopPromise<Void>? = nil) -> EventLoopFuture<RTSPMessage> {
        let response = eventLoop.makePromise(of: RTSPMessage.self)
        let written = eventLoop.makePromise(of: Void.self)
        // A write to a closed channel never reaches the handler: fail the response with it.
        written.futureResult.whenFailure { _ in response.fail(RTSPPeerStateMachine<Int>.Failure.closed) }
        if let told { written.futureResult.cascade(to: told) }
        writeAndFlush(RTSPOutbound.request(request, promise: response), promise: written)
        return response.futureResult
    }
}
