import Logging
import LyreAudio
import LyreClock
import LyreControl
import LyrePairing
import LyreRTSP
import LyreSRTP
import LyreWire
import NIOCore
import NIOPosix
import Synchronization

/// How a receiver is set up.
public struct ReceiverConfiguration: Sendable {
    /// Address to listen on for RTSP; nil for every address, IPv4 and IPv6. Media and timing sockets use the
    /// address each connection came to.
    public var host: String?
    /// TCP port; 0 picks a free one.
    public var port = 7700
    public var output: OutputTarget = .alsa(pcm: "default")
    /// What the volume moves and the loudest it plays (`--volume-control`, `--max-volume-db`).
    public var volume = VolumePolicy()
    /// The volume the receiver starts at, dB (−30…0, or −144 to start muted): what senders find when they
    /// connect, until one sets another.
    public var initialVolumeDB = 0.0
    /// How far an announcement that ducks lowers what plays under it, dB (`DuckEnvelope.depthRange`).
    public var duckDB = DuckEnvelope.defaultDepthDB
    /// Latency when the sender asks for none, ms.
    public var defaultLatencyMilliseconds = 250
    /// The extra latency of what is plugged into the output, ms (−500…500): an AV receiver, a soundbar, a
    /// Bluetooth speaker. The receiver plays that much earlier, so the room is heard in time with the others.
    public var outputDelayMilliseconds = 0
    /// Where to write `rtp_time,scheduled_ns,presented_ns` for every output block, for measurement.
    public var presentationLogPath: String?
    /// Seconds between statistics log lines; nil for none.
    public var statisticsInterval: Double?
    /// Where the session's artwork is written (for MPRIS `mpris:artUrl`); nil keeps it in memory only.
    public var artworkDirectory: String?
    /// The local control socket (now-playing.md §5); nil for none.
    public var controlSocketPath: String?
    /// When false, a control socket another receiver holds is a warning, and this one runs without one.
    public var controlSocketRequired = true
    /// The device id it advertises (discovery.md), told in OPTIONS' `Lyre-Receiver-ID` so that a sender that
    /// connects to a remembered address knows it reached the same receiver (streaming.md §3).
    public var deviceID: String?
    /// Who this receiver is to pairing (its key, id and name) and where its paired senders are kept
    /// (Protocol/pairing.md); nil: `PAIR` is refused.
    public var pairing: (receiver: PairingParty, pairedSendersPath: String)?
    /// The receiver's TLS identity: with it, the RTSP port also takes TLS 1.3 (Protocol/pairing.md §6).
    public var tls: TLSIdentity?
    /// Who may play: paired senders only (over TLS), or anyone (plain RTSP publishers such as ffmpeg too).
    public var access = ReceiverAccess.paired
    /// The name the web page shows (the advertised one).
    public var name = ""
    /// The web page and its API (control-api.md): who gets an answer, and the TCP port.
    public var web = WebAccess.off
    public var webPort = 7780
    /// Whether a web port in use fails the start (it was asked for), or only leaves the receiver without a page.
    public var webRequired = true
    /// Keeps a setting changed from the control socket or the page, and does what only the program that runs
    /// the receiver can (lyred advertises a new name, and writes both to its config file). Returns nil when
    /// it is kept, else why not, one line. nil: the output delay changes for this run only, and the name
    /// cannot change.
    public var keep: (@Sendable (ReceiverSetting) async -> String?)?

    public init() {}
}

/// A setting the control socket and the page change (control-api.md §3).
public enum ReceiverSetting: Sendable, Equatable {
    case name(String)
    case outputDelay(milliseconds: Int)
}

/// `lyred --access`: who may start a session.
public enum ReceiverAccess: String, Sendable, CaseIterable {
    /// Only senders paired with this receiver, proving their key over TLS.
    case paired
    /// Anyone: paired senders over TLS, and plain RTSP publishers (ffmpeg, GStreamer, unpaired Lyre senders).
    case open

    /// Whether a session may start for a sender that proved `key` over TLS (nil: plain RTSP), `isPaired`
    /// saying whether the receiver paired that key (pairing.md §6); the refusal, 403 with the command that
    /// pairs (`receiverName` in it), when not. Logged with `detail`.
    func admits(key: [UInt8]?, isPaired: ([UInt8]) -> Bool, receiverName: String) -> SessionRefusal? {
        guard self == .paired else { return nil }
        if let key, isPaired(key) { return nil }
        return SessionRefusal(403, "not paired: this receiver plays only paired senders; pair with 'lyre pair \(receiverName)'",
                              detail: key == nil ? "plain RTSP" : "TLS, unknown key")
    }
}

