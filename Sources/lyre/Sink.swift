import ArgumentParser
import Foundation
import Logging
import LyreCommandLine
import LyreDiscovery
import LyreSender
import LyreSink

/// `lyre sink`: one sound output per receiver on the user's sound server, so that every app can play to
/// a receiver.
struct Sink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offer every Lyre receiver as a sound output of this desktop (PulseAudio or PipeWire).",
        discussion: """
            For each receiver found, the sound server gets an output named after it, 'Kitchen (Lyre)' (node \
            lyre_<receiver id>), which comes and goes with the receiver. Move an app's stream there \
            (pavucontrol, GNOME Settings, pactl move-sink-input) and it plays on the receiver; when the last \
            stream leaves, the session ends. System sounds (media.role event or notification) sent to a Lyre \
            output are moved to the local output: they never play in the living room. Runs until interrupted; \
            Tools/lyre-sink.service runs it as a systemd user unit.
            """)

    @Option(help: "Latency of each stream, in ms (20-2000).")
    var latency = 250

    @Option(help: "Opus bitrate, in kbit/s.")
    var bitrate = 128

    @Option(help: "The sender name the receivers show (default: user@host).")
    var name: String?

    @OptionGroup var mdns: MDNSOptions

    @Option(help: "Log level for diagnostics on stderr.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard (20...2000).contains(latency) else { throw ValidationError("--latency must be between 20 and 2000 ms") }
        guard (6...510).contains(bitrate) else { throw ValidationError("--bitrate must be between 6 and 510 kbit/s") }
    }

    func run() async throws {
        CommandLineMain.bootstrapLogging(level: logLevel)
        var configuration = StreamConfiguration()
        configuration.latencyMilliseconds = latency
        configuration.bitrate = bitrate * 1000
        configuration.senderName = name ?? Play.defaultSenderName()
        // A live source: each 10 ms packet goes as soon as it is recorded (MonitorCapture), so that the app's
        // audio is heard little more than the session latency after it plays.
        configuration.frameMilliseconds = 10
        configuration.liveLeadMilliseconds = 0
        let controller = SinkController(configuration: configuration, logger: Logger(label: "lyre.sink"))
        do {
            try controller.connect()
        } catch {
            throw CommandFailure("\(error); is PulseAudio or PipeWire (pipewire-pulse) running in this session?")
        }
        let browser: DeviceBrowser
        let changes: RouteChanges
        do {
            browser = try DeviceBrowser(mode: mdns.mdns, interfaces: mdns.interfaces)
            changes = try browser.routeChanges()
        } catch {
            controller.close()
            throw CommandFailure("\(error)")
        }
        defer { browser.close() }

        let lost = controller.lost
        let watcher = Task {
            for await change in changes { controller.deviceChanged(change) }
        }
        // Until interrupted, terminated, or the sound server goes away.
        let once = OnceFlag()
        let sources = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: sig)
        }
        defer { for source in sources { source.cancel() } }
        let reason: String = await withCheckedContinuation { continuation in
            for source in sources {
                source.setEventHandler { if once.claim() { continuation.resume(returning: "") } }
                source.resume()
            }
            lost.notify(queue: .global()) { if once.claim() { continuation.resume(returning: "the sound server went away") } }
        }
        watcher.cancel()
        controller.close()
        if !reason.isEmpty { throw CommandFailure(reason) }
    }
}

/// True for the first `claim` only.
private final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false
    func claim() -> Bool { lock.withLock { defer { claimed = true }; return !claimed } }
}

/// Carries out SinkRouter's decisions on the sound server (PulseClient, MonitorCapture) and the network
/// (StreamSession), one event at a time on its own queue.
final class SinkController: @unchecked Sendable {
    private let queue = DispatchQueue(label: "lyre.sink")
    private var router = SinkRouter()
    private var pulse: PulseClient?
    private var routes: [String: OutputRoute] = [:]
    private var captures: [String: MonitorCapture] = [:]
    /// The sessions streaming now, and the volume each receiver was last given (dB).
    private var sessions: [String: StreamSession] = [:]
    private var volumes: [String: Double] = [:]
    /// Which start of each receiver's stream is the current one (a connection that finishes after a stop
    /// or a newer start is closed).
    private var generations: [String: Int] = [:]
    private var applications: [UInt32: String] = [:]
    private let configuration: StreamConfiguration
    private let logger: Logger
    /// Signalled when the sound server goes away.
    let lost = DispatchGroup()
    /// Streams playing out what they hold before their TEARDOWN.
    private let finishing = DispatchGroup()

    init(configuration: StreamConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        lost.enter()
    }

    func connect() throws {
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
        queue.sync { pulse = client }
    }

