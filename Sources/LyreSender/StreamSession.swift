import Dispatch
import Logging
import LyreAudio
import LyreClock
import LyreCodec
import LyreRTSP
import LyreWire
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A playback to one or more receivers in sync: one **timeline** (`Timeline`: queue, anchor, what was sent), one
/// pacer with the Opus encoder, and one link per room (its RTSP session, RTP socket, volume, channel map).
/// Every room gets the same packets, the same RTP timestamps and the same anchor, so each plays `present(T) = C + (T − T0)/48000 + latency` on the
/// sender's clock and the rooms are in sync (streaming.md §9). A room can join while the audio plays and
/// start in sync at once, or leave, without disturbing the others.
///
/// What goes wrong with a room or a request is thrown as a `LyreSenderError` (refused, connection lost, timed
/// out, key changed, ended, ...), which an app can match.
///
/// Audio goes in as 48 kHz interleaved stereo float through `enqueue`, which blocks while more than a
/// second is queued. A pacing thread sends each frame `lead` ahead of the time it is due.
///
/// `@unchecked Sendable`: mutable state is behind `lock`; control changes (start, pause, joins) run one at a
/// time, in turn (`control`, a `TurnChain`).
public final class StreamSession: @unchecked Sendable {
    public let configuration: StreamConfiguration
    /// The receivers' output latency, ms, from their RECORD answers (the largest, with several rooms).
    public var outputLatencyMilliseconds: Double { lock.withLock { _ in outputLatencies.values.max() ?? 0 } }
    /// The commands this sender accepts from the receivers (now-playing.md §4). Volume up and down are
    /// handled by the session, which owns the volume, unless replaced or disabled: from a room's controls
    /// they step that room.
    public let remoteCommands = RemoteCommandCenter()
    /// The receivers' remote commands, one at a time in the order they came, each handled in a task, and
    /// what is told the rooms off the event loops in order with them (the room list, the answers to updates
    /// nothing waits for). `close()` waits for those asked for before it.
    private let commands: TurnChain
    /// A `commands` turn, in its task and on the thread of a blocking handler it runs: the session's, whether
    /// it still runs (a task started from it inherits it and may outlive it), and, for a command, the room
    /// that sent it and when the command has been answered.
    private struct Turn: Sendable {
        let session: ObjectIdentifier
        let ended = Latch()
        var command: (room: Link, answered: EventLoopFuture<Void>)?
    }
    @TaskLocal private static var turn: Turn?
    /// In one of this session's `commands` turns, while it runs (a command's handler, or what the room list or
    /// an update's answers call: the app's room and route-change handlers): `close()` from it does not wait
    /// for the turn it runs in.
    private var inOwnTurn: Bool {
        guard let turn = Self.turn, turn.session == ObjectIdentifier(self) else { return false }
        return !turn.ended.isRaised
    }
    /// The command this session's handler is handling, in the handler's task: a volume step moves the room
    /// that sent it, and `close()` from the handler sends that room its TEARDOWN once the command is answered.
    private var handlingHere: (room: Link, answered: EventLoopFuture<Void>)? { inOwnTurn ? Self.turn?.command : nil }
    private var commandOrigin: Link? { handlingHere?.room }
    /// The TEARDOWNs that `close()` from a command's handler left to follow the command's answer (`answered`):
    /// a later `close()` waits for them, unless in that command's handler.
    private var teardownsAfterAnswers: [(answered: EventLoopFuture<Void>, teardown: EventLoopFuture<Void>)] = []

    private let frameSamples: Int
    private let lead: UInt64
    private let lock = Mutex<Void>(())
    /// Where the app's room and route-change handlers run for a room that left by itself, one at a time and in
    /// the order the rooms left: the leaving is seen on a connection's event loop, and a handler may block
    /// (`close()` does, and a player's handler may wait for its own thread). So a request that failed as its
    /// room went away may return before they run, and a room that left this way is told after a join or a
    /// removal the app made meanwhile, which are told on the app's thread.
    private let roomsLeft = DispatchQueue(label: "lyre-rooms-left")
    /// The rooms, in the order they joined.
    private var links: [Link] = []
    /// Each room's volume level, dB: unclamped, so a group change keeps the rooms' balance.
    private var levels: [ObjectIdentifier: Double] = [:]
    private var outputLatencies: [ObjectIdentifier: Double] = [:]
    private var outputDelays: [ObjectIdentifier: Int] = [:]
    /// The addresses of rooms being added (`addRoute`), not yet joined: one is added once at a time.
    private var adding: Set<String> = []
    /// Rooms set up while playing whose RECORD is not answered yet.
    private var joining: Set<ObjectIdentifier> = []
    /// What was last said to every room, for a room that joins later.
    private var lastNowPlaying: NowPlayingInfo?
    private var lastArtwork: Artwork?
    private var lastEnabled: EnabledCommands?
    /// The queue, the anchor and what was sent (pure; `now` is passed in).
    private var timeline: Timeline
    private var finishing = false
    private var ended = false
    private let ssrc: UInt32
    private var routeChangeHandlers: [@Sendable (OutputRouteChangeReason) -> Void] = []
    private var roomHandlers: [@Sendable (RoomChange) -> Void] = []
    /// The rooms were told who plays (``sendRooms``): from then on every change is told.
    private var toldRooms = false
    private var volumeHandlers: [@Sendable (Double) -> Void] = []
    private var routeChangeSent = false
    private var lostRoute: OutputRouteChangeReason?
    private var lastRequest = HostClock.now()
    /// Wakes the pacer: it waits on this while paused, instead of polling.
    private let pacerWake = Wakeup()
    /// Every room's media sockets are on this one event loop, so that each frame's sends wake one thread.
    let mediaLoop: any EventLoop
    /// Control changes (start, pause, joins) run one at a time, in turn (`control`, a `TurnChain`).
    private let control: TurnChain
    /// What the playback's rooms reached from one local address share, made on first use and closed when the
    /// playback ends: the timing responder (one thread for all of them, not one each) and the socket RTP
    /// leaves from (each frame's packets to all of them are written together and sent in one `sendmmsg`).
    private var endpoints: [String: Link.LocalEndpoints] = [:]
    /// How many of `endpoints` are open (for tests: they stay open until every TEARDOWN is answered).
    var openEndpoints: Int { lock.withLock { _ in endpoints.count } }
    /// What the responders of `endpoints` already closed had dropped.
    private var timingDroppedByClosed = 0
    private var framesNotEncoded = 0
    private var updatesNotSent = 0
    private static let logger = Logger(label: "lyre.sender")
    /// Wakes the producers and `finish()`es waiting for the queue to shrink, the session to stop or to end (any
    /// number at once: each waits `after` the signals it had seen); signalled (`wakeQueueWaiters`) after every
    /// change they wait on.
    private let queueWake = Wakeup()
    /// `finish()`es awaited: each resumed by `wakeQueueWaiters` once all of the queue was sent, or the
    /// playback stopped or ended (what the blocking form's wait waits for).
    private var drainAwaiters: [CheckedContinuation<Void, Never>] = []
    /// Wakes the pacer waiting for a live source's late audio (`lateAudioWaitMilliseconds`); signalled when it
    /// waits and audio comes, or the end.
    private let audioWake = Wakeup()
    private var pacerWaitsForAudio = false
    /// `whenQueued`'s one notice: how few frames it waits for, and whom to tell.
    private var drainNotice: (frames: Int, handler: @Sendable () -> Void)?

    /// Connects to one receiver and sets the stream up (OPTIONS, ANNOUNCE, SETUP). `onRouteChange` is
    /// called once, from a background thread, if the receiver goes away or another sender takes it over.
    public convenience init(host: String, port: UInt16, configuration: StreamConfiguration,
                            onRouteChange: (@Sendable (OutputRouteChangeReason) -> Void)? = nil) throws {
        try self.init(routes: [OutputRoute(host: host, port: port)], configuration: configuration, onRouteChange: onRouteChange)
    }

