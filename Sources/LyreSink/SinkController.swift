import Dispatch
import Logging
import LyreClock
import LyreDiscovery
import LyreMPRIS
import LyreSender
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Carries out SinkRouter's decisions on the sound server (PulseClient, MonitorCapture) and the network
/// (StreamSession), one event at a time on its own queue.
public final class SinkController: @unchecked Sendable {
    private let queue = DispatchQueue(label: "lyre.sink")
    private var router: SinkRouter
    private var pulse: PulseClient?
    private var routes: [String: OutputRoute] = [:]
    private var captures: [SinkRouter.OutputID: MonitorCapture] = [:]
    /// The sessions streaming now, and the volume each was last given (dB).
    private var sessions: [SinkRouter.OutputID: StreamSession] = [:]
    private var volumes: [SinkRouter.OutputID: Double] = [:]
    /// Which start of each output's stream is the current one (a connection that finishes after a stop
    /// or a newer start is closed).
    private var generations: [SinkRouter.OutputID: Int] = [:]
    /// Main outputs whose session is connecting, each with the volume its slider was moved to meanwhile (nil
    /// while it was not): the receiver is given that volume once the session starts, rather than the slider
    /// being set back to the receiver's.
    private var connecting: [SinkRouter.OutputID: Double?] = [:]
    private var applications: [UInt32: String] = [:]
    /// Each stream's process, for finding the app's MPRIS player.
    private var processes: [UInt32: UInt32] = [:]
    /// The apps' MPRIS players (none without a session bus), and what each receiver was last told of one.
    private var watcher: BusReconnector<MPRISPlayerWatcher>?
    private var players: [String: WatchedPlayer] = [:]
    private var bridges: [String: Bridge] = [:]
    /// Requests to the receivers (now playing, cover, enabled controls, volume) wait for their answers here, in
    /// order, off the controller's queue.
    private let outgoing = DispatchQueue(label: "lyre.sink.outgoing")

    /// The player that speaks for a receiver's output, and what was last sent of it.
    struct Bridge {
        var player: String?
        var shown: WatchedPlayer?
        var artURL: String?
    }
    private let configuration: StreamConfiguration
    private let logger: Logger
    /// Signalled when the sound server goes away.
    public let lost = DispatchGroup()
    /// Streams playing out what they hold before their TEARDOWN.
    private let finishing = DispatchGroup()

    /// `announcements`: each receiver gets an announcements output too, whose stream ducks what it plays.
    public init(configuration: StreamConfiguration, announcements: Bool = false, logger: Logger) {
        self.configuration = configuration
        router = SinkRouter(announcements: announcements)
        self.logger = logger
        lost.enter()
    }

    public func connect() throws {
        let client = try PulseClient(
            name: "Lyre",
            onInput: { [weak self] input in
                guard let self else { return }
                self.queue.async { self.inputChanged(input) }
            },
            onVolume: { [weak self] sink, decibels, muted in
                guard let self else { return }
                self.queue.async { self.volumeChanged(sink: sink, decibels: decibels, muted: muted) }
            },
            onLost: { [weak self] in
                guard let self else { return }
                self.logger.error("the sound server went away")
                self.lost.leave()
            })
        logger.info("sound server: \(client.serverName)")
        queue.sync { pulse = client }
    }

    /// Watches the apps' MPRIS players on the session bus; without one, outputs still play, with nothing shown.
    public func watchPlayers() {
        do {
            let watcher = try BusReconnector<MPRISPlayerWatcher>(
                label: "lyre-sink-mpris",
                make: { [weak self] lost throws(MPRISError) in
                    try MPRISPlayerWatcher(
                        bus: .session,
                        onChange: { [weak self] player in
                            guard let self else { return }
                            self.queue.async {
                                self.players[player.busName] = player
                                self.refreshAll()
                            }
                        },
                        onRemoved: { [weak self] name in
                            guard let self else { return }
                            self.queue.async {
                                self.players[name] = nil
                                self.refreshAll()
                            }
                        },
                        onLost: lost)
                },
                close: { $0.close() },
                // The bus restarted: its players went with it; those that come back are listed anew.
                onLost: { [weak self, logger] in
                    logger.warning("the session bus went away; watching for apps' players again every second")
                    guard let self else { return }
                    self.queue.async {
                        self.players.removeAll()
                        self.refreshAll()
                    }
                },
                onBack: { [logger] _ in logger.notice("watching apps' players on the session bus again") })
            queue.sync { self.watcher = watcher }
        } catch {
            logger.warning("apps' now playing and controls are not passed on: \(error)")
        }
    }