    /// A receiver appeared, changed or left.
    func deviceChanged(_ change: RouteChange) {
        queue.async { [self] in
            let device = change.device
            let id = device.id.rawValue
            let address = device.ipv4Address
            if change.reason == .deviceUnavailable || RouteResolver.playable([device]).isEmpty || address == nil {
                routes[id] = nil
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
            perform(router.inputChanged(index: input.index, sink: sink, role: input.role))
        } else {
            applications[input.index] = nil
            perform(router.inputRemoved(index: input.index))
        }
    }

    /// An output's slider moved: its receiver's volume follows while it streams.
    private func volumeChanged(sink: UInt32, decibels: Double, muted: Bool) {
        guard let receiver = router.receiver(ofSink: sink), let session = sessions[receiver] else { return }
        let volume = SinkRouter.receiverVolume(outputDecibels: decibels, muted: muted)
        guard abs(volume - (volumes[receiver] ?? .infinity)) >= 0.05 else { return }
        volumes[receiver] = volume
        do {
            try session.setVolume(volume)
            logger.info("volume of \(routes[receiver]?.description ?? receiver): \(volume) dB, from its output")
        } catch {
            logger.warning("cannot set the volume of \(routes[receiver]?.description ?? receiver): \(error)")
        }
    }

    /// A stream started: the output's slider shows the receiver's volume.
    private func showVolume(of session: StreamSession, receiver: String) {
        sessions[receiver] = session
        let volume = session.volume
        volumes[receiver] = volume
        guard let sink = router.sink(ofReceiver: receiver) else { return }
        do { try pulse?.setVolume(sink: sink, decibels: volume) } catch { logger.warning("\(error)") }
    }

    private func perform(_ actions: [SinkRouter.Action]) {
        guard let pulse else { return }
        for action in actions {
            switch action {
            case .loadSink(let receiver, let sinkName, let description):
                do {
                    let (module, sink) = try pulse.loadNullSink(name: sinkName, description: description)
                    logger.info("output '\(description)' (\(sinkName)) added")
                    do {
                        captures[receiver] = try MonitorCapture(monitor: sinkName + ".monitor", logger: logger)
                    } catch {
                        logger.error("\(error)")
                    }
                    perform(router.sinkLoaded(receiver: receiver, module: module, sink: sink))
                } catch {
                    logger.error("\(error)")
                }
            case .unloadSink(let receiver, let module):
                captures.removeValue(forKey: receiver)?.stop()
                do {
                    try pulse.unloadModule(module)
                    logger.info("output \(SinkRouter.sinkName(receiver: receiver)) removed: the receiver is gone")
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
            case .startStream(let receiver):
                guard let route = routes[receiver], let capture = captures[receiver] else { continue }
                capture.beginSession()
                let generation = (generations[receiver] ?? 0) + 1
                generations[receiver] = generation
                let configuration = configuration
                // Connecting takes a round trip or more: off the queue, while the capture keeps what it records.
                DispatchQueue.global().async { [self] in
                    let result = Result { try StreamSession(routes: [route], configuration: configuration) }
                    queue.async { [self] in
                        switch result {
                        case .success(let session) where generations[receiver] == generation:
                            logger.info("streaming to \(route)")
                            showVolume(of: session, receiver: receiver)
                            capture.attach(session, configuration: configuration) { [weak self] why in
                                guard let self else { return }
                                self.queue.async {
                                    guard self.generations[receiver] == generation else { return }
                                    self.logger.notice("stream to \(route) ended: \(why)")
                                    self.sessions[receiver] = nil
                                    self.perform(self.router.streamEnded(receiver: receiver))
                                }
                            }
                        case .success(let session):
                            session.close()
                        case .failure(let error) where generations[receiver] == generation:
                            logger.warning("cannot stream to \(route): \(error)")
                            _ = capture.detach()
                            perform(router.streamEnded(receiver: receiver))
                        case .failure:
                            break
                        }
                    }
                }
            case .stopStream(let receiver):
                generations[receiver, default: 0] += 1
                sessions[receiver] = nil
                // What is queued still plays out, then TEARDOWN; off the queue.
                if let session = captures[receiver]?.detach() {
                    finishing.enter()
                    DispatchQueue.global().async { [finishing] in
                        session.finish()
                        finishing.leave()
                    }
                }
                logger.info("stream to \(routes[receiver]?.description ?? receiver) ends: no app plays there")
            }
        }
    }

    /// Ends every stream and removes every output.
    func close() {
        queue.sync {
            for receiver in router.receivers { perform(router.receiverGone(id: receiver)) }
            pulse = nil
        }
        _ = finishing.wait(timeout: .now() + .seconds(5))
    }
}