    /// Connects to every route and sets the stream up, all rooms at once; fails, naming the room, if any
    /// room cannot be set up. `onRouteChange` is called once, from a background thread, when the last room
    /// is gone; each room's own changes go to `observeRoomChanges`. Blocks its thread until every room has
    /// answered; `connect(routes:configuration:onRouteChange:)` is the form that awaits instead.
    public convenience init(routes: [OutputRoute], configuration: StreamConfiguration,
                            onRouteChange: (@Sendable (OutputRouteChangeReason) -> Void)? = nil) throws {
        self.init(configuration: configuration, routes: routes.count, onRouteChange: onRouteChange)
        begin(try RTSPClient.wait(connectRooms(routes)))
    }

    /// A playback on every route, set up all rooms at once without blocking a thread while they answer: as
    /// `init(routes:configuration:onRouteChange:)`, for a caller in Swift concurrency.
    public static func connect(routes: [OutputRoute], configuration: StreamConfiguration,
                               onRouteChange: (@Sendable (OutputRouteChangeReason) -> Void)? = nil) async throws(LyreSenderError) -> StreamSession {
        let session = StreamSession(configuration: configuration, routes: routes.count, onRouteChange: onRouteChange)
        let links: [Link]
        do {
            links = try await session.connectRooms(routes).get()
        } catch {
            throw error as? LyreSenderError ?? .failed("\(error)")
        }
        session.begin(links)
        return session
    }

    /// The playback's state, with no room yet.
    private init(configuration: StreamConfiguration, routes: Int, onRouteChange: (@Sendable (OutputRouteChangeReason) -> Void)?) {
        precondition(StreamConfiguration.frameChoices.contains(configuration.frameMilliseconds), "frames are one of \(StreamConfiguration.frameChoicesListed) ms")
        precondition(routes > 0, "a playback needs at least one route")
        self.configuration = configuration
        frameSamples = 48 * configuration.frameMilliseconds
        lead = UInt64(configuration.leadMilliseconds) * 1_000_000
        timeline = Timeline(frameSamples: frameSamples, latency: UInt64(configuration.latencyMilliseconds) * 1_000_000, lead: lead,
                            rtp: UInt32.random(in: 0...UInt32.max), sequence: UInt16.random(in: 0...UInt16.max))
        ssrc = UInt32.random(in: 1...UInt32.max)
        mediaLoop = RTSPClient.eventLoopGroup.next()
        control = TurnChain(loop: mediaLoop)
        commands = TurnChain(loop: mediaLoop)
        if let onRouteChange { routeChangeHandlers.append(onRouteChange) }
    }

    /// Every room set up at once, on the event loops: their links, in the routes' order, or the first room's
    /// failure (named when there are several), once the rooms that were set up are closed again, and the
    /// sockets they shared: a playback is all of its rooms or none.
    private func connectRooms(_ routes: [OutputRoute]) -> EventLoopFuture<[Link]> {
        EventLoopFuture.whenAllComplete(routes.map { connect($0) }, on: mediaLoop).flatMap { [self] made in
            let failures = made.enumerated().compactMap { room, outcome in
                if case .failure(let error) = outcome { (room, error) } else { nil }
            }
            guard let (room, error) = failures.first else {
                return mediaLoop.makeSucceededFuture(made.compactMap { if case .success(let link) = $0 { link } else { nil } })
            }
            let typed = error as? LyreSenderError ?? .failed("\(error)")
            let failure: LyreSenderError = routes.count > 1 ? .room("\(routes[room])", typed) : typed
            let closing = made.compactMap { if case .success(let link) = $0 { link.closing(teardown: true) } else { nil } }
            return EventLoopFuture.whenAllComplete(closing, on: mediaLoop).flatMapThrowing { [self] _ in
                closeEndpoints()
                throw failure
            }
        }
    }

    /// The rooms join and the playback begins: the remote commands are published to them, they are told who
    /// plays, and the pacer starts. Called off the event loops: telling the rooms waits for their answers.
    private func begin(_ made: [Link]) {
        lock.withLock { _ in
            for link in made { add(link) }
        }
        remoteCommands.addHandler(.volumeUp) { [weak self] _ async in await self?.stepVolume(up: true) ?? .commandFailed }
        remoteCommands.addHandler(.volumeDown) { [weak self] _ async in await self?.stepVolume(up: false) ?? .commandFailed }
        remoteCommands.addHandler(.changeVolume) { [weak self] event async in
            guard let self, let db = event.volume else { return .commandFailed }
            return await self.applyVolume(from: self.commandOrigin, db)
        }
        remoteCommands.onChange = { [weak self] enabled in self?.sendEnabledCommands(enabled) }
        remoteCommands.publish()
        if made.count > 1 { inTurn { [weak self] in await self?.sendRooms() } }
        // A thread of its own: the pacer sleeps until each frame's send time and must wake on it, which a
        // shared event loop or the cooperative pool, busy with the rooms' requests, would not promise.
        do {
            try DedicatedThread.detach("lyre-pacer") { [self] in pace() }
        } catch {
            Self.logger.error("the playback ends: \(error)")
            close()
        }
    }

    /// What each of `futures` came to, in order, waited for here: the blocking edge of the API (never on an
    /// event loop). `whenAllComplete` itself never fails; were the wait to, each future is told it, so that
    /// the outcomes still match the futures one for one.
    private func outcomes<T: Sendable>(_ futures: [EventLoopFuture<T>]) -> [Result<T, any Error>] {
        do {
            return try EventLoopFuture.whenAllComplete(futures, on: mediaLoop).wait()
        } catch {
            return futures.map { _ in .failure(error) }
        }
    }

    /// `outcomes(_:)`, awaited.
    private func outcomes<T: Sendable>(_ futures: [EventLoopFuture<T>]) async -> [Result<T, any Error>] {
        do {
            return try await EventLoopFuture.whenAllComplete(futures, on: mediaLoop).get()
        } catch {
            return futures.map { _ in .failure(error) }
        }
    }

    /// The payload type of FEC packets (the media's is `FrameEncoder.payloadType`).
    static let fecPayloadType: UInt8 = 97

    private func connect(_ route: OutputRoute) -> EventLoopFuture<Link> {
        Link.connect(
            route: route, configuration: configuration, ssrc: ssrc, mediaLoop: mediaLoop,
            endpoints: { [unowned self] local in self.endpoints(for: local) },
            fec: configuration.fecRow.map { FECHeader(payloadType: Self.fecPayloadType, row: $0) },
            kept: { [weak self] sequence in self?.keptPacket(sequence) },
            rtpTime: { [weak self] now in self?.rtpTime(at: now) ?? 0 },
            onRequest: { [weak self] link, request, reply in
                if let self { self.receiverRequest(request, from: link, reply: reply) } else { reply(503, []) }
            },
            onClose: { [weak self] link in self?.linkLost(link, reason: .oldDeviceUnavailable) })
    }

    /// The stream's RTP timestamp for sender-clock time `now` on the current anchor (for sender reports).
    private func rtpTime(at now: UInt64) -> UInt32 {
        lock.withLock { _ in timeline.rtpTime(at: now) }
    }

    /// The endpoints for rooms reached from `local`, made on first use. The send socket is bound outside the
    /// lock (binding runs on the media loop, whose tasks may take it); of two rooms that make one at once,
    /// the first kept wins and the other's is closed.
    private func endpoints(for local: String) -> EventLoopFuture<Link.LocalEndpoints> {
        let address: SocketAddress
        do {
            if let made = try lock.withLock({ _ throws -> Link.LocalEndpoints? in
                if ended { throw LyreSenderError.ended }
                return endpoints[local]
            }) { return mediaLoop.makeSucceededFuture(made) }
            address = try SocketAddress.numeric(local, port: 0)
        } catch {
            return mediaLoop.makeFailedFuture(error)
        }
        return DatagramBootstrap(group: mediaLoop).bind(to: address).flatMapErrorThrowing { error in
            throw RTSPClient.Failure(description: "cannot open the RTP socket on \(local): \(error)")
        }.flatMapThrowing { [self] sender in
            let responder: TimingResponder
            do {
                responder = try TimingResponder(host: local)
            } catch {
                sender.close(promise: nil)
                throw error
            }
            let made = Link.LocalEndpoints(timing: responder, sender: sender)
            let kept = lock.withLock { _ -> Link.LocalEndpoints? in
                if ended { return nil }
                if let earlier = endpoints[local] { return earlier }
                endpoints[local] = made
                return made
            }
            if kept?.sender !== sender {
                responder.close()
                sender.close(promise: nil)
            }
            guard let kept else { throw LyreSenderError.ended }
            return kept
        }
    }