    /// A receiver appeared, changed or left.
    public func deviceChanged(_ change: RouteChange) {
        queue.async { [self] in
            let device = change.device
            let id = device.id.rawValue
            let address = device.streamAddress
            if change.reason == .deviceUnavailable || !device.isPlayable || address == nil {
                if routes.removeValue(forKey: id) != nil { logger.info("receiver '\(device.name)' left") }
                perform(router.receiverGone(id: id))
                return
            }
            routes[id] = OutputRoute(host: address!, port: device.port, name: device.name, id: id)
            perform(router.receiverAppeared(id: id, name: device.name))
        }
    }

    private func inputChanged(_ input: PulseInput) {
        if let sink = input.sink {
            if let application = input.application { applications[input.index] = application }
            if let pid = input.processID { processes[input.index] = pid }
            perform(router.inputChanged(index: input.index, sink: sink, role: input.role))
        } else {
            applications[input.index] = nil
            processes[input.index] = nil
            perform(router.inputRemoved(index: input.index))
        }
        refreshAll()
    }

    /// An output's slider moved: its receiver's volume follows while it streams. An announcements output's
    /// slider is not the receiver's volume but the announcements' own level. Either acts once: what a main
    /// output records is brought back up by what the server applied of its slider (`SinkRouter.captureGain`).
    private func volumeChanged(sink: UInt32, decibels: Double, muted: Bool) {
        guard let output = router.output(ofSink: sink) else { return }
        captures[output]?.gain = SinkRouter.captureGain(output.kind, outputDecibels: decibels, muted: muted)
        guard output.kind == .main else { return }
        let volume = SinkRouter.receiverVolume(outputDecibels: decibels, muted: muted)
        guard abs(volume - (volumes[output] ?? .infinity)) >= 0.05 else { return }
        volumes[output] = volume
        guard let session = sessions[output] else {
            if connecting[output] != nil {
                connecting[output] = .some(volume)
                logger.info("volume of \(label(output)): \(volume) dB, from its output, once it streams")
            }
            return
        }
        give(volume, to: session, output: output)
    }

    /// Sets the receiver's volume from its output's slider.
    private func give(_ volume: Double, to session: StreamSession, output: SinkRouter.OutputID, _ when: String = "") {
        do {
            try session.setVolume(volume)
            logger.info("volume of \(label(output)): \(volume) dB, from its output\(when)")
        } catch {
            logger.warning("cannot set the volume of \(label(output)): \(error)")
        }
    }

    /// The receiver an output plays to, as the log names it.
    private func label(_ output: SinkRouter.OutputID) -> String {
        let receiver = routes[output.receiver]?.description ?? output.receiver
        return output.kind == .main ? receiver : "\(receiver)'s announcements"
    }

    /// A stream started. On the main output, the slider shows the receiver's volume, now and whenever the
    /// receiver's controls change it, and the receiver's controls go to the app's player.
    private func started(_ session: StreamSession, output: SinkRouter.OutputID) {
        sessions[output] = session
        let moved = connecting.removeValue(forKey: output) ?? nil
        // An announcement's volume at the receiver is its own gain (streaming.md §7), not the receiver's volume
        // that the session reports: its output's slider does not follow the receiver, nor does it set the receiver's.
        // Nor does it show anything or take controls: the receiver shows and controls what it plays over.
        guard output.kind == .main else { return }
        if let moved {
            // The slider moved while the session connected: it is what the listener chose last.
            volumes[output] = moved
            give(moved, to: session, output: output, ", set while connecting")
        } else {
            showVolume(session.volume, output: output)
        }
        session.observeVolume { [weak self] volume in
            guard let self else { return }
            self.queue.async {
                guard self.sessions[output] === session else { return }
                self.showVolume(volume, output: output)
            }
        }
        let receiver = output.receiver
        // Disabled first, so that adding the handlers sends nothing; refresh enables what the player can do.
        session.remoteCommands.setEnabled(PlayerBridge.enabled(nil))
        for command in PlayerBridge.bridgedCommands {
            session.remoteCommands.addHandler(command) { [weak self] event async in
                await self?.relay(event, receiver: receiver) ?? .commandFailed
            }
        }
        bridges[receiver] = Bridge()
        refresh(receiver)
    }

    private func showVolume(_ volume: Double, output: SinkRouter.OutputID) {
        volumes[output] = volume
        guard let sink = router.sink(of: output) else { return }
        do { try pulse?.setVolume(sink: sink, decibels: volume) } catch { logger.warning("\(error)") }
    }

