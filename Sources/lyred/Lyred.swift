import ArgumentParser
import Logging
import LyreAudio
import LyreCommandLine
import LyreDiscovery
import LyreWire
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

@main
struct Lyred: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lyred",
        abstract: "Lyre receiver: advertises this machine's audio output to Lyre senders on the network.",
        discussion: """
            Advertises itself as _lyre._tcp over mDNS until SIGTERM or SIGINT, then withdraws and exits 0.
            Audio streaming is not built yet: the port is reserved and advertised, and nothing plays.
            """)

    @Option(help: "Name shown in device pickers (default: the host name).")
    var name: String?

    @Option(help: "TCP port for the RTSP control connection; 0 picks a free one.")
    var port: Int = 7700

    @OptionGroup var mdns: MDNSOptions

    @Option(help: ArgumentHelp("Where the device id is kept (default: $STATE_DIRECTORY, /var/lib/lyred for root, else ~/.local/state/lyred).", valueName: "DIR"))
    var stateDir: String?

    @Option(help: ArgumentHelp("ALSA PCM to play through.", valueName: "PCM"))
    var output: String = "default"

    @Option(help: "Output kind to advertise when ALSA cannot tell: speaker, headphones, line, hdmi or usb.")
    var outputKind: OutputKind = .speaker

    @Option(help: "Model string to advertise.")
    var model: String = "Lyre Receiver"

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    static func main() async { await CommandLineMain.run(Self.self) }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let name, name.isEmpty || name.utf8.count > ServiceName.maximumBytes {
            throw ValidationError("--name must be 1 to \(ServiceName.maximumBytes) bytes")
        }
    }

    func run() async throws {
        CommandLineMain.bootstrapLogging(level: logLevel)
        let logger = Logger(label: "lyred")
        let stateDirectory = stateDir ?? DeviceIdentity.defaultStateDirectory()
        let id: DeviceID
        do { id = try DeviceIdentity.loadOrCreate(in: stateDirectory) } catch { throw CommandFailure("\(error)") }

        let listener: ListeningPort
        do { listener = try ListeningPort(port: UInt16(port)) } catch { throw CommandFailure("\(error)") }

        let backend: any MDNSBackend
        do {
            backend = try openMDNSBackend(mode: mdns.mdns, interfaces: mdns.interfaces, publishing: true)
        } catch { throw CommandFailure("\(error)") }

        let detected = OutputKindProbe.detect(pcm: output)
        let receiver = ReceiverTXT(
            deviceID: id, model: model, codecs: ReceiverCapabilities.codecs, features: ReceiverCapabilities.features,
            status: .idle, outputKind: detected ?? outputKind, volume: 0)
        let advertiser = ReceiverAdvertiser(
            backend: backend, name: name ?? Self.hostName(), port: listener.port, receiver: receiver)
        logger.info(
            "lyred \(id) on port \(listener.port) via \(backend.mode.rawValue) mDNS, output \(output) (\(receiver.outputKind!.rawValue)\(detected == nil ? ", configured" : ", from ALSA"))"
        )

        let group = ServiceGroup(
            services: [AdvertisingService(advertiser: advertiser, logger: logger)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
        listener.close()
        logger.info("withdrawn; exiting")
    }

    /// The host name without its domain.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "Lyre" }
        let full = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return ServiceName.sanitized(String(full.split(separator: ".").first ?? "Lyre"))
    }
}

/// What this receiver can do, as advertised in `cn` and `ft`. Empty until streaming is built: a receiver
/// that cannot play yet must not tell senders that it can.
enum ReceiverCapabilities {
    static let codecs: [String] = []
    static let features: [String] = []
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