    /// Ends the timing responders' threads and closes the send sockets, once the playback has ended.
    private func closeEndpoints() {
        let all = lock.withLock { _ -> [Link.LocalEndpoints] in
            defer { endpoints.removeAll() }
            timingDroppedByClosed += endpoints.values.reduce(0) { $0 + $1.timing.droppedCount }
            return Array(endpoints.values)
        }
        for endpoint in all {
            endpoint.timing.close()
            endpoint.sender.close(promise: nil)
        }
    }

    /// The packet with RTP sequence number `sequence` among those sent and kept (the latency and the lead
    /// and a few frames more: everything a receiver can still play), for a receiver that asks for it again.
    private func keptPacket(_ sequence: UInt16) -> [UInt8]? {
        lock.withLock { _ in timeline.keptPacket(sequence) }
    }

    /// Call with `lock` held. While playing, the room gets at once the packets already sent that are not
    /// yet due (streaming.md §9.3), so that it starts within a frame or two instead of a latency later; they
    /// go out here, under the lock, so that the pacer's next packet cannot overtake them.
    private func add(_ link: Link) {
        links.append(link)
        levels[ObjectIdentifier(link)] = link.initialVolume ?? 0
        for bytes in timeline.packetsStillDue(at: HostClock.now()) { link.send(bytes) }
    }

    // MARK: rooms

    /// The rooms playing now, in the order they joined.
    public var routes: [OutputRoute] { lock.withLock { _ in links.map(\.route) } }

    /// True when `route`'s session is paired, so its control, metadata and artwork go over TLS and its audio
    /// is SRTP; false when it runs in plain RTSP and RTP, which the user is told (pairing.md §6).
    public func isEncrypted(_ route: OutputRoute) -> Bool { configuration.security?.pairedKey(of: route) != nil }

    /// The rooms playing now whose sessions are not encrypted.
    public var plainRoutes: [OutputRoute] { routes.filter { !isEncrypted($0) } }

    /// Observes each room's changes: joins, and rooms lost, taken over or removed. The playback goes on
    /// while any room is left.
    public func observeRoomChanges(_ handler: @escaping @Sendable (RoomChange) -> Void) {
        lock.withLock { _ in roomHandlers.append(handler) }
    }

    /// `handler` gets the playback's volume (``volume``, dB) whenever a receiver's controls change it (volume
    /// up or down at the receiver), in the command's task; an app's own slider follows it.
    public func observeVolume(_ handler: @escaping @Sendable (Double) -> Void) {
        lock.withLock { _ in volumeHandlers.append(handler) }
    }

    /// Adds a room while the playback runs. It is set up at once, gets the audio from now on with the
    /// group's anchor and timestamps, so it starts in sync, and is told what plays; the rooms already
    /// playing are not touched. Returns the route as it joined: with the id its receiver answered as when
    /// it was given by address alone.
    @discardableResult
    public func addRoute(_ route: OutputRoute) throws -> OutputRoute {
        try admit(route)
        defer { admitted(route) }
        let link = try RTSPClient.wait(connect(route))
        try control.run {
            do {
                try RTSPClient.wait(welcome(link))
            } catch {
                detach(link)
                _ = outcomes([link.closing(teardown: true)])
                throw error
            }
        }
        return joined(link, as: route)
    }

    /// `addRoute(_:)`, awaited: no thread waits while the room is set up and told what plays.
    @discardableResult
    public func addRoute(_ route: OutputRoute) async throws -> OutputRoute {
        try admit(route)
        defer { admitted(route) }
        let link = try await RTSPClient.awaited(connect(route))
        try await control.run {
            do {
                try await RTSPClient.awaited(welcome(link))
            } catch {
                detach(link)
                _ = await outcomes([link.closing(teardown: true)])
                throw error
            }
        }
        return joined(link, as: route)
    }

    /// Refuses a room to add when the playback ended, or the room plays or is being added already; else
    /// marks it as being added until `admitted`.
    private func admit(_ route: OutputRoute) throws {
        guard !hasEnded else { throw LyreSenderError.ended }
        let address = HostPort.uri(route.host, route.port)
        let refusal: String? = lock.withLock { _ in
            if links.contains(where: { HostPort.uri($0.route.host, $0.route.port) == address }) { return "is already playing" }
            return adding.insert(address).inserted ? nil : "is already joining"
        }
        if let refusal { throw LyreSenderError.rooms("\(route) \(refusal)") }
    }

    /// `route` has joined, or failed to.
    private func admitted(_ route: OutputRoute) {
        _ = lock.withLock { _ in adding.remove(HostPort.uri(route.host, route.port)) }
    }

    /// A room set up, joined to the playback (in its `control` turn): RECORD when the playback runs, then what
    /// plays, each sent once the one before was answered. Completes when the last is answered.
    private func welcome(_ link: Link) -> EventLoopFuture<Void> {
        let (isRunning, anchor, start, info, artwork, enabled) = lock.withLock { _ in
            add(link)
            if timeline.running { joining.insert(ObjectIdentifier(link)) }
            return (timeline.running, timeline.anchor, timeline.startAt, lastNowPlaying, lastArtwork, lastEnabled)
        }
        var told = mediaLoop.makeSucceededVoidFuture()
        if isRunning {
            // No RTP-Info: the packets sent since SETUP (and those sent before it that are not yet
            // due, `add` sent them) are already in the receiver's buffer, in step.
            told = link.send("RECORD", headers: RecordRequest(anchor: anchor, info: nil, startAt: start).headers).map { [self] reply in
                recordAnswered(link, reply)
            }
        }
        func then(_ headers: [(String, String)], _ body: [UInt8], what: String? = nil) {
            told = told.flatMap { link.send("SET_PARAMETER", headers: headers, body: body, what: what).map { _ in } }
        }
        if let enabled { then([("Content-Type", "text/parameters")], Array(enabled.parameters.serialized.utf8)) }
        if let artwork { then([("Content-Type", artwork.type.rawValue)], artwork.bytes, what: "artwork SET_PARAMETER") }
        if let info { then([("Content-Type", "application/json")], info.serialized(), what: "now-playing SET_PARAMETER") }
        return told
    }

    /// Tells the observers that `link`'s room joined: the route as it joined, with its receiver's id.
    private func joined(_ link: Link, as route: OutputRoute) -> OutputRoute {
        notifyRoom(RoomChange(route: route, kind: .joined, remaining: lock.withLock { _ in links.count }))
        var joined = route
        joined.id = link.receiverID
        return joined
    }

    /// Removes a room (TEARDOWN); the others play on. The last room cannot be removed: stop the playback.
    public func removeRoute(named name: String) throws {
        guard let link = try leaving(named: name) else { return }
        _ = outcomes([link.closing(teardown: true)])
        left(link)
    }

    /// `removeRoute(named:)`, awaited: no thread waits for the TEARDOWN's answer.
    public func removeRoute(named name: String) async throws {
        guard let link = try leaving(named: name) else { return }
        _ = await outcomes([link.closing(teardown: true)])
        left(link)
    }

    /// The room named `name`, out of the playback: nil when it left meanwhile.
    private func leaving(named name: String) throws -> Link? {
        let link: Link = try lock.withLock { _ in
            guard let link = links.first(where: { $0.route.isNamed(name) }) else {
                throw LyreSenderError.rooms("no room '\(name)' in this playback")
            }
            guard links.count > 1 else {
                throw LyreSenderError.rooms("\(link.route) is the only room; stop the playback instead")
            }
            return link
        }
        return detach(link) ? link : nil
    }

    /// Tells the observers and the rooms left that `link`'s room was removed.
    private func left(_ link: Link) {
        notifyRoom(RoomChange(route: link.route, kind: .left(nil), remaining: lock.withLock { _ in links.count }))
    }

    /// Each room's link quality from its receiver's last report, without asking (for a status line).
    public var linkQualities: [(route: OutputRoute, quality: LinkQuality)] {
        lock.withLock { _ in links.compactMap { link in link.feedback.quality.map { (link.route, $0) } } }
    }