/// `lyred --web`: who may open the receiver's page and use its API (control-api.md §1).
public enum WebAccess: String, Sendable, CaseIterable {
    /// No page.
    case off
    /// This machine only: the page listens on loopback.
    case local
    /// Anyone on the network; pairing is seen and changed from loopback only.
    case lan
}

/// What a receiver tells its owner, to advertise.
public enum ReceiverEvent: Sendable, Equatable {
    case status(ReceiverStatus)
    /// dB, RAOP scale.
    case volume(Double)
    /// What the current session says is playing; nil when no session.
    case nowPlaying(NowPlayingSnapshot?)
    /// What plays over the current session now (streaming.md §7), oldest first; empty when nothing does.
    case overlays([ReceiverOverlay])
}

/// A session that plays over the active one (streaming.md §7), as the web API and MPRIS show it.
public struct ReceiverOverlay: Sendable, Equatable, Encodable {
    /// How it meets the active session.
    public enum How: String, Sendable, Encodable {
        /// Lowers it by `duckDB`.
        case duck
        /// Plays beside it at full level.
        case mix
        /// Paused it (spoken audio) through its sender, until this ends.
        case pause
    }

    /// The overlay's sender, as it named itself.
    public var sender: String
    public var how: How
    /// How far it lowers the active session (dB, negative); nil unless `how` is `duck`.
    public var duckDB: Double?

    public init(sender: String, how: How, duckDB: Double? = nil) {
        self.sender = sender
        self.how = how
        self.duckDB = duckDB
    }
}

/// What changed in the registry, for its observers.
enum RegistryChange: Sendable {
    /// The session's now playing, or the session itself.
    case nowPlaying
    /// The receiver's status, volume, output delay or name.
    case receiver
    /// A pairing began or ended, or the paired senders changed (control-api.md §4: loopback clients only).
    case pairing
}

/// Receiver-wide counters of dropped input.
public struct ReceiverCounters: Sendable, Equatable {
    public var connections = 0
    public var badRequests = 0
    public var droppedMedia = 0
    public var droppedTiming = 0
    /// Web connections closed at once (over WebServer.maximumConnections), web messages refused, and web
    /// clients dropped for not reading.
    public var webRefused = 0
    public var webBadMessages = 0
    public var webSlowReaders = 0
    /// RTSP connections closed to make room for a new one (over SessionRegistry.maximumConnections), and
    /// closed because the peer stopped reading what was sent to it.
    public var evicted = 0
    public var slowReaders = 0
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
    /// The main session and those that play over it (`Lyre-Mix`, `Lyre-Interrupt`, streaming.md §7).
    private(set) var stage = SessionStage<RTSPConnectionHandler>()
    var active: RTSPConnectionHandler? { stage.active }
    private(set) var volume: Double = 0
    private(set) var counters = ReceiverCounters()
    private var outputAvailable = true
    private var lastStatus: ReceiverStatus?
    /// The overlays last told to the owner (``ReceiverEvent/overlays(_:)``), so each change is told once.
    private var toldOverlays: [ReceiverOverlay] = []
    let artwork: ArtworkStore?
    /// The now-playing info last written to the log, so each change is logged once.
    private var loggedInfo: NowPlayingInfo?
    let pairing: ReceiverPairing?
    private var connectionsSeen = 0
    /// Who may start a session: the configuration's, until a reload changes it (the running session stays).
    var access: ReceiverAccess
    /// The advertised name, as the page shows it.
    private(set) var name: String
    /// ``ReceiverConfiguration/keep``.
    let keep: (@Sendable (ReceiverSetting) async -> String?)?
    /// The last setting handed to `keep`, done when it is: the next one waits for it.
    var keeping: EventLoopFuture<Void>?
    /// Who hears of changes as they happen (the web API's connections), by owner.
    private var observers: [ObjectIdentifier: (RegistryChange) -> Void] = [:]
    /// Web connections open now (WebServer's cap).
    var webConnections = 0
    /// RTSP connections open now (streaming.md §2: at most `maximumConnections`).
    private var connections: [ObjectIdentifier: RTSPConnectionHandler] = [:]
    static let maximumConnections = 32