    // MARK: the app's now playing and controls

    private func refreshAll() {
        for output in sessions.keys where output.kind == .main { refresh(output.receiver) }
    }

    /// Tells the receiver what the app playing there shows on MPRIS, when that changed, and which of its
    /// controls the app takes.
    private func refresh(_ receiver: String) {
        guard let session = sessions[SinkRouter.OutputID(receiver)], var bridge = bridges[receiver] else { return }
        let input = router.nowPlayingInput(receiver: receiver)
        let player = input.flatMap { input in
            PlayerBridge.player(processIDs: ProcessAncestry.chain(of: processes[input]), application: applications[input],
                                among: Array(players.values))
        }
        guard player != bridge.shown || player?.busName != bridge.player else { return }
        if player?.busName != bridge.player {
            let app = input.flatMap { applications[$0] } ?? "the app"
            logger.info("\(routes[receiver]?.description ?? receiver) shows \(player.map { "\($0.busName) (\(app))" } ?? "no player")")
        }
        // Once a track, not at every position update.
        if let player, player.state.metadata != bridge.shown?.state.metadata, case let capped = PlayerBridge.cappedFields(player),
            !capped.isEmpty
        {
            logger.notice("\(player.busName)'s \(capped.joined(separator: ", ")) cut to what the receiver takes (now-playing.md §2)")
        }
        bridge.player = player?.busName
        bridge.shown = player
        let info = player.map { PlayerBridge.nowPlaying($0, at: MPRISState.monotonicNow) } ?? NowPlayingInfo()
        let artURL = player?.state.metadata?.artURL
        let newArt = artURL != bridge.artURL
        bridge.artURL = artURL
        bridges[receiver] = bridge
        let enabled = PlayerBridge.enabled(player?.state)
        let logger = logger
        outgoing.async {
            session.remoteCommands.setEnabled(enabled)
            do { try session.setNowPlaying(info) } catch { logger.warning("now playing not sent: \(error)") }
            guard newArt else { return }
            do { try session.setArtwork(Self.artwork(at: artURL, logger: logger)) } catch { logger.warning("cover not sent: \(error)") }
        }
    }

    /// The cover a player names: a local JPEG or PNG file within the size limit; anything else is not sent.
    private static func artwork(at url: String?, logger: Logger) -> Artwork? {
        switch PlayerBridge.artworkSource(url) {
        case .none:
            return nil
        case .elsewhere(let scheme):
            logger.info("the app's cover is not sent: only local files are read, not \(scheme) URLs")
            return nil
        case .file(let path):
            let bytes: [UInt8]
            switch RegularFile.read(path, limit: Artwork.maximumBytes) {
            case .success(let read): bytes = read
            case .failure(let failure):
                logger.info("the app's cover \(path) is not sent: \(failure)")
                return nil
            }
            do {
                return try Artwork(bytes: bytes)
            } catch {
                logger.info("the app's cover \(path) is not sent: \(error)")
                return nil
            }
        }
    }

    /// A control from the receiver, passed to the app's player (awaited, in the session's command turn); its
    /// answer is awaited, up to 2 s.
    private func relay(_ event: RemoteCommandEvent, receiver: String) async -> RemoteCommandStatus {
        let (target, room): ((WatchedPlayer, MPRISPlayerWatcher)?, String) = queue.sync {
            let room = routes[receiver]?.description ?? receiver
            guard let name = bridges[receiver]?.player, let player = players[name], let watcher = watcher?.value else { return (nil, room) }
            return ((player, watcher), room)
        }
        let command: MPRISCommand
        switch PlayerBridge.relay(event, to: target?.0) {
        case .answer(let status): return status
        case .call(let call): command = call
        }
        guard let (player, watcher) = target else { return .noSuchContent }
        // The player's answer, or nil at the deadline: whichever comes first.
        let answer = await withCheckedContinuation { (answered: CheckedContinuation<MPRISCommandResult?, Never>) in
            let first = Latch()
            watcher.send(command, to: player.busName) { outcome in if first.raise() { answered.resume(returning: outcome) } }
            DispatchQueue.global().asyncAfter(deadline: .now() + 2) { if first.raise() { answered.resume(returning: nil) } }
        }
        switch answer {
        case nil:
            logger.warning("\(player.busName) did not answer \(event.command.rawValue) within 2 s")
        case .success?:
            logger.info("\(event.command.rawValue) from \(room) passed to \(player.busName)")
        case .failed(let name, let message)?:
            logger.warning("\(player.busName) refused \(event.command.rawValue): \(name): \(message)")
        }
        return PlayerBridge.status(of: answer)
    }