    /// Timing requests this sender's responders dropped, as they did not verify (pairing.md §6.4: the
    /// responder's own count), on every local address the playback used.
    public var timingRequestsDropped: Int {
        lock.withLock { _ in endpoints.values.reduce(timingDroppedByClosed) { $0 + $1.timing.droppedCount } }
    }

    /// Frames the encoder failed on, which were not sent (each failure is logged, the first with its reason).
    public var framesNotSent: Int { lock.withLock { _ in framesNotEncoded } }

    /// Updates whose failure stops nothing (now playing, cover, enabled commands, the room list, the keep-alive
    /// while paused) that a room refused or did not answer; each is logged (notice) with its reason.
    public var updatesFailed: Int { lock.withLock { _ in updatesNotSent } }

    /// Runs an update whose failure stops nothing: a failure is counted (`updatesFailed`) and logged, not
    /// thrown. A room whose connection failed has left the playback by then (`broadcast`).
    func bestEffort(_ what: String, _ update: () throws -> Void) {
        do { try update() } catch { notSent(what, error) }
    }

    /// `bestEffort`, awaited.
    func bestEffort(_ what: String, _ update: () async throws -> Void) async {
        do { try await update() } catch { notSent(what, error) }
    }

    /// An update that was not sent: counted and logged.
    private func notSent(_ what: String, _ error: any Error) {
        let count = lock.withLock { _ in updatesNotSent += 1; return updatesNotSent }
        Self.logger.notice("\(what) was not sent (\(count) updates so far): \(error)")
    }

    /// Each room's state, volume, latencies and the receiver's link statistics (asked now, at once).
    public func rooms() -> [RoomReport] {
        let (current, asked) = askStatistics()
        return report(current, outcomes(asked))
    }

    /// `rooms()`, awaited: no thread waits while the rooms answer.
    public func rooms() async -> [RoomReport] {
        let (current, asked) = askStatistics()
        return report(current, await outcomes(asked))
    }

    /// Each room, and its statistics asked for now.
    private func askStatistics() -> ([Link], [EventLoopFuture<RTSPMessage>]) {
        let current = lock.withLock { _ in links }
        return (current, current.map { link in
            link.send("GET_PARAMETER", headers: [("Content-Type", "text/parameters")], body: Array("stats\r\n".utf8), timeout: 2)
        })
    }

    /// The report of `current`, whose answers to `askStatistics` are `answers`.
    private func report(_ current: [Link], _ answers: [Result<RTSPMessage, any Error>]) -> [RoomReport] {
        // A room that does not answer within its 2 s has no statistics in the report.
        let statistics = answers.map { answer -> [String: String]? in
            guard case .success(let reply) = answer else { return nil }
            let line = TextParameters(parsing: reply.bodyText)["stats"] ?? ""
            return Dictionary(line.split(separator: " ").compactMap { pair -> (String, String)? in
                let kv = pair.split(separator: "=", maxSplits: 1)
                return kv.count == 2 ? (String(kv[0]), String(kv[1])) : nil
            }, uniquingKeysWith: { $1 })
        }
        return lock.withLock { _ in
            zip(current, statistics).map { link, stats in
                let id = ObjectIdentifier(link)
                return RoomReport(
                    route: link.route, state: joining.contains(id) ? "joining" : timeline.running ? "playing" : "paused",
                    volume: Self.effective(levels[id] ?? 0), outputLatencyMilliseconds: outputLatencies[id] ?? 0,
                    outputDelayMilliseconds: outputDelays[id] ?? 0, statistics: stats,
                    retransmission: link.feedbackKinds.contains(.nack) ? link.feedback.report : nil,
                    quality: link.feedback.quality, encrypted: isEncrypted(link.route))
            }
        }
    }

    /// Takes a link out of the playback; false when it was already out. Call without `lock`.
    @discardableResult
    private func detach(_ link: Link) -> Bool {
        lock.withLock { _ in
            guard let index = links.firstIndex(where: { $0 === link }) else { return false }
            links.remove(at: index)
            let id = ObjectIdentifier(link)
            levels[id] = nil
            outputLatencies[id] = nil
            outputDelays[id] = nil
            joining.remove(id)
            return true
        }
    }

    /// Calls the app's room handlers, here, and tells every room the new list (`sendRooms`).
    private func notifyRoom(_ change: RoomChange) {
        for handler in lock.withLock({ _ in roomHandlers }) { handler(change) }
        inTurn { [weak self] in await self?.sendRooms() }
    }

    /// Runs `change` in a `commands` turn of its own, marked as this session's (`inOwnTurn`), whatever turn
    /// asked for it.
    private func inTurn(command: (room: Link, answered: EventLoopFuture<Void>)? = nil, _ change: @escaping @Sendable () async -> Void) {
        let turn = Turn(session: ObjectIdentifier(self), command: command)
        commands.enqueue {
            await Self.$turn.withValue(turn) { await change() }
            turn.ended.raise()
        }
    }

    /// Tells every room which rooms play this playback (streaming.md §3 `room`), so that a receiver's page
    /// shows its group; in a `commands` turn, off the thread that saw the change. A single room from the
    /// start is told nothing.
    private func sendRooms() async {
        let names: [String]? = lock.withLock { _ in
            guard !ended, links.count > 1 || toldRooms else { return nil }
            toldRooms = true
            return links.map { RoomList.printable($0.route.name) }
        }
        guard let names else { return }
        let body = Array(RoomList(names).parameters.serialized.utf8)
        await bestEffort("the room list") {
            _ = try await broadcastAwaited("SET_PARAMETER", what: "rooms SET_PARAMETER") { _ in ([("Content-Type", "text/parameters")], body) }
        }
    }

    private func recordAnswered(_ link: Link, _ reply: RTSPMessage) {
        let id = ObjectIdentifier(link)
        lock.withLock { _ in
            joining.remove(id)
            let answer = RecordAnswer.read(reply)
            outputLatencies[id] = answer.outputLatencyMilliseconds
            outputDelays[id] = answer.outputDelayMilliseconds
        }
    }

    /// Sends a request to every room at once. A room whose connection fails leaves the playback (a route
    /// change for it alone); a refusal is thrown. Throws the first failure only when no room is left or one
    /// refused. Blocks until every room has answered (`answered(_:)`); `broadcastAwaited` awaits instead.
    private func broadcast(_ method: String, what: String? = nil,
                           _ request: @escaping @Sendable (Link) -> (headers: [(String, String)], body: [UInt8]))
        throws -> [(Link, RTSPMessage)]
    {
        let (targets, sent, _) = send(method, what: what, request)
        return try answered(zip(targets, outcomes(sent)))
    }

    /// `broadcast`, awaited: no thread waits while the rooms answer.
    private func broadcastAwaited(_ method: String, what: String? = nil,
                                  _ request: @escaping @Sendable (Link) -> (headers: [(String, String)], body: [UInt8]))
        async throws -> [(Link, RTSPMessage)]
    {
        let (targets, sent, _) = send(method, what: what, request)
        return try answered(zip(targets, await outcomes(sent)))
    }

    /// `broadcast` for an update nothing waits for (`bestEffort`): sent now, in order with every other request
    /// on each room's connection; its answers are read in a `commands` turn when they have all come.
    private func broadcastUnawaited(_ update: String, _ request: @escaping @Sendable (Link) -> (headers: [(String, String)], body: [UInt8])) {
        let (targets, sent, _) = send("SET_PARAMETER", what: nil, request)
        EventLoopFuture.whenAllComplete(sent, on: mediaLoop).whenSuccess { [weak self] results in
            guard let self else { return }
            inTurn { self.bestEffort(update) { _ = try self.answered(zip(targets, results)) } }
        }
    }