    init(eventLoop: EventLoop, configuration: ReceiverConfiguration, output: OutputEngine, logger: Logger,
         events: AsyncStream<ReceiverEvent>.Continuation) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.output = output
        self.logger = logger
        self.events = events
        access = configuration.access
        name = configuration.name
        keep = configuration.keep
        volume = configuration.initialVolumeDB
        artwork = configuration.artworkDirectory.map(ArtworkStore.init(directory:))
        pairing = configuration.pairing.map { ReceiverPairing(receiver: $0.receiver, pairedSendersPath: $0.pairedSendersPath, logger: logger) }
    }

    /// A number for a new connection, unique for the receiver's life (pairing tells connections apart by it).
    func connectionNumber() -> Int {
        eventLoop.assertInEventLoop()
        connectionsSeen += 1
        return connectionsSeen
    }

    /// A new RTSP connection. Past the limit, the connection that has been quiet longest and holds no session
    /// is closed to make room: a flood of connections cannot lock a sender out, nor touch the playing session.
    func opened(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(handler)] = handler
        guard connections.count > Self.maximumConnections else { return }
        let victim = connections.values.filter { $0 !== handler && $0 !== active }.min { $0.lastActivity < $1.lastActivity }
        if let victim {
            connections[ObjectIdentifier(victim)] = nil
            counters.evicted += 1
            logger.debug("closing the quietest connection (over \(Self.maximumConnections))")
            victim.close()
        }
    }

    func closed(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(handler)] = nil
    }

    func count(_ counter: WritableKeyPath<ReceiverCounters, Int>) {
        eventLoop.assertInEventLoop()
        counters[keyPath: counter] += 1
    }

    /// `handler` takes the session; whoever had it is told it was taken over.
    func claim(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        // It asked to play over others, and had none: it goes on over this one.
        switch stage.claim(handler, goesOn: { $0.playOver() != nil }) {
        case .alone: break
        case .playsOver(let previous):
            let how = previous.mix.overlay == .duck ? "ducking it \(abs(previous.mix.overlayDuckDB ?? 0)) dB" : "mixed in"
            logger.notice("\(handler.senderLabel) plays under \(previous.senderLabel), which asked to play over others and goes on, \(how)")
            changed(.receiver)
        case .tookOver(let previous):
            logger.notice("\(handler.senderLabel) takes over from \(previous.senderLabel)")
            previous.end(.takenOver(by: handler.senderName))
        }
        let statusBefore = lastStatus
        publishStatus()
        // The same sender again (its status unchanged): the page still learns the new session's rooms.
        if lastStatus == statusBefore { changed(.receiver) }
        nowPlayingChanged(handler)
    }

    /// `handler`'s session plays over the active one, which goes on (streaming.md §7).
    /// `duckDB`: how far it lowers the active one; nil when it only mixes. `interruptsSpokenAudio`: the active
    /// one, if it is spoken audio, is paused through its sender until this (and any other that did so) ends.
    func addOverlay(_ handler: RTSPConnectionHandler, over playing: RTSPConnectionHandler, duckDB: Double?, interruptsSpokenAudio: Bool) {
        eventLoop.assertInEventLoop()
        let pauses = interruptsSpokenAudio && playing.mix.isSpokenAudio
        let pauseNow = stage.addOverlay(handler, pauses: pauses)
        if pauses {
            logger.notice("\(handler.senderLabel) plays over \(playing.senderLabel), pausing it (spoken audio)")
            if pauseNow { tell(playing, .pause) }
        } else {
            let how = duckDB.map { "ducking it \(abs($0)) dB" } ?? "mixed in"
            logger.notice("\(handler.senderLabel) plays over \(playing.senderLabel), \(how)")
        }
        changed(.receiver)
    }

    /// What plays over the active session, as the web API shows it (control-api.md §2): each overlay's sender,
    /// and how it meets the active one: `duck` (with its dB), `mix`, or `pause` (the active one, spoken audio,
    /// paused for it).
    var overlayStates: [ReceiverOverlay] {
        eventLoop.assertInEventLoop()
        return stage.overlays.map { overlay in
            if stage.interrupts(overlay) { return ReceiverOverlay(sender: overlay.senderName, how: .pause) }
            return ReceiverOverlay(sender: overlay.senderName, how: overlay.mix.overlayDuckDB == nil ? .mix : .duck, duckDB: overlay.mix.overlayDuckDB)
        }
    }

    /// Sends `command` to `handler`'s sender on the receiver's own behalf (an interruption), logging what
    /// came of it.
    private func tell(_ handler: RTSPConnectionHandler, _ command: RemoteCommand) {
        let promise = eventLoop.makePromise(of: RemoteCommandOutcome.self)
        handler.relay(RemoteCommandEvent(command), promise: promise)
        let (logger, label) = (logger, handler.senderLabel)
        promise.futureResult.whenSuccess { outcome in
            if outcome.kind == .success {
                logger.notice("\(label) \(command == .pause ? "paused for an interruption" : "plays on after the interruption")")
            } else {
                logger.notice("\(label) was not told to \(command.rawValue): \(outcome.message)")
            }
        }
    }

    func release(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        let release = stage.release(handler)
        defer { if release.wasOverlay { changed(.receiver) } }
        if let playsOn = release.playsOn { tell(playsOn, .play) }
        if release.wasActive {
            loggedInfo = nil
            artwork?.remove()
            events.yield(.nowPlaying(nil))
            changed(.nowPlaying)
        }
        publishStatus()
    }

    /// Ends the main session, then each that plays over it (so that none of them is told to play on), each
    /// sender told `reason`: the closes of the connections told, each once its sender has read the notice
    /// and closed, or 2 s after.
    func endEverySession(_ reason: SessionEnd) -> [EventLoopFuture<Void>] {
        eventLoop.assertInEventLoop()
        let sessions = [stage.active].compactMap { $0 } + stage.overlays
        return sessions.compactMap { $0.end(reason) }
    }

    /// Ends the sessions of the sender that proved `key` over TLS, main or over it, each told `reason`.
    func endSessions(ofKey key: [UInt8], _ reason: SessionEnd) {
        eventLoop.assertInEventLoop()
        for session in [stage.active].compactMap({ $0 }) + stage.overlays where session.senderKey == key {
            session.end(reason)
        }
    }

    /// The active session's sender told its rooms.
    func roomsChanged(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        if active === handler { changed(.receiver) }
    }

    /// The active session's now-playing state changed.
    func nowPlayingChanged(_ handler: RTSPConnectionHandler) {
        eventLoop.assertInEventLoop()
        guard active === handler else { return }
        let snapshot = handler.snapshot()
        if let info = snapshot.info, info != loggedInfo {
            loggedInfo = info
            logger.info("now playing: \(Printable.escaped(snapshot.summary))")
        }
        events.yield(.nowPlaying(snapshot))
        changed(.nowPlaying)
    }

    /// Relays a command to the current session's sender.
    func relay(_ event: RemoteCommandEvent) -> EventLoopFuture<RemoteCommandOutcome> {
        eventLoop.assertInEventLoop()
        let promise = eventLoop.makePromise(of: RemoteCommandOutcome.self)
        do {
            try event.validate()
        } catch {
            promise.succeed(RemoteCommandOutcome(.invalid, error.description))
            return promise.futureResult
        }
        if let active { active.relay(event, promise: promise) } else { promise.succeed(RemoteCommandOutcome(.noSession, "nothing is playing")) }
        return promise.futureResult
    }

    /// The statistics line for the log and the control socket.
    var statisticsLine: String {
        let c = counters
        let session = active?.controller?.statistics.text ?? "no session"
        return "\(session); connections=\(c.connections) bad-requests=\(c.badRequests) dropped-media=\(c.droppedMedia) dropped-timing=\(c.droppedTiming) web-refused=\(c.webRefused) web-bad=\(c.webBadMessages) web-slow=\(c.webSlowReaders) evicted=\(c.evicted) slow=\(c.slowReaders)"
    }

    /// The output delay, ms (`--output-delay`, or set through the control socket).
    var outputDelayMilliseconds: Int { Int(output.outputDelay / 1_000_000) }

    func setOutputDelay(milliseconds: Int) {
        eventLoop.assertInEventLoop()
        output.outputDelay = Int64(milliseconds) * 1_000_000
        logger.info("output delay \(milliseconds) ms")
        changed(.receiver)
    }

    func setName(_ name: String) {
        eventLoop.assertInEventLoop()
        self.name = name
        pairing?.rename(name)
        changed(.receiver)
    }

    func setVolume(_ db: Double) {
        eventLoop.assertInEventLoop()
        volume = db
        output.setVolume(db)
        events.yield(.volume(db))
        changed(.receiver)
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
        changed(.receiver)
    }

    /// The receiver's status as pickers see it.
    var status: ReceiverStatus { lastStatus ?? .idle }

    /// `handler` is called on the event loop with each change, until `stopObserving(owner)`.
    func observe(_ owner: AnyObject, _ handler: @escaping (RegistryChange) -> Void) {
        eventLoop.assertInEventLoop()
        observers[ObjectIdentifier(owner)] = handler
    }

    func stopObserving(_ owner: AnyObject) {
        eventLoop.assertInEventLoop()
        observers[ObjectIdentifier(owner)] = nil
    }

    func changed(_ change: RegistryChange) {
        // Every change of the overlays is a change of the receiver, so the owner hears of them here.
        if change == .receiver, overlayStates != toldOverlays {
            toldOverlays = overlayStates
            events.yield(.overlays(toldOverlays))
        }
        for handler in observers.values { handler(change) }
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
    private let servers: Mutex<[Channel]> = Mutex([])
    private let statisticsTask: Mutex<RepeatedTask?> = Mutex(nil)
    private let control: Mutex<Channel?> = Mutex(nil)
    private let webServers: Mutex<[Channel]> = Mutex([])

    public init(configuration: ReceiverConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
        // One loop for every connection and socket: session state needs no locks.
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let box = Mutex<SessionRegistry?>(nil)
        output = OutputEngine(
            target: configuration.output, volume: configuration.initialVolumeDB, policy: configuration.volume,
            duck: DuckEnvelope(depthDB: configuration.duckDB), presentationLogPath: configuration.presentationLogPath, logger: logger
        ) { available in
            loop.execute { box.withLock { $0 }?.setOutputAvailable(available) }
        }
        output.outputDelay = Int64(configuration.outputDelayMilliseconds) * 1_000_000
        registry = SessionRegistry(eventLoop: loop, configuration: configuration, output: output, logger: logger, events: continuation)
        box.withLock { $0 = registry }
    }

    /// Opens the output and listens; returns the TCP port.
    public func start() async throws -> Int {
        let registry = self.registry
        let logger = self.logger
        let tls = try configuration.tls?.serverContext()
        // The kernel's receive timestamps on before the first session's timing exchange, and kept on.
        TimingSocket.keepKernelStampsOn()
        // IPv6 sockets take IPv6 only, so that an IPv4 peer is seen as itself (not ::ffff:a.b.c.d) by every
        // check that compares addresses.
        func listen(_ host: String, port: Int) async throws -> Channel {
            let bootstrap = ServerBootstrap(group: registry.eventLoop)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // What waits for a peer that does not read is bounded (RTSPConnectionHandler.send): 256 KiB here,
                // and the kernel's send buffer fixed at 64 KiB (Linux doubles it). Left to grow (to 4 MiB on
                // loopback), it let a peer that pipelined OPTIONS and read nothing be answered tens of thousands
                // of times before it was closed, and in a debug build that starved the room playing beside it
                // (ExhaustionTests' `unread` phase). Now the kernel takes about 105 KiB of answers (strace), NIO
                // holds 256 KiB, and the peer is closed after about 4 000.
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 256 * 1024))
                .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        registry.count(\.connections)
                        // No delay for RTSP's small messages. Set here rather than as a childChannelOption, whose
                        // failure NIO answers by closing the connection without a word: it costs latency only.
                        // (It was set as a SOL_SOCKET option once, which is SO_DEBUG: needing CAP_NET_ADMIN, it
                        // failed for any lyred not run as root, and every sender's connection was closed.)
                        do { try channel.syncOptions?.setOption(.tcpOption(.tcp_nodelay), value: 1) } catch {
                            logger.warning("cannot set TCP_NODELAY on a connection: \(error)")
                        }
                        if let tls { try channel.pipeline.syncOperations.addHandler(TLSSniffer(context: tls)) }
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(RTSPPeerHandler())
                        try channel.pipeline.syncOperations.addHandler(RTSPConnectionHandler(registry: registry, logger: logger))
                    }
                }
            if host.contains(":") { _ = bootstrap.serverChannelOption(.socket(SocketOptionLevel(IPPROTO_IPV6), IPV6_V6ONLY), value: 1) }
            return try await bootstrap.bind(host: host, port: port).get()
        }
        let channel = try await listen(configuration.host ?? "0.0.0.0", port: configuration.port)
        var channels = [channel]
        if configuration.host == nil, let port = channel.localAddress?.port {
            // Every address: IPv6 beside IPv4 on the same port, where the host has IPv6.
            do {
                channels.append(try await listen("::", port: port))
            } catch {
                logger.warning("listening on IPv4 only: cannot listen on [::]:\(port): \(error)")
            }
        }
        servers.withLock { $0 = channels }
        // What a start that fails after this point closes: everything listening so far.
        func closeListeners() async {
            for listening in channels + webServers.withLock({ $0 }) { try? await listening.close() }
            try? await control.withLock { $0 }?.close()
        }
        if let path = configuration.controlSocketPath {
            do {
                let socket = try await ControlServer.bind(path: path, registry: registry)
                control.withLock { $0 = socket }
                logger.info("control socket \(path)")
            } catch LineServerError.inUse where !configuration.controlSocketRequired {
                logger.warning("control socket \(path) belongs to another lyred; running without one (pass --control-socket PATH)")
            } catch {
                await closeListeners()
                throw error
            }
        }
        if configuration.web != .off {
            do {
                let web = try await WebServer.bind(registry: registry, access: configuration.web, port: configuration.webPort,
                                                   host: configuration.host)
                webServers.withLock { $0 = web }
                logger.info("web page on port \(configuration.webPort) (\(configuration.web.rawValue))")
            } catch let error as IOError where error.errnoCode == EADDRINUSE && !configuration.webRequired {
                logger.warning("no web page: port \(configuration.webPort) is in use (another lyred?); pass --web-port PORT")
            } catch {
                await closeListeners()
                throw WebServerError(port: configuration.webPort, underlying: error)
            }
        }
        do {
            try output.start()
        } catch {
            await closeListeners()
            throw error
        }
        if let interval = configuration.statisticsInterval {
            let task = registry.eventLoop.scheduleRepeatedTask(
                initialDelay: .milliseconds(Int64(interval * 1000)), delay: .milliseconds(Int64(interval * 1000))
            ) { _ in
                logger.info("stats: \(registry.statisticsLine)")
            }
            statisticsTask.withLock { $0 = task }
        }
        return channel.localAddress?.port ?? configuration.port
    }

    /// Tells every session's sender the receiver is going away, the main session's and those playing over it,
    /// stops listening and closes the output.
    public func stop() async {
        statisticsTask.withLock { $0?.cancel() }
        let registry = self.registry
        let told = try? await registry.eventLoop.submit { registry.endEverySession(.shutdown) }.get()
        for server in servers.withLock({ $0 }) + webServers.withLock({ $0 }) { try? await server.close() }
        try? await control.withLock { $0 }?.close()
        if let path = configuration.controlSocketPath, control.withLock({ $0 }) != nil { unlink(path) }
        await registry.artwork?.removed()
        output.stop()
        // The sender reads the notice and closes (or `end` closes 2 s after). Closed before that, by the group's
        // shutdown or lyred's exit (which the end of `events` lets happen), the connection would be reset if a
        // request of the sender's were unread, and a reset throws away what is not sent yet, the notice included.
        for closed in told ?? [] { try? await closed.get() }
        continuation.finish()
        try? await group.shutdownGracefully()
    }

    /// Sends a command to the current session's sender and waits for its handler's answer (at most 5 s).
    public func send(_ event: RemoteCommandEvent) async -> RemoteCommandOutcome {
        let registry = self.registry
        do {
            return try await registry.eventLoop.flatSubmit { registry.relay(event) }.get()
        } catch {
            return RemoteCommandOutcome(.noSession, "the receiver is stopping")
        }
    }

    /// Sets the output delay (ms, ControlRequest.outputDelayRange) at once, in the playing session too.
    public func setOutputDelay(milliseconds: Int) async {
        let registry = self.registry
        try? await registry.eventLoop.submit { registry.setOutputDelay(milliseconds: milliseconds) }.get()
    }

    /// Changes who may start a session from now on; a session already playing goes on.
    public func setAccess(_ access: ReceiverAccess) async {
        let registry = self.registry
        try? await registry.eventLoop.submit {
            registry.access = access
            registry.logger.notice("access \(access.rawValue) for new sessions")
        }.get()
    }

    /// Changes the level a sender's full volume plays at (dB, −30…0), at once, in the playing session too.
    public func setMaximumVolume(_ db: Double) async {
        let registry = self.registry
        try? await registry.eventLoop.submit {
            registry.output.setMaximumVolume(db)
            registry.logger.notice("maximum volume \(db) dB")
        }.get()
    }

    /// Changes the name the receiver tells senders that pair with it (the advertised name is the
    /// advertiser's).
    public func setName(_ name: String) async {
        let registry = self.registry
        try? await registry.eventLoop.submit { registry.setName(name) }.get()
    }

    /// What the current session says is playing; nil when there is no session.
    public func nowPlaying() async -> NowPlayingSnapshot? {
        let registry = self.registry
        return try? await registry.eventLoop.submit { registry.active?.snapshot() }.get()
    }
}
