import Logging
import LyreAudio
import LyreWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// How a receiver is set up.
public struct ReceiverConfiguration: Sendable {
    /// Address to listen on for RTSP; media and timing sockets use the address each connection came to.
    public var host = "0.0.0.0"
    /// TCP port; 0 picks a free one.
    public var port = 7700
    public var output: OutputTarget = .alsa(pcm: "default")
    /// Latency when the sender asks for none, ms.
    public var defaultLatencyMilliseconds = 250
    /// Where to write `rtp_time,scheduled_ns,presented_ns` for every output block, for measurement.
    public var presentationLogPath: String?
    /// Seconds between statistics log lines; nil for none.
    public var statisticsInterval: Double?

    public init() {}
}

/// What a receiver tells its owner, to advertise.
public enum ReceiverEvent: Sendable, Equatable {
    case status(ReceiverStatus)
    /// dB, RAOP scale.
    case volume(Double)
}

/// Receiver-wide counters of dropped input.
public struct ReceiverCounters: Sendable, Equatable {
    public var connections = 0
    public var badRequests = 0
    public var droppedMedia = 0
    public var droppedTiming = 0
}

/// The state shared by all connections: which one holds the session, the volume, the output.
///
/// `@unchecked Sendable`: confined to the receiver's single event loop; every method asserts it.
final class SessionRegistry: @unchecked Sendable {
    let eventLoop: EventLoop
    let configuration: ReceiverConfiguration
    let output: OutputEngine
    let logger: Logger
    private let events: AsyncStream<ReceiverEvent>.Continuation
    private(set) var active: RTSPConnectionHandler?
    private(set) var volume: Double = 0
    private(set) var counters = ReceiverCounters()
    private var outputAvailable = true
    private var lastStatus: ReceiverStatus?

    init(eventLoop: EventLoop, configuration: ReceiverConfiguration, output: OutputEngine, logger: Logger,
         events: AsyncStream<ReceiverEvent>.Continuation) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.output = output
        self.logger = logger
        self.events = events
    }

    func count(_ counter: WritableKeyPath<ReceiverCounters, Int>) {
        eventLoop.assertInEventLoop()
        counters[keyPath: counter] += 1
    }

    /// `handler` takes the session; whoever had it is told it was taken over.
    func claim(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        if let previous = active, previous !== handler {
            logger.notice("'\(handler.senderName)' takes over from '\(previous.senderName)'")
            active = handler
            previous.end(.takenOver(by: handler.senderName))
        }
        active = handler
        publishStatus()
    }

    func release(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        if active === handler { active = nil }
        publishStatus()
    }

    func setVolume(_ db: Double) {
        eventLoop.assertInEventLoop()
        volume = db
        output.setVolume(db)
        events.yield(.volume(db))
    }

    func setOutputAvailable(_ available: Bool) {
        eventLoop.assertInEventLoop()
        outputAvailable = available
        publishStatus()
    }

    private func publishStatus() {
        let status: ReceiverStatus =
            !outputAvailable ? .unavailable : active.map { .playing(sender: $0.senderName) } ?? .idle
        guard status != lastStatus else { return }
        lastStatus = status
        events.yield(.status(status))
    }
}

/// A Lyre receiver: the RTSP server, sessions and the audio output (streaming.md).
public final class Receiver: Sendable {
    public let events: AsyncStream<ReceiverEvent>
    private let continuation: AsyncStream<ReceiverEvent>.Continuation
    private let configuration: ReceiverConfiguration
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let registry: SessionRegistry
    private let output: OutputEngine
    private let server: NIOLockedValueBox<Channel?> = NIOLockedValueBox(nil)
    private let statisticsTask: NIOLockedValueBox<RepeatedTask?> = NIOLockedValueBox(nil)

    public init(configuration: ReceiverConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
        // One loop for every connection and socket: session state needs no locks.
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let box = NIOLockedValueBox<SessionRegistry?>(nil)
        output = OutputEngine(target: configuration.output, presentationLogPath: configuration.presentationLogPath, logger: logger) { available in
            loop.execute { box.withLockedValue { $0 }?.setOutputAvailable(available) }
        }
        registry = SessionRegistry(eventLoop: loop, configuration: configuration, output: output, logger: logger, events: continuation)
        box.withLockedValue { $0 = registry }
    }

    /// Opens the output and listens; returns the TCP port.
    public func start() async throws -> Int {
        let registry = self.registry
        let logger = self.logger
        let channel = try await ServerBootstrap(group: registry.eventLoop)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    registry.count(\.connections)
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(RTSPConnectionHandler(registry: registry, logger: logger))
                }
            }
            .bind(host: configuration.host, port: configuration.port).get()
        server.withLockedValue { $0 = channel }
        output.start()
        if let interval = configuration.statisticsInterval {
            let task = registry.eventLoop.scheduleRepeatedTask(
                initialDelay: .milliseconds(Int64(interval * 1000)), delay: .milliseconds(Int64(interval * 1000))
            ) { _ in
                let c = registry.counters
                let session = registry.active?.controller?.statistics.text ?? "no session"
                logger.info("stats: \(session); connections=\(c.connections) bad-requests=\(c.badRequests) dropped-media=\(c.droppedMedia) dropped-timing=\(c.droppedTiming)")
            }
            statisticsTask.withLockedValue { $0 = task }
        }
        return channel.localAddress?.port ?? configuration.port
    }

    /// Tells the current sender the receiver is going away, stops listening and closes the output.
    public func stop() async {
        statisticsTask.withLockedValue { $0?.cancel() }
        let registry = self.registry
        try? await registry.eventLoop.submit { registry.active?.end(.shutdown) }.get()
        try? await server.withLockedValue { $0 }?.close()
        output.stop()
        continuation.finish()
        try? await group.shutdownGracefully()
    }
}