    /// The request sent to every room, as the rooms stand now: the rooms, each one's answer to come, and, when
    /// `timed`, the host clock's time as the request was written to each room's connection (on its event
    /// loop; empty otherwise).
    private func send(_ method: String, what: String?, timed: Bool = false,
                      _ request: @Sendable (Link) -> (headers: [(String, String)], body: [UInt8]))
        -> (targets: [Link], answers: [EventLoopFuture<RTSPMessage>], written: [EventLoopFuture<UInt64>])
    {
        let targets = lock.withLock { _ in lastRequest = HostClock.now(); return links }
        var written: [EventLoopFuture<UInt64>] = []
        let answers = targets.map { link in
            let (headers, body) = request(link)
            guard timed else { return link.send(method, headers: headers, body: body, what: what) }
            // On the connection's own loop, so that the time is read as the write completes, not after a hop.
            let wrote = link.connectionLoop.makePromise(of: Void.self)
            written.append(wrote.futureResult.map { HostClock.now() })
            return link.send(method, headers: headers, body: body, what: what, written: wrote)
        }
        return (targets, answers, written)
    }

    /// The rooms' answers to a request sent to each: the rooms that answered, with their answers; a room whose
    /// connection failed leaves the playback; the first refusal is thrown, or, when no room answered, the
    /// first loss. Not on an event loop.
    private func answered(_ results: some Sequence<(Link, Result<RTSPMessage, any Error>)>) throws -> [(Link, RTSPMessage)] {
        var answered: [(Link, RTSPMessage)] = []
        var refusal: RTSPClient.Failure?
        var lost: RTSPClient.Failure?
        for (link, result) in results {
            switch result.mapError({ $0 as? RTSPClient.Failure ?? RTSPClient.Failure(description: "\($0)") }) {
            case .success(let reply): answered.append((link, reply))
            case .failure(let failure) where link.isClosed:
                // A session-end notice that came before the connection closed was read on its loop before
                // this request failed: the room has then left already, with the notice's reason.
                linkLost(link, reason: .oldDeviceUnavailable)
                lost = failure
            case .failure(let failure): refusal = refusal ?? failure
            }
        }
        if let refusal { throw refusal }
        if answered.isEmpty, let lost { throw lost }
        return answered
    }

    // MARK: control

    /// Starts (or resumes) playing: RECORD with a new anchor, `startDelay` ns from now, in every room. A live
    /// source that queued audio recorded while the session connected (`lyre sink`) sets `backdate` to that
    /// audio's length past what it starts with: the anchor is that much earlier, what is overdue is sent at
    /// once, and every sample plays as long after it was recorded as the rest, none dropped to catch up.
    public func start(startDelay: UInt64 = 20_000_000, backdate: UInt64 = 0) throws {
        try control.run {
            let record = try recordTerms(startDelay: startDelay, backdate: backdate)
            began(try broadcast("RECORD", { _ in (record.headers, []) }), startAt: record.startAt)
        }
    }

    /// `start(startDelay:backdate:)`, awaited: no thread waits while the rooms answer.
    public func start(startDelay: UInt64 = 20_000_000, backdate: UInt64 = 0) async throws {
        try await control.run {
            let record = try recordTerms(startDelay: startDelay, backdate: backdate)
            began(try await broadcastAwaited("RECORD", { _ in (record.headers, []) }), startAt: record.startAt)
        }
    }

    /// The RECORD that starts: a new anchor on the timeline, `startDelay` ns from now.
    private func recordTerms(startDelay: UInt64, backdate: UInt64) throws -> (headers: [(String, String)], startAt: UInt32?) {
        // Waiting for a lost room (`waitsForLostRooms`): nothing would hear it, so the position stays.
        guard !lock.withLock({ _ in links.isEmpty }) else { throw LyreSenderError.rooms("no room is left to play on") }
        let (anchor, seq, start) = lock.withLock { _ in timeline.anchor(at: HostClock.now(), startDelay: startDelay, backdate: backdate) }
        return (RecordRequest(anchor: anchor, info: RTPInfo(sequence: seq, rtpTime: anchor.rtpTime), startAt: start).headers, start)
    }

    /// The rooms answered RECORD: the timeline runs, and the pacer sends.
    private func began(_ answers: [(Link, RTSPMessage)], startAt: UInt32?) {
        for (link, reply) in answers { recordAnswered(link, reply) }
        let echoed = answers.allSatisfy { RecordAnswer.read($0.1).startAt == startAt }
        lock.withLock { _ in timeline.began(echoedStart: echoed) }
        pacerWake.signal()
    }

    /// Stops at once (FLUSH) in every room. Audio sent but not yet played is taken back, from the sample where
    /// the receivers' outputs stopped (`Lyre-Stopped-At` in FLUSH's answer, streaming.md §3; else from the
    /// frame due as the FLUSH was written to the first room), so `start()` resumes exactly: no sample lost,
    /// none played twice.
    public func pause() throws {
        try control.run {
            let flush = flushed()
            try paused(flush, answers: outcomes(flush.sent), written: outcomes(flush.written))
        }
    }

    /// `pause()`, awaited: no thread waits while the rooms answer.
    public func pause() async throws {
        try await control.run {
            let flush = flushed()
            try paused(flush, answers: await outcomes(flush.sent), written: await outcomes(flush.written))
        }
    }

    /// A FLUSH on its way to every room: the timeline stopped at `dueNow`, and each room's answer and write
    /// time to come.
    private struct Flush {
        let targets: [Link]
        let sent: [EventLoopFuture<RTSPMessage>]
        let written: [EventLoopFuture<UInt64>]
        let dueNow: UInt32
    }

    /// Stops the timeline, wakes what waits on it, and sends every room FLUSH.
    private func flushed() -> Flush {
        let (seq, rtp, dueNow) = lock.withLock { _ in timeline.pause(at: HostClock.now()) }
        wakePacerForAudio()
        wakeQueueWaiters()
        let headers = FlushTerms.request(next: RTPInfo(sequence: seq, rtpTime: rtp))
        let (targets, sent, written) = send("FLUSH", what: nil, timed: true) { _ in (headers, []) }
        return Flush(targets: targets, sent: sent, written: written, dueNow: dueNow)
    }

    /// The rooms answered FLUSH (or failed): what was sent and not played is taken back.
    private func paused(_ flush: Flush, answers results: [Result<RTSPMessage, any Error>], written: [Result<UInt64, any Error>]) throws {
        var answers: [(Link, RTSPMessage)] = []
        defer {
            // The rooms stopped at slightly different samples: resume from the earliest, so none skips audio.
            // A room that does not say (version 1) stopped as the FLUSH reached it: not before it was written,
            // which may be well after `dueNow` when this thread or the connection's loop waited for a core.
            // A write that failed has no time (its room's answer says why).
            let stops = answers.compactMap { FlushTerms.stoppedAt($0.1) }
            let left = written.compactMap { try? $0.get() }.min()
            lock.withLock { _ in
                timeline.takeBack(from: stops.min { Int32(bitPattern: $0 &- $1) < 0 } ?? left.map(timeline.dueRTP) ?? flush.dueNow)
            }
        }
        answers = try answered(zip(flush.targets, results))
    }

    /// Drops queued audio (for a seek: pause, drop, enqueue from the new position, start).
    public func dropQueued() {
        lock.withLock { _ in timeline.dropQueued() }
        wakeQueueWaiters()
    }

    // MARK: volume

    /// What a room's level sends: −30…0 dB, below −30 is mute (−144).
    static func effective(_ level: Double) -> Double { level < -30 ? -144 : min(0, level) }

    /// The group volume (dB, RAOP scale: −30…0, −144 = mute): the loudest room's, as AirPlay's group
    /// slider shows it. With one room, that room's volume.
    public var volume: Double { lock.withLock { _ in levels.values.map(Self.effective).max() ?? -144 } }

    /// Sets the group volume: every room moves by the same number of dB, so their balance is kept (AirPlay's
    /// group slider scales every room). With one room, sets its volume.
    public func setVolume(_ db: Double) throws {
        _ = try broadcast("SET_PARAMETER", what: "volume SET_PARAMETER", groupVolume(db))
    }

    /// `setVolume(_:)`, awaited: no thread waits while the rooms answer.
    public func setVolume(_ db: Double) async throws {
        _ = try await broadcastAwaited("SET_PARAMETER", what: "volume SET_PARAMETER", groupVolume(db))
    }