    private func perform(_ actions: [SinkRouter.Action]) {
        guard let pulse else { return }
        for action in actions {
            switch action {
            case .loadSink(let output, let description):
                let sinkName = output.sinkName
                do {
                    let (module, sink) = try pulse.loadNullSink(name: sinkName, description: description)
                    logger.info("output '\(description)' (\(sinkName)) added")
                    do {
                        captures[output] = try MonitorCapture(monitor: sinkName + ".monitor", logger: logger)
                    } catch {
                        logger.error("\(error)")
                    }
                    perform(router.sinkLoaded(output, module: module, sink: sink))
                } catch {
                    logger.error("\(error)")
                    perform(router.sinkFailed(output))
                }
            case .unloadSink(let output, let module):
                captures.removeValue(forKey: output)?.stop()
                do {
                    try pulse.unloadModule(module)
                    logger.info("output \(output.sinkName) removed: the receiver is gone")
                } catch {
                    logger.warning("\(error)")
                }
            case .moveToLocal(let input):
                do {
                    try pulse.moveToLocal(input: input)
                    logger.info("stream \(input) of '\(applications[input] ?? "an app")' moved to the local output")
                } catch {
                    logger.warning("\(error)")
                }
            case .moveToOutput(let input, let output):
                do {
                    try pulse.move(input: input, toSink: output.sinkName)
                    logger.info("stream \(input) of '\(applications[input] ?? "an app")' moved to \(output.sinkName): an announcement")
                } catch {
                    // It would otherwise play into the music's output unheard: it plays here instead.
                    logger.warning("\(error); the announcement goes to the local output")
                    perform([.moveToLocal(input: input)])
                }
            case .startStream(let output):
                guard let route = routes[output.receiver], let capture = captures[output] else { continue }
                capture.beginSession()
                let generation = (generations[output] ?? 0) + 1
                generations[output] = generation
                if output.kind == .main { connecting[output] = .some(nil) }
                var configuration = configuration
                // An announcement plays over what the receiver plays, which dips by the receiver's own depth.
                if output.kind == .announcements { configuration.mixing = .duck }
                let label = label(output)
                // Connecting takes a round trip or more: awaited off the queue, while the capture keeps what it records.
                Task { [self, configuration] in
                    let result: Result<StreamSession, LyreSenderError>
                    do throws(LyreSenderError) { result = .success(try await StreamSession.connect(routes: [route], configuration: configuration)) } catch { result = .failure(error) }
                    queue.async { [self] in
                        switch result {
                        case .success(let session) where generations[output] == generation:
                            logger.info("streaming to \(label)")
                            started(session, output: output)
                            capture.attach(session, configuration: configuration) { [weak self] why in
                                guard let self else { return }
                                self.queue.async {
                                    guard self.generations[output] == generation else { return }
                                    self.logger.notice("stream to \(label) ended: \(why)")
                                    self.sessions[output] = nil
                                    if output.kind == .main { self.bridges[output.receiver] = nil }
                                    self.perform(self.router.streamEnded(output))
                                }
                            }
                        case .success(let session):
                            session.close()
                        case .failure(let error) where generations[output] == generation:
                            connecting[output] = nil
                            logger.warning("cannot stream to \(label): \(error)")
                            _ = capture.detach()
                            perform(router.streamEnded(output))
                        case .failure:
                            break
                        }
                    }
                }
            case .stopStream(let output):
                generations[output, default: 0] += 1
                sessions[output] = nil
                connecting[output] = nil
                if output.kind == .main { bridges[output.receiver] = nil }
                // The last of the app's audio still in the monitor is sent, what is queued plays out, then
                // TEARDOWN; off the queue.
                if let capture = captures[output] {
                    finishing.enter()
                    capture.finish { [finishing] session in
                        DispatchQueue.global().async {
                            session?.finish()
                            finishing.leave()
                        }
                    }
                }
                logger.info("stream to \(label(output)) ends: no app plays there")
            }
        }
    }

    /// Ends every stream and removes every output.
    public func close() {
        queue.sync {
            for receiver in router.receivers { perform(router.receiverGone(id: receiver)) }
            pulse = nil
        }
        queue.sync { watcher }?.shutdown()
        _ = finishing.wait(timeout: .now() + .seconds(5))
    }
}
