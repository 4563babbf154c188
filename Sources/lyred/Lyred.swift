import ArgumentParser
import FoundationEssentials
import Logging
import LyreAudio
import LyreCommandLine
import LyreControl
import LyreDiscovery
import LyreIdentity
import LyreMPRIS
import LyrePairing
import LyreRTSP
import LyreReceiver
import LyreVersion
import LyreWire
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

@main
struct Lyred: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lyred",
        abstract: "Lyre receiver: plays what Lyre senders (and RTSP publishers such as ffmpeg) stream to it.",
        discussion: """
            Advertises itself as _lyre._tcp over mDNS and serves RTSP on --port until SIGTERM or SIGINT, then \
            tells the current sender, withdraws and exits 0. The wire protocol is Protocol/streaming.md.

            Every option can also be set in a config file, one 'key = value' a line, the key being the option \
            without its dashes (--output-delay 40 is 'output-delay = 40'); the command line wins. The file is \
            --config, else $XDG_CONFIG_HOME/lyre/lyred.conf for a user other than root, else \
            /etc/lyre/lyred.conf, whichever exists first. SIGHUP re-reads it: name, max-volume-db, output-delay \
            and access change at once, without ending the playing session.
            """,
        version: LyreVersion.current)

    @Option(help: ArgumentHelp("Config file to read (default: $XDG_CONFIG_HOME/lyre/lyred.conf, else /etc/lyre/lyred.conf, if there).", valueName: "PATH"))
    var config: String?

    @Flag(help: "Check the config file and the options, say what is wrong or that all is well, and exit.")
    var checkConfig = false

    @Flag(help: "List the ALSA outputs --output can name, with the kind lyred would advertise for each, and exit.")
    var listOutputs = false

    @Option(help: "Name shown in device pickers (default: the host name).")
    var name: String?

    @Option(help: "TCP port for the RTSP control connection; 0 picks a free one.")
    var port: Int = 7700

    @Option(help: ArgumentHelp("Who may play: 'paired' (senders paired with 'lyre pair', over TLS) or 'open' (anyone, also plain RTSP publishers such as ffmpeg and GStreamer).", valueName: "paired|open"))
    var access: ReceiverAccess = .paired

    @OptionGroup var mdns: MDNSOptions

    @Option(help: ArgumentHelp("Where the device id is kept (default: $STATE_DIRECTORY, /var/lib/lyred for root, else ~/.local/state/lyred).", valueName: "DIR"))
    var stateDir: String?

    @Option(help: ArgumentHelp("ALSA PCM to play through, or wav:PATH for a WAV file paced like a sound card.", valueName: "PCM"))
    var output: String = "default"

    @Option(help: ArgumentHelp("Latency for senders that ask for none, in ms (10 to 2000).", valueName: "MS"))
    var latency: Int = 250

    // (.unconditional on the options that take a negative number: the word after the option is its value, so
    // that -40 is not read as an option.)
    @Option(parsing: .unconditional, help: ArgumentHelp("Extra latency of what is plugged into the output (AV receiver, soundbar), in ms (-500 to 500); also 'lyre remote output-delay MS'.", valueName: "MS"))
    var outputDelay: Int = 0

    @Option(parsing: .unconditional, help: ArgumentHelp("How far an announcement that ducks (lyre play --duck) lowers what plays under it, in dB (-40 to -3).", valueName: "DB"))
    var duckDb: Double = DuckEnvelope.defaultDepthDB

    @Option(parsing: .unconditional, help: ArgumentHelp("The volume lyred starts at, in dB (-30 to 0, or -144 to start muted): what senders find until one sets another.", valueName: "DB"))
    var initialVolumeDb: Double = 0

    @Option(parsing: .unconditional, help: ArgumentHelp("The level a sender's full volume plays at, in dB (-30 to 0): every volume plays that much lower.", valueName: "DB"))
    var maxVolumeDb: Double = 0

    @Option(help: ArgumentHelp("What the volume moves: auto (the output's mixer, else the samples), software (the samples; no mixer is touched), mixer:NAME (that ALSA mixer control), or none (nothing: full level, for an amplifier's own knob).", valueName: "auto|software|mixer:NAME|none"))
    var volumeControl: VolumeControl = .auto

    @Option(parsing: .unconditional, help: ArgumentHelp("Run the wav: output this many ppm fast (-1000 to 1000), like a real DAC's crystal, to test drift.", valueName: "N"))
    var outputSkewPpm: Double = 0

    @Option(help: ArgumentHelp("Write rtp_time,scheduled_ns,presented_ns,audio_frames,frames for every output block to this CSV file.", valueName: "PATH"))
    var presentationLog: String?

    @Option(help: ArgumentHelp("Log session statistics every SECONDS.", valueName: "SECONDS"))
    var statsInterval: Double?

    @Option(help: ArgumentHelp("Address to listen on, IPv4 or IPv6 (default: every address, both).", valueName: "ADDRESS"))
    var listen: String?

    @Option(help: ArgumentHelp("Unix socket for 'lyre remote' and now-playing queries, this user only; 'off' for none (default: \(ControlSocketPath.default)).", valueName: "PATH"))
    var controlSocket: String?

    @Option(help: ArgumentHelp("The receiver's web page and JSON API (Protocol/control-api.md): lan (anyone on the network; pairing only from this machine), local (this machine only) or off.", valueName: "lan|local|off"))
    var web: WebAccess = .lan

    @Option(help: ArgumentHelp("TCP port of the web page and API (default: 7780).", valueName: "PORT"))
    var webPort: Int?

    @Option(help: "MPRIS on D-Bus: session, system, off, or auto (the session bus when DBUS_SESSION_BUS_ADDRESS is set).")
    var mpris: MPRISMode = .auto

    @Option(help: "Output kind to advertise when ALSA cannot tell: speaker, headphones, line, hdmi or usb.")
    var outputKind: OutputKind = .speaker

    @Option(help: "Model string to advertise.")
    var model: String = "Lyre Receiver"

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    static func main() async {
        await CommandLineMain.run(Self.self) { commandLine throws(ConfigFileError) in
            // --help and --version work whatever the file holds.
            if commandLine.contains(where: { ["-h", "--help", "help", "--version"].contains($0) }) { return commandLine }
            return try configured(commandLine).arguments
        }
    }

    /// The config file for `commandLine` (nil when there is none) and the arguments to parse: its settings,
    /// then the command line.
    static func configured(_ commandLine: [String]) throws(ConfigFileError) -> (file: ConfigFile?, arguments: [String]) {
        guard let path = ConfiguredArguments.option("config", in: commandLine) ?? defaultConfigPath() else { return (nil, commandLine) }
        let file = try ConfigFile.load(path: path, repeatable: repeatableKeys)
        let arguments = try ConfiguredArguments.arguments(
            for: Self.self, file: file, commandLine: commandLine, excluded: ["config", "check-config", "list-outputs", "help", "version"])
        return (file, arguments)
    }

    /// `--list-outputs`: one PCM a line, with its kind and ALSA's description.
    static func printOutputs() {
        let outputs = OutputKindProbe.outputs()
        guard !outputs.isEmpty else {
            Console.standardOutput.write(line: "ALSA lists no outputs (no sound card, and no PCM in its configuration shows itself); --output wav:PATH writes a file")
            return
        }
        let rows = outputs.map { output in
            [output.pcm, output.kind.map { "\($0.rawValue)" } ?? "--output-kind (speaker)", output.description]
        }
        for line in TextTable.lines([["OUTPUT", "KIND", "DESCRIPTION"]] + rows) { Console.standardOutput.write(line: line) }
    }

    /// The keys a config file may set on several lines.
    static let repeatableKeys: Set<String> = ["interface"]

    /// The config file read when --config is not given: the user's, then the system's, if it exists.
    static func defaultConfigPath() -> String? {
        configCandidates().first { Glibc.access($0, F_OK) == 0 }
    }

    /// Where lyred looks for its config file, in order.
    static func configCandidates() -> [String] {
        var candidates: [String] = []
        if geteuid() != 0 {
            let environment = ProcessInfo.processInfo.environment
            if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") {
                candidates.append("\(base)/lyre/lyred.conf")
            } else if let home = environment["HOME"], !home.isEmpty {
                candidates.append("\(home)/.config/lyre/lyred.conf")
            }
        }
        candidates.append("/etc/lyre/lyred.conf")
        return candidates
    }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let webPort, !(1...65535).contains(webPort) { throw ValidationError("--web-port must be between 1 and 65535") }
        guard SessionLatency.milliseconds.contains(latency) else { throw ValidationError(SessionLatency.outOfRange) }
        if let statsInterval, !(statsInterval > 0) { throw ValidationError("--stats-interval must be more than 0 seconds") }
        if output.isEmpty || output == "wav:" { throw ValidationError("--output needs an ALSA PCM name or wav:PATH") }
        guard ControlRequest.outputDelayRange.contains(outputDelay) else { throw ValidationError("--output-delay must be between -500 and 500 ms") }
        guard (-1000...1000).contains(outputSkewPpm) else { throw ValidationError("--output-skew-ppm must be between -1000 and 1000") }
        guard ReceiverTXT.validVolume(initialVolumeDb) != nil else { throw ValidationError("--initial-volume-db must be between -30 and 0, or -144 (muted)") }
        guard VolumePolicy.range.contains(maxVolumeDb) else { throw ValidationError("--max-volume-db must be between -30 and 0") }
        guard DuckEnvelope.depthRange.contains(duckDb) else { throw ValidationError("--duck-db must be between -40 and -3") }
        if let name, name.isEmpty || name.utf8.count > ServiceName.maximumBytes {
            throw ValidationError("--name must be 1 to \(ServiceName.maximumBytes) bytes")
        }
    }

    /// What no single option can be wrong about, only two together. Kept out of validate(), which also checks
    /// each config file setting alone.
    func validateCombination() throws {
        if outputSkewPpm != 0, !output.hasPrefix("wav:") { throw CommandFailure("--output-skew-ppm needs --output wav:PATH", code: 64) }
        if case .mixer = volumeControl, output.hasPrefix("wav:") {
            throw CommandFailure("--volume-control \(volumeControl) needs an ALSA --output (a WAV file has no mixer)", code: 64)
        }
    }

    func run() async throws {
        try validateCombination()
        if listOutputs {
            Self.printOutputs()
            return
        }
        if checkConfig {
            let file = config ?? Self.defaultConfigPath()
            Console.standardOutput.write(line: file.map { "\($0): valid" } ?? "no config file (none at $XDG_CONFIG_HOME/lyre/lyred.conf or /etc/lyre/lyred.conf): the options are valid")
            return
        }
        CommandLineMain.bootstrapLogging(level: logLevel)
        let logger = Logger(label: "lyred")
        let stateDirectory = stateDir ?? DeviceIdentity.defaultStateDirectory()
        let id: DeviceID
        let key: DeviceKey
        do {
            id = try DeviceIdentity.loadOrCreate(in: stateDirectory)
            key = try DeviceKey.loadOrCreate(in: stateDirectory)
        } catch {
            throw CommandFailure("\(error)")
        }

        var configuration = ReceiverConfiguration()
        configuration.host = listen
        configuration.port = port
        configuration.output = OutputTarget(output, skewPPM: outputSkewPpm)
        configuration.volume = VolumePolicy(control: volumeControl, maximumDB: maxVolumeDb)
        configuration.initialVolumeDB = initialVolumeDb
        configuration.defaultLatencyMilliseconds = latency
        configuration.outputDelayMilliseconds = outputDelay
        configuration.duckDB = duckDb
        configuration.presentationLogPath = presentationLog
        configuration.statisticsInterval = statsInterval
        let socketPath = controlSocket == "off" ? nil : controlSocket ?? ControlSocketPath.default
        configuration.controlSocketPath = socketPath
        // Several receivers on one host: only the first gets the default socket.
        configuration.controlSocketRequired = controlSocket != nil
        configuration.artworkDirectory = Self.artworkDirectory(controlSocket: socketPath)
        configuration.deviceID = id.rawValue
        configuration.access = access
        configuration.name = name ?? Self.hostName()
        configuration.web = web
        configuration.webPort = webPort ?? 7780
        // Several receivers on one host: only the first gets the default port, unless the port was asked for.
        configuration.webRequired = webPort != nil
        let keeper = SettingsKeeper(commandLine: Array(CommandLine.arguments.dropFirst()), running: live, logger: logger)
        configuration.keep = { await keeper.keep($0) }
        do { configuration.tls = try TLSIdentity(key: key.privateKey, name: name ?? Self.hostName()) } catch {
            throw CommandFailure("\(error)")
        }
        configuration.pairing = (PairingParty(publicKey: key.publicKeyBytes, id: id.rawValue, name: name ?? Self.hostName()),
                                 stateDirectory + "/" + PairedDevices.sendersFile)
        let streaming = Receiver(configuration: configuration, logger: logger)
        let boundPort: Int
        do {
            boundPort = try await streaming.start()
        } catch let error as LineServerError {
            await streaming.stop()
            throw CommandFailure("\(error); pass --control-socket PATH")
        } catch let error as WebServerError {
            await streaming.stop()
            throw CommandFailure(error.description)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            await streaming.stop()
            throw CommandFailure("port \(port) is already in use; pick another with --port (0 picks a free one)")
        } catch {
            await streaming.stop()
            if let listen, HostPort.lacksZone(listen) {
                throw CommandFailure("cannot listen on \(listen): a link-local address needs its interface, as in --listen \(listen)%eth0")
            }
            throw CommandFailure("cannot listen on \(listen ?? "every address") port \(port): \(error); pass --listen ADDRESS")
        }

        let backend: any MDNSBackend
        do {
            backend = try openMDNSBackend(mode: mdns.mdns, interfaces: mdns.interfaces, publishing: true)
        } catch { throw CommandFailure("\(error)") }

        let target = OutputTarget(output)
        let detected: OutputKind? = if case .alsa(let pcm) = target { OutputKindProbe.detect(pcm: pcm) } else { nil }
        let receiver = ReceiverTXT(
            deviceID: id, model: model, codecs: ReceiverCapabilities.codecs, features: ReceiverCapabilities.features,
            status: .idle, outputKind: detected ?? outputKind, volume: initialVolumeDb, keyFingerprint: key.fingerprint)
        let advertiser = ReceiverAdvertiser(
            backend: backend, name: name ?? Self.hostName(), port: UInt16(boundPort), receiver: receiver)
        keeper.attach(receiver: streaming, advertiser: advertiser)
        logger.info(
            "lyred \(id) (key \(key.fingerprint), access \(access.rawValue)) on port \(boundPort) via \(backend.mode.rawValue) mDNS, output \(output) (\(receiver.outputKind!.rawValue)\(detected == nil ? ", configured" : ", from ALSA"))"
        )

        var bridge: MPRISBridge?
        if let bus = mpris.bus {
            do {
                bridge = try MPRISBridge(bus: bus, identity: MPRISBridge.identity(name ?? Self.hostName()), receiver: streaming, logger: logger)
                keeper.attach(mpris: bridge!)
                logger.info("MPRIS on the \(bus.rawValue) bus as \(bridge!.busName)")
            } catch {
                await streaming.stop()
                throw CommandFailure("\(error) (or pass --mpris off)")
            }
        } else if mpris == .auto {
            logger.info("MPRIS off: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        }

        let receiverService = StreamingService(receiver: streaming, advertiser: advertiser, mpris: bridge, logger: logger)
        let reload = ReloadService(
            commandLine: Array(CommandLine.arguments.dropFirst()), keeper: keeper, receiver: streaming, advertiser: advertiser, logger: logger)
        let group = ServiceGroup(
            services: [AdvertisingService(advertiser: advertiser, logger: logger), receiverService, reload],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
        bridge?.close()
        logger.info("withdrawn; exiting")
    }

    /// The settings a reload changes while lyred runs (``ReloadService``).
    struct Live: Sendable, Equatable {
        var name: String
        var maxVolumeDb: Double
        var outputDelay: Int
        var access: ReceiverAccess
    }

    var live: Live { Live(name: name ?? Self.hostName(), maxVolumeDb: maxVolumeDb, outputDelay: outputDelay, access: access) }

    /// Artwork for MPRIS goes beside the control socket, in a directory of this process's own.
    static func artworkDirectory(controlSocket: String?) -> String {
        let base = PathText.directory(of: controlSocket ?? ControlSocketPath.default)
        return "\(base)/artwork-\(getpid())"
    }

    /// The host name without its domain.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "Lyre" }
        let full = String(nulTerminated: buffer)
        return ServiceName.sanitized(String(full.split(separator: ".").first ?? "Lyre"))
    }
}

/// `--mpris`: which D-Bus bus to show the MPRIS player on.
enum MPRISMode: String, ExpressibleByArgument, CaseIterable {
    case auto, session, system, off

    var bus: MPRISBus? {
        switch self {
        case .session: .session
        case .system: .system
        case .off: nil
        case .auto: (ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? "").isEmpty ? nil : .session
        }
    }
}

/// What this receiver can do, as advertised in `cn` and `ft` (discovery.md).
enum ReceiverCapabilities {
    static let codecs = ["opus", "l16"]
    static let features = ["clock"]
}

/// Serves RTSP until graceful shutdown, keeping the advertised status and volume current.
struct StreamingService: Service {
    let receiver: Receiver
    let advertiser: ReceiverAdvertiser
    let mpris: MPRISBridge?
    let logger: Logger

    func run() async throws {
        await withGracefulShutdownHandler {
            for await event in receiver.events {
                do {
                    switch event {
                    case .status(let status): try advertiser.setStatus(status)
                    case .volume(let db):
                        mpris?.volumeChanged(db)
                        try advertiser.setVolume(db)
                    case .nowPlaying(let snapshot): mpris?.show(snapshot)
                    case .overlays(let overlays): mpris?.overlaysChanged(overlays)
                    }
                } catch {
                    logger.warning("cannot update the advertisement: \(error)")
                }
            }
        } onGracefulShutdown: {
            Task { await receiver.stop() }
        }
    }
}

/// Keeps the service advertised until graceful shutdown, then withdraws it.
struct AdvertisingService: Service {
    let advertiser: ReceiverAdvertiser
    let logger: Logger

    func run() async throws {
        try advertiser.start()
        let events = advertiser.events
        // On SIGTERM/SIGINT: announce `st=leaving`, then withdraw, which ends the event stream.
        async let withdrawal: Void = {
            do { try await gracefulShutdown() } catch { return }  // cancelled: the service is ending anyway
            await advertiser.withdraw()
        }()
        do {
            for await event in events {
                switch event {
                case .established(let name): logger.info("advertised as '\(name)'")
                case .renamed(let from, let to): logger.notice("name '\(from)' is taken on the network; now '\(to)'")
                case .suspended(let reason): logger.warning("advertisement suspended: \(reason)")
                case .failed(let reason): throw CommandFailure("cannot advertise: \(reason)")
                }
            }
        } catch {
            advertiser.stop()
            throw error
        }
        await withdrawal
    }
}

/// Re-reads the config file on SIGHUP (`systemctl reload lyred`): the name, the maximum volume, the output
/// delay and who may play change at once, and the playing session goes on; a setting that needs a restart is
/// named in the log; a file with a mistake is refused whole, and the running settings stay.
struct ReloadService: Service {
    /// What lyred itself changes without a restart: the keys of ``Lyred/Live``.
    static let liveKeys: Set<String> = ["name", "max-volume-db", "output-delay", "access"]

    let commandLine: [String]
    /// Holds the live settings lyred runs with (the page and `lyre remote` change them too).
    let keeper: SettingsKeeper
    let receiver: Receiver
    let advertiser: ReceiverAdvertiser
    let logger: Logger

    func run() async throws {
        var file = (try? Lyred.configured(commandLine))?.file
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            let new: Lyred
            let newFile: ConfigFile?
            do {
                let configured = try Lyred.configured(commandLine)
                new = try Lyred.parse(configured.arguments)
                try new.validateCombination()
                newFile = configured.file
            } catch let error as ConfigFileError {
                logger.error("reload refused, the running settings stay: \(error)")
                continue
            } catch {
                logger.error("reload refused, the running settings stay: \(Lyred.message(for: error))")
                continue
            }
            let live = new.live
            let running = keeper.running.withLock { $0 }
            if live.outputDelay != running.outputDelay { await receiver.setOutputDelay(milliseconds: live.outputDelay) }
            if live.access != running.access { await receiver.setAccess(live.access) }
            if live.maxVolumeDb != running.maxVolumeDb { await receiver.setMaximumVolume(live.maxVolumeDb) }
            if live.name != running.name {
                do {
                    try advertiser.rename(to: live.name)
                    await receiver.setName(live.name)
                    logger.notice("renamed from '\(running.name)' to '\(live.name)'")
                } catch {
                    logger.error("cannot advertise the new name '\(live.name)': \(error)")
                }
            }
            let before = Self.values(file), after = Self.values(newFile)
            let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] && !Self.liveKeys.contains($0) }
            if !changed.isEmpty {
                logger.notice("reload: \(changed.sorted().joined(separator: ", ")) changed in \(newFile?.path ?? "the config file"); that takes effect when lyred restarts")
            }
            logger.info(
                "reloaded \(newFile?.path ?? "(no config file)"): name '\(live.name)', maximum volume \(live.maxVolumeDb) dB, output delay \(live.outputDelay) ms, access \(live.access.rawValue)")
            keeper.running.withLock { $0 = live }
            file = newFile
        }
    }

    /// Each key's values in the file, in order.
    static func values(_ file: ConfigFile?) -> [String: [String]] {
        (file?.entries ?? []).reduce(into: [:]) { $0[$1.key, default: []].append($1.value) }
    }
}

extension ReceiverAccess: ExpressibleByArgument {}
extension WebAccess: ExpressibleByArgument {}

extension VolumeControl: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