    /// Moves every room's level to make the group volume `db`: what each room is sent.
    private func groupVolume(_ db: Double) -> @Sendable (Link) -> (headers: [(String, String)], body: [UInt8]) {
        let targets = lock.withLock { _ -> [ObjectIdentifier: Double] in
            let top = levels.values.max() ?? 0
            // Mute is a level far below −30, so unmuting brings every room back where it was.
            let delta = db <= -144 ? -200 - max(top, -30) : db - max(top, -30)
            for id in levels.keys { levels[id]! += delta }
            return levels
        }
        return { link in
            ([("Content-Type", "text/parameters")], Self.levelBody(targets[ObjectIdentifier(link)] ?? 0))
        }
    }

    /// Sets one room's volume (dB, RAOP scale).
    public func setVolume(_ db: Double, room name: String) throws {
        try RTSPClient.wait(level(db, of: room(named: name)))
    }

    /// `setVolume(_:room:)`, awaited: no thread waits while the room answers.
    public func setVolume(_ db: Double, room name: String) async throws {
        try await RTSPClient.awaited(level(db, of: room(named: name)))
    }

    private func room(named name: String) throws -> Link {
        guard let link = lock.withLock({ _ in links.first { $0.route.isNamed(name) } }) else {
            throw LyreSenderError.rooms("no room '\(name)' in this playback")
        }
        return link
    }

    /// Sends a room its level; once it is answered 200, keeps it.
    private func level(_ level: Double, of link: Link) -> EventLoopFuture<Void> {
        link.send("SET_PARAMETER", headers: [("Content-Type", "text/parameters")], body: Self.levelBody(level), what: "volume SET_PARAMETER")
            .map { _ in self.keep(level, of: link) }
    }

    /// A room's volume request: `level` as it is sent.
    private static func levelBody(_ level: Double) -> [UInt8] { Array("volume: \(effective(level))\r\n".utf8) }

    /// Keeps the level a room took, unless it left meanwhile.
    private func keep(_ level: Double, of link: Link) {
        lock.withLock { _ in if levels[ObjectIdentifier(link)] != nil { levels[ObjectIdentifier(link)] = level } }
    }

    /// One step up or down, 1/16 of the range as iOS volume buttons; below −30 dB is mute. From a room's
    /// controls the step moves that room; otherwise the group.
    private func stepVolume(up: Bool) async -> RemoteCommandStatus {
        let origin = commandOrigin
        let current = origin.flatMap { link in lock.withLock { _ in levels[ObjectIdentifier(link)] } }.map(Self.effective) ?? volume
        return await applyVolume(from: origin, Self.stepped(current, up: up))
    }

    /// The level one volume step from `level` (now-playing.md §4.3): 1/16 of −30…0 dB; a step below −30 mutes
    /// (−144), and a step up from mute is −30.
    static func stepped(_ level: Double, up: Bool) -> Double {
        let step = 30.0 / 16
        return up ? (level <= -144 ? -30 : min(0, level + step)) : (level - step < -30 ? -144 : level - step)
    }

    /// A volume a receiver's controls asked for (a step, or its slider): that room's, or the group's when it
    /// came from no room; the app's observers hear the group volume.
    private func applyVolume(from origin: Link?, _ db: Double) async -> RemoteCommandStatus {
        do {
            if let origin { try await RTSPClient.awaited(level(db, of: origin)) } else { try await setVolume(db) }
            let (handlers, now) = (lock.withLock { _ in volumeHandlers }, volume)
            for handler in handlers { handler(now) }
            return .success
        } catch {
            return .commandFailed
        }
    }

    // MARK: now playing

    /// Describes what plays (`MPNowPlayingInfoCenter.nowPlayingInfo`) in every room. Send it when the rate
    /// changes, on a seek and on a track change; the receivers extrapolate the position in between.
    public func setNowPlaying(_ info: NowPlayingInfo) throws {
        _ = try broadcast("SET_PARAMETER", what: "now-playing SET_PARAMETER", nowPlaying(info))
    }

    /// `setNowPlaying(_:)`, awaited: no thread waits while the rooms answer.
    public func setNowPlaying(_ info: NowPlayingInfo) async throws {
        _ = try await broadcastAwaited("SET_PARAMETER", what: "now-playing SET_PARAMETER", nowPlaying(info))
    }

    /// Keeps `info` for rooms that join later: what each room is sent.
    private func nowPlaying(_ info: NowPlayingInfo) throws -> @Sendable (Link) -> (headers: [(String, String)], body: [UInt8]) {
        try info.validate()
        lock.withLock { _ in lastNowPlaying = info }
        let body = info.serialized()
        return { _ in ([("Content-Type", "application/json")], body) }
    }

    /// Sets the cover art shown with the now-playing info; nil clears it.
    public func setArtwork(_ artwork: Artwork?) throws {
        _ = try broadcast("SET_PARAMETER", what: "artwork SET_PARAMETER", cover(artwork))
    }

    /// `setArtwork(_:)`, awaited: no thread waits while the rooms answer.
    public func setArtwork(_ artwork: Artwork?) async throws {
        _ = try await broadcastAwaited("SET_PARAMETER", what: "artwork SET_PARAMETER", cover(artwork))
    }

    /// Keeps `artwork` for rooms that join later: what each room is sent.
    private func cover(_ artwork: Artwork?) -> @Sendable (Link) -> (headers: [(String, String)], body: [UInt8]) {
        lock.withLock { _ in lastArtwork = artwork }
        let headers = [("Content-Type", artwork?.type.rawValue ?? "image/jpeg")]
        return { _ in (headers, artwork?.bytes ?? []) }
    }

    private func sendEnabledCommands(_ enabled: EnabledCommands) {
        guard !lock.withLock({ _ in lastEnabled = enabled; return ended }) else { return }
        let body = Array(enabled.parameters.serialized.utf8)
        broadcastUnawaited("the enabled commands") { _ in ([("Content-Type", "text/parameters")], body) }
    }

    // MARK: content positions

    /// Frames (48 kHz) enqueued so far, less what `dropQueued` dropped: the index the next enqueued frame gets.
    public var enqueuedFrames: UInt64 { lock.withLock { _ in timeline.contentEnqueued } }

    /// How many enqueued frames have played by sender-clock time `now`.
    public func playedFrames(at now: UInt64 = HostClock.now()) -> UInt64 {
        lock.withLock { _ in timeline.playedFrames(at: now) }
    }

    /// Sender-clock time at which enqueued frame `frame` plays, while playing; nil while paused.
    public func playTime(ofFrame frame: UInt64) -> UInt64? {
        lock.withLock { _ in timeline.playTime(ofFrame: frame) }
    }

    /// Queues audio: 48 kHz interleaved stereo float. Blocks while more than a second is queued; returns
    /// false once the session has ended.
    @discardableResult
    public func enqueue(_ pcm: [Float]) -> Bool {
        guard waitForQueue(below: 96000, whilePaused: true) else { return false }
        lock.withLock { _ in timeline.enqueue(pcm) }
        wakePacerForAudio()
        return true
    }

    private func wakePacerForAudio() {
        if lock.withLock({ _ -> Bool in defer { pacerWaitsForAudio = false }; return pacerWaitsForAudio }) { audioWake.signal() }
    }

    /// The app has no more audio for now (the end of a queue): a last part shorter than a packet is padded
    /// with silence to a whole one, so that it is sent and `playedFrames` reaches `enqueuedFrames`. Until
    /// then a part packet waits in the queue for the audio that completes it.
    public func padToPacket() {
        lock.withLock { _ in timeline.padToPacket() }
    }

    /// Waits, on the pacer's signal, until fewer than `samples` are queued (and, when `flushed`, the encoder's
    /// tail has been sent too); false when the session ended (or, unless `whilePaused`, stopped running) first.
    private func waitForQueue(below samples: Int, whilePaused: Bool, flushed: Bool = false) -> Bool {
        while true {
            // Read before the check: a change after it is signalled after it, and ends the wait below at once.
            let seen = queueWake.signals
            if let over = lock.withLock({ _ in queueWaitOver(below: samples, whilePaused: whilePaused, flushed: flushed) }) { return over }
            // Signalled after each change of what is checked above: the pacer takes a frame, the queue is
            // dropped, the session pauses, loses its last room or ends.
            queueWake.wait(after: seen)
        }
    }

