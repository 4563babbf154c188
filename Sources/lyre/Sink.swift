import ArgumentParser
import Dispatch
import Logging
import LyreClock
import LyreCommandLine
import LyreDiscovery
import LyreMPRIS
import LyreSender
import LyreSink
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

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
            output are moved to the local output: they never play in the living room. With --announcements, \
            each receiver also gets 'Kitchen announcements (Lyre)': what plays there plays over what the receiver \
            plays, which dips while it does (the receiver's duck depth), and streams whose media.role is \
            announcement or alert sent to a Lyre output go there instead of the local output. What the app plays \
            (its MPRIS player on the session bus: title, artist, cover, position) is shown at the receiver, and \
            the receiver's controls (media keys, lyre remote, its MPRIS) reach the app. Runs until interrupted; \
            the lyre package installs it as the systemd user unit lyre-sink.service.
            """)

    @Option(help: "Latency of each stream, in ms (10-2000).")
    var latency = 250

    @Option(help: "Opus bitrate, in kbit/s.")
    var bitrate = 128

    @Option(help: "The sender name the receivers show (default: user@host).")
    var name: String?

    @Flag(help: "Offer each receiver an announcements output too, and send announcements and alerts there: they play over what the receiver plays, ducking it.")
    var announcements = false

    @OptionGroup var mdns: MDNSOptions

    @Option(help: "Log level for diagnostics on stderr.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard SessionLatency.milliseconds.contains(latency) else { throw ValidationError(SessionLatency.outOfRange) }
        guard (6...510).contains(bitrate) else { throw ValidationError("--bitrate must be between 6 and 510 kbit/s") }
    }

    func run() async throws {
        CommandLineMain.bootstrapLogging(level: logLevel)
        var configuration = StreamConfiguration()
        configuration.latencyMilliseconds = latency
        configuration.bitrate = bitrate * 1000
        configuration.senderName = name ?? Play.defaultSenderName()
        configuration.security = try SenderState.security(name: configuration.senderName)
        configuration.senderID = configuration.security?.identity.id
        // A live source: each 10 ms packet (5 ms under 20 ms of latency, as lyre play's) goes as soon as it is
        // recorded (MonitorCapture), so that the app's audio is heard little more than the session latency after it plays.
        configuration.frameMilliseconds = min(10, StreamConfiguration.defaultFrameMilliseconds(latency: latency))
        configuration.liveLeadMilliseconds = 0
        do {
            try PulseClient.openLibrary()
        } catch {
            throw CommandFailure(error.description)
        }
        let controller = SinkController(configuration: configuration, announcements: announcements, logger: Logger(label: "lyre.sink"))
        do {
            try controller.connect()
        } catch {
            throw CommandFailure("\(error); is PulseAudio or PipeWire (pipewire-pulse) running in this session?")
        }
        controller.watchPlayers()
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
        let once = Latch()
        let sources = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: sig)
        }
        defer { for source in sources { source.cancel() } }
        let reason: String = await withCheckedContinuation { continuation in
            for source in sources {
                source.setEventHandler { if once.raise() { continuation.resume(returning: "") } }
                source.resume()
            }
            lost.notify(queue: .global()) { if once.raise() { continuation.resume(returning: "the sound server went away") } }
        }
        watcher.cancel()
        controller.close()
        if !reason.isEmpty { throw CommandFailure(reason) }
    }
}