    /// Whether a wait for fewer than `samples` queued is over (called under `lock`): true when they are (and,
    /// if `flushed`, the last partial frame was sent too), false when the session ended or, unless
    /// `whilePaused`, stopped; nil while it goes on.
    private func queueWaitOver(below samples: Int, whilePaused: Bool, flushed: Bool) -> Bool? {
        if ended || (!whilePaused && !timeline.running) { return false }
        if timeline.queuedSamples < samples, !flushed || !timeline.holdsUnflushedTail { return true }
        return nil
    }

    private func wakeQueueWaiters() {
        let (notice, drained) = lock.withLock { _ -> ((@Sendable () -> Void)?, [CheckedContinuation<Void, Never>]) in
            var drained: [CheckedContinuation<Void, Never>] = []
            if !drainAwaiters.isEmpty, queueWaitOver(below: 1, whilePaused: false, flushed: true) != nil {
                swap(&drained, &drainAwaiters)
            }
            guard let notice = drainNotice, ended || timeline.queuedSamples / 2 < notice.frames else { return (nil, drained) }
            drainNotice = nil
            return (notice.handler, drained)
        }
        queueWake.signal()
        for awaiter in drained { awaiter.resume() }
        notice?()
    }

    /// Calls `handler` once as soon as fewer than `frames` are queued, or the session has ended: at once
    /// when that is already so, else from the thread that takes the frames, or from a connection's event loop
    /// when the last room went away: `handler` must not block. A producer that must not
    /// block in `enqueue` (it also watches for commands) waits on this instead of polling. A newer call
    /// replaces one not yet answered.
    public func whenQueued(below frames: Int, _ handler: @escaping @Sendable () -> Void) {
        let now = lock.withLock { _ -> Bool in
            if ended || timeline.queuedSamples / 2 < frames { return true }
            drainNotice = (frames, handler)
            return false
        }
        if now { handler() }
    }

    /// Frames (48 kHz) queued and not yet sent.
    public var queuedFrames: Int { lock.withLock { _ in timeline.queuedSamples / 2 } }

    /// The session is over: closed, or every room went away or was taken over.
    public var hasEnded: Bool { lock.withLock { _ in ended } }

    /// Every room went away by itself and the playback waits, paused, for one to come back
    /// (``StreamConfiguration/waitsForLostRooms``).
    public var isWaitingForRooms: Bool { lock.withLock { _ in !ended && links.isEmpty } }

    /// Why the last room went away, once it has (what `onRouteChange` was told).
    public var routeChangeReason: OutputRouteChangeReason? { lock.withLock { _ in lostRoute } }

    /// Sender-clock time at which what has been sent so far will have played.
    public var sentUntil: UInt64 {
        lock.withLock { _ in timeline.sentUntil }
    }

    /// Sends what is queued, waits until it has played, then TEARDOWN and close.
    public func finish() {
        beginFinishing()
        _ = waitForQueue(below: 1, whilePaused: false, flushed: true)
        if let played = playedBy() { HostClock.sleep(until: played) }
        close()
    }

    /// `finish()`, awaited: no thread waits for the queue to be sent, for it to play or for the rooms' answers.
    public func finish() async {
        beginFinishing()
        await withCheckedContinuation { (drained: CheckedContinuation<Void, Never>) in
            let over = lock.withLock { _ -> Bool in
                if queueWaitOver(below: 1, whilePaused: false, flushed: true) != nil { return true }
                drainAwaiters.append(drained)
                return false
            }
            if over { drained.resume() }
        }
        if let played = playedBy() {
            let now = HostClock.now()
            // A cancelled task does not wait for the end to play: it closes at once.
            if played > now { try? await Task.sleep(nanoseconds: played - now) }
        }
        await close()
    }

    /// No more audio comes: the pacer sends the last partial frame, and waits no longer for late audio.
    private func beginFinishing() {
        lock.withLock { _ in finishing = true }
        wakePacerForAudio()
    }

    /// When all that was sent will have played (and 20 ms more), while the playback still plays.
    private func playedBy() -> UInt64? {
        lock.withLock { _ in timeline.running && !ended ? timeline.sentUntil + 20_000_000 : nil }
    }

    /// TEARDOWN in every room and close now. A command being handled (a room's remote `stop`, which ends the
    /// playback) is answered before the TEARDOWN: the receiver that relayed it would otherwise lose the answer
    /// with its session. From that command's own handler, the room that sent it is sent its TEARDOWN once the
    /// handler has returned and the command is answered; this returns without waiting for that one, and a
    /// later `close()` waits for it.
    public func close() {
        if !inOwnTurn { commands.drain() }
        let closed = tornDown(answering: handlingHere)
        _ = outcomes(closed.now)
        closeEndpoints(after: closed.afterAnswer)
    }

    /// `close()`, awaited: no thread waits for the command being handled or the rooms' answers.
    public func close() async {
        if !inOwnTurn { await commands.drain() }
        let closed = tornDown(answering: handlingHere)
        _ = await outcomes(closed.now)
        closeEndpoints(after: closed.afterAnswer)
    }

    /// The shared sockets closed now, or once the TEARDOWN left to follow a command's answer is answered.
    private func closeEndpoints(after teardown: EventLoopFuture<Void>?) {
        guard let teardown else { return closeEndpoints() }
        teardown.whenComplete { [self] _ in closeEndpoints() }
    }

    /// Ends the session and sends TEARDOWN in every room: each room's link closed, to come (`now`; once the
    /// session has ended, the TEARDOWNs left to follow a command's answer). From a command's handler
    /// (`handling`), the room that sent it is sent its TEARDOWN once the command is answered, when the handler
    /// has returned (`afterAnswer`, not among `now`: the handler's `close()` would wait for itself).
    private func tornDown(answering handling: (room: Link, answered: EventLoopFuture<Void>)? = nil)
        -> (now: [EventLoopFuture<Void>], afterAnswer: EventLoopFuture<Void>?)
    {
        let (closing, left, afterAnswer) = lock.withLock { _ -> ([Link], [EventLoopFuture<Void>], EventLoopFuture<Void>?) in
            defer { ended = true; timeline.end(); routeChangeSent = true; links.removeAll() }
            // Ended already: what is left to follow the answers, but this handler's own (it would wait for itself),
            // after which the shared sockets close all the same.
            guard !ended else {
                let own = teardownsAfterAnswers.first { $0.answered === handling?.answered }?.teardown
                return ([], teardownsAfterAnswers.filter { $0.answered !== handling?.answered }.map(\.teardown), own)
            }
            guard let handling, let room = links.first(where: { $0 === handling.room }) else { return (links, [], nil) }
            // Kept with `ended` set, so that no other `close()` misses it.
            let teardown = handling.answered.flatMap { room.closing(teardown: true) }
            teardownsAfterAnswers.append((handling.answered, teardown))
            return (links.filter { $0 !== room }, [], teardown)
        }
        pacerWake.signal()
        // A pacer waiting for the app's audio (a live source's late audio, a catch-up's) ends now, not at its deadline.
        wakePacerForAudio()
        wakeQueueWaiters()
        return (left + closing.map { $0.closing(teardown: true) }, afterAnswer)
    }

    // MARK: receiver events

    private func receiverRequest(_ request: RTSPMessage, from link: Link, reply: @escaping RTSPClient.Reply) {
        guard request.method == "SET_PARAMETER" else {
            reply(request.method == "OPTIONS" || request.method == "GET_PARAMETER" ? 200 : 501, [])
            return
        }
        // Only a room's own receiver may command it: the request came over the room's own connection, and it
        // must name the room's session.
        switch ReceiverNotice.read(request, session: link.sessionID) {
        case .failure(let refusal):
            reply(refusal.status, [("Lyre-Error", refusal.reason)])
        case .success(.sessionEnd(let end)):
            reply(200, [])
            linkLost(link, reason: OutputRouteChangeReason(end), stoppedAt: end.stoppedAt)
        case .success(.command(let event)):
            let answered = mediaLoop.makePromise(of: Void.self)
            inTurn(command: (link, answered.futureResult)) { [self] in
                // A blocking handler runs on a thread of its own, in this turn all the same.
                let turn = Self.turn
                let status = await remoteCommands.handle(event) { body in Self.$turn.withValue(turn, operation: body) }
                let answer = ReceiverNotice.answer(status)
                // Written before a TEARDOWN the handler asked for (`tornDown`), which follows this.
                reply(answer.status, answer.headers)
                answered.succeed()
            }
        }
    }

    /// Adds a handler for the end of the playback, when the last room is gone (a `QueuePlayer` adds its
    /// own). Called at once if it is already gone. With `waitsForLostRooms` it is called each time the last
    /// room goes away by itself, and the playback waits paused instead of ending.
    func observeRouteChange(_ handler: @escaping @Sendable (OutputRouteChangeReason) -> Void) {
        let lost: OutputRouteChangeReason? = lock.withLock { _ in
            if lostRoute == nil { routeChangeHandlers.append(handler) }
            return lostRoute
        }
        if let lost { handler(lost) }
    }

    /// A room went away by itself: it leaves the playback; when it was the last, the playback ends, or with
    /// `waitsForLostRooms` pauses to wait for one. Does not block (it is called on a connection's event loop):
    /// the app's handlers are called on `roomsLeft`.
    /// `stoppedAt`: where the room's output stopped, when its receiver said (`Lyre-Stopped-At`).
    private func linkLost(_ link: Link, reason: OutputRouteChangeReason, stoppedAt: UInt32? = nil) {
        guard !lock.withLock({ _ in ended }), detach(link) else { return }
        _ = link.closing(teardown: false)
        let (remaining, handlers, roomHandlers) = lock.withLock { _ -> (Int, [@Sendable (OutputRouteChangeReason) -> Void], [@Sendable (RoomChange) -> Void]) in
            let roomHandlers = self.roomHandlers
            guard links.isEmpty else { return (links.count, [], roomHandlers) }
            if configuration.waitsForLostRooms, reason == .oldDeviceUnavailable {
                // Paused where the room's output stopped, when its receiver said, else where it was due.
                if timeline.running {
                    let due = timeline.pause(at: HostClock.now()).due
                    timeline.takeBack(from: stoppedAt ?? due)
                }
                return (0, routeChangeHandlers, roomHandlers)
            }
            timeline.end()
            ended = true
            guard !routeChangeSent else { return (0, [], roomHandlers) }
            routeChangeSent = true
            lostRoute = reason
            return (0, routeChangeHandlers, roomHandlers)
        }
        let change = RoomChange(route: link.route, kind: .left(reason), remaining: remaining)
        roomsLeft.async {
            for handler in roomHandlers { handler(change) }
            for handler in handlers { handler(reason) }
        }
        inTurn { [weak self] in await self?.sendRooms() }
        if remaining == 0 {
            // Ended, or paused to wait for a room: `finish()` no longer waits for the queue to drain, nor the pacer
            // for the app's audio (as `pause()` wakes it).
            let over = hasEnded
            wakeQueueWaiters()
            if over { pacerWake.signal() }
            wakePacerForAudio()
            if over { closeEndpoints() }
        }
    }

    // MARK: pacing

    private func pace() {
        do {
            var encoder = try FrameEncoder(bitrate: configuration.bitrate, frameSamples: frameSamples, ssrc: ssrc)
            lock.withLock { _ in timeline.encoderDelay = encoder.lookahead }
            pace(with: &encoder)
        } catch {
            Self.logger.error("the playback ends: cannot make its Opus encoder: \(error)")
            close()
        }
    }

    private func pace(with encoder: inout FrameEncoder) {
        let lateAudioWait = UInt64(configuration.lateAudioWaitMilliseconds) * 1_000_000
        // One parity packet per row of media packets, to the rooms that take FEC (streaming.md §4.3).
        var fec = configuration.fecRow.map { FECEncoder(row: $0, payloadType: Self.fecPayloadType, ssrc: ssrc ^ 0x5A5A_5A5A) }
        var sentLastSlot = false
        let latency = lock.withLock { _ in timeline.latency }
        var catchUp: CatchUp?
        /// Logs what a catch-up skipped, once it is over: back on time, paused, or the session ended.
        func caughtUp() {
            if let done = catchUp { Self.logger.warning("\(done.summary(frameMilliseconds: configuration.frameMilliseconds))") }
            catchUp = nil
        }
        defer { caughtUp() }
        while true {
            let step = lock.withLock { _ in (ended: ended, running: timeline.running, due: timeline.nextDue) }
            if step.ended { break }
            if !step.running {
                caughtUp()
                // Paused: sleep until started or ended, and keep the sessions alive (streaming.md §7).
                if !pacerWake.wait(until: HostClock.now() + 4_000_000_000), !hasEnded,
                    HostClock.now() - lock.withLock({ _ in lastRequest }) > 4_000_000_000
                {
                    bestEffort("the keep-alive") { _ = try broadcast("GET_PARAMETER") { _ in ([], []) } }
                }
                continue
            }
            HostClock.sleep(until: step.due > lead ? step.due - lead : 0)
            let now = HostClock.now()
            var deadline = lateAudioWait > 0 ? (step.due > lead ? step.due - lead : 0) + lateAudioWait : 0
            if now > step.due + latency {
                // This frame's time to play has passed: the sender was stopped (a laptop's lid, SIGSTOP) and
                // catches up (streaming.md §9.1). What was due is skipped by sending it at once, too late to
                // play, so that the audio after it plays where its timeline puts it. The app's thread that
                // enqueues was stopped too and refills the queue while the pacer runs through it: a frame
                // that finds it empty waits for that audio (at most half a latency per catch-up, all waits
                // together, for an app whose audio had really run dry) instead of passing in silence, which
                // would move every later sample a frame late. A live source's capture is not waited for here:
                // its own late wait above stands.
                if catchUp == nil {
                    catchUp = CatchUp(waitUntil: now + latency / 2)
                }
                if lateAudioWait == 0 { deadline = catchUp!.waitUntil }
            } else {
                caughtUp()
            }
            if deadline > now {
                // A live source's audio is late, or a catch-up's: its frame goes when it comes, while it can
                // still play in time (or within the catch-up's wait).
                while lock.withLock({ _ -> Bool in
                    let late = !ended && timeline.awaitsAudio(finishing: finishing)
                    pacerWaitsForAudio = late
                    return late
                }), HostClock.now() < deadline {
                    audioWake.wait(until: deadline)
                }
                lock.withLock { _ in pacerWaitsForAudio = false }
            }
            let (frame, starved) = lock.withLock { _ in
                let starved = timeline.awaitsAudio(finishing: finishing)
                return (timeline.nextSlot(finishing: finishing), starved)
            }
            // Without a frame of the app's audio, the slot passes in silence (or sends the frame that carries
            // the encoder's tail out): what follows plays a frame later.
            if catchUp != nil, frame != nil { catchUp!.count(starved: starved) }
            wakeQueueWaiters()
            guard let frame, let pcm = frame.pcm else {
                // The first slot with nothing to send after a packet (the stream's end, or the app's audio ran
                // dry): the reports go at once, so that a receiver that lost the last packets asks for them (§4.1).
                if frame != nil, sentLastSlot { for link in lock.withLock({ _ in links }) { link.reportNow() } }
                sentLastSlot = false
                continue
            }
            sentLastSlot = true
            // One encode, the same packet to every room.
            guard let packet = encoder.packet(for: frame, pcm) else {
                lock.withLock { _ in framesNotEncoded = encoder.failures }
                // The first failure says why; a broken encoder would say it every frame.
                if encoder.failures == 1 || encoder.failures % 1000 == 0 {
                    Self.logger.warning("a frame was not sent (\(encoder.failures) so far): \(encoder.lastFailure.map { "\($0)" } ?? "")")
                }
                continue
            }
            let bytes = packet.serialized()
            // Kept and sent under one lock: a room joining now gets this packet exactly once, either
            // among the packets `add` sends it or from here.
            lock.withLock { _ in
                // Paused meanwhile: its audio was taken back.
                guard timeline.sent(bytes, for: frame) else { return }
                Link.send(bytes, parity: fec?.add(packet), to: links)
            }
        }
    }
}
