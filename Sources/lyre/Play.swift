import ArgumentParser
import Foundation
import Logging
import LyreAudio
import LyreCommandLine
import LyreDiscovery
import LyreSender
import LyreWire

/// `lyre play`: streams files (or raw PCM from stdin) to a receiver.
struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play audio files (or raw PCM on stdin) on a Lyre receiver.",
        discussion: """
            Files are anything libsndfile reads (WAV, FLAC, Ogg Vorbis/Opus, MP3), played in order; '-' reads raw \
            PCM from stdin as --format says. Without --to, lyre plays to the saved preferred output, or to the \
            only receiver on the network. Ctrl-C stops and tears the session down.

            What plays is described to the receiver from each file's tags (or --title, --artist, --album), with             cover art embedded in a FLAC file or in cover.jpg/folder.jpg beside it (or --artwork). The receiver's             controls (lyre remote, MPRIS, media keys) drive the queue: play, pause, toggle, next, previous, seek,             skip, stop, and volume up/down.
            """)

    @Argument(help: "Files to play in order, or '-' for raw PCM on stdin.")
    var files: [String]

    @Option(help: ArgumentHelp("The receiver, by name or id; saved as the preferred output.", valueName: "NAME|ID"))
    var to: String?

    @Option(help: ArgumentHelp("Connect to HOST:PORT directly, without mDNS.", valueName: "HOST:PORT"))
    var host: String?

    @Option(help: ArgumentHelp("Target latency in ms (20 to 2000).", valueName: "MS"))
    var latency: Int = 250

    @Option(help: ArgumentHelp("Opus bitrate in kbit/s (6 to 510).", valueName: "KBPS"))
    var bitrate: Int = 128

    @Option(help: ArgumentHelp("Opus frame length in ms: 10 or 20.", valueName: "MS"))
    var frame: Int = 20

    @Option(help: ArgumentHelp("Raw stdin layout: s16le, s16be, s24le, s32le, f32le or u8, then rate and channels.", valueName: "SAMPLE:RATE:CHANNELS"))
    var format: String = "s16le:48000:2"

    @Option(help: "Name the receiver shows while playing (default: user@host).")
    var name: String?

    @Option(help: "Title to show instead of the tags'.")
    var title: String?

    @Option(help: "Artist to show instead of the tags'.")
    var artist: String?

    @Option(help: "Album to show instead of the tags'.")
    var album: String?

    @Option(help: ArgumentHelp("Cover art (JPEG or PNG, at most 1 MiB) instead of what the files have.", valueName: "IMAGE"))
    var artwork: String?

    @Option(help: "Seconds to look for receivers.")
    var timeout: Double = 3

    @OptionGroup var mdns: MDNSOptions

    @Option(help: "Log level for diagnostics on stderr.")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("name at least one file to play, or '-' for stdin") }
        guard (20...2000).contains(latency) else { throw ValidationError("--latency must be between 20 and 2000 ms") }
        guard (6...510).contains(bitrate) else { throw ValidationError("--bitrate must be between 6 and 510 kbit/s") }
        guard frame == 10 || frame == 20 else { throw ValidationError("--frame must be 10 or 20 ms") }
        guard RawPCMFormat(format) != nil else { throw ValidationError("--format must look like s16le:44100:2") }
        if files.filter({ $0 == "-" }).count > 1 { throw ValidationError("stdin ('-') can be played once") }
        for file in files where file != "-" {
            guard FileManager.default.isReadableFile(atPath: file) else { throw ValidationError("cannot read '\(file)'") }
        }
        for (name, value) in [("--title", title), ("--artist", artist), ("--album", album)] {
            if let value, value.utf8.count > NowPlayingInfo.maximumTextBytes {
                throw ValidationError("\(name) is over \(NowPlayingInfo.maximumTextBytes) bytes")
            }
        }
    }

    func run() async throws {
        CommandLineMain.bootstrapLogging(level: logLevel)
        let (address, port, label) = try await resolveReceiver()
        var configuration = StreamConfiguration()
        configuration.latencyMilliseconds = latency
        configuration.bitrate = bitrate * 1000
        configuration.frameMilliseconds = frame
        configuration.senderName = name ?? Self.defaultSenderName()
        let sources: [AudioSource] = files.map {
            $0 == "-" ? .raw(fileDescriptor: 0, format: RawPCMFormat(format)!) : .file(path: $0)
        }
        // Check every file opens before anything plays.
        for source in sources { do { try source.openCheck() } catch { throw CommandFailure("\(error)") } }
        let items = try queueItems(sources)

        let session: StreamSession
        do {
            session = try StreamSession(host: address, port: port, configuration: configuration)
        } catch {
            throw CommandFailure("cannot play on \(label): \(error)")
        }
        let player = QueuePlayer(items: items, session: session)

        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        interrupt.setEventHandler { player.stop() }
        interrupt.resume()
        let terminal = isatty(2) == 1
        let outcome: Result<QueuePlayer.Outcome, Error> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result {
                    try player.play { progress in
                        guard terminal else { return }
                        let total = progress.duration.map { " / " + NowPlayingInfo.clockText($0) } ?? ""
                        let by = progress.artist.map { " — \($0)" } ?? ""
                        let place = items.count > 1 ? "  [\(progress.index + 1)/\(items.count)]" : ""
                        let volume = session.volume <= -144 ? "  muted" : session.volume < 0 ? "  \(Int(session.volume.rounded())) dB" : ""
                        FileHandle.standardError.write(Data(
                            "\r\u{1B}[K\(progress.paused ? "⏸" : "▶") \(progress.title)\(by)  \(NowPlayingInfo.clockText(progress.elapsed))\(total)\(place)\(volume)".utf8))
                    }
                })
            }
            thread.start()
        }
        interrupt.cancel()
        if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        switch outcome {
        case .success(.finished), .success(.stopped): return
        case .success(.interrupted(.oldDeviceUnavailable)):
            throw CommandFailure("paused: \(label) is no longer available; play again to pick another receiver")
        case .success(.interrupted(.takenOver(let by))):
            throw CommandFailure("paused: \(by.map { "'\($0)'" } ?? "another sender") took over \(label)")
        case .failure(let error):
            session.close()
            throw CommandFailure("\(error)")
        }
    }

    /// The queue with what each item says about itself, and the overrides.
    private func queueItems(_ sources: [AudioSource]) throws -> [QueueItem] {
        var cover: Artwork?
        if let artwork {
            guard let data = FileManager.default.contents(atPath: artwork) else { throw CommandFailure("cannot read --artwork '\(artwork)'") }
            do { cover = try Artwork(bytes: Array(data)) } catch { throw CommandFailure("--artwork '\(artwork)': \(error)") }
        }
        return sources.map { source in
            var metadata = TrackMetadata(tagsOf: source)
            if let title { metadata.title = title }
            if let artist { metadata.artist = artist }
            if let album { metadata.album = album }
            var art = cover
            if art == nil, case .file(let path) = source { art = CoverArt.find(for: path) }
            return QueueItem(source: source, metadata: metadata, artwork: art)
        }
    }

    /// The receiver's IPv4 address, port and a label for messages.
    private func resolveReceiver() async throws -> (String, UInt16, String) {
        if let host {
            let parts = host.split(separator: ":")
            guard parts.count == 2, let port = UInt16(parts[1]) else { throw CommandFailure("--host must be HOST:PORT, e.g. 127.0.0.1:7700") }
            return (String(parts[0]), port, String(host))
        }
        let browser: DeviceBrowser
        do { browser = try DeviceBrowser(mode: mdns.mdns, interfaces: mdns.interfaces) } catch { throw CommandFailure("\(error)") }
        defer { browser.close() }
        let devices: [Device]
        do { devices = try await browser.currentDevices(timeout: .seconds(timeout)) } catch { throw CommandFailure("\(error)") }
        let playable = devices.filter { $0.receiver.status != .leaving && $0.receiver.status != .unavailable }
        guard !playable.isEmpty else {
            throw CommandFailure("no Lyre receivers found; start 'lyred' on a machine on this network, or use --host HOST:PORT")
        }
        let preference = PreferredOutput()
        let wanted = to ?? preference.load()
        let device: Device
        if let wanted {
            guard let match = playable.first(where: { $0.id.rawValue == wanted.lowercased() })
                ?? playable.first(where: { $0.name.lowercased() == wanted.lowercased() })
            else {
                let names = playable.map { "'\($0.name)'" }.joined(separator: ", ")
                throw CommandFailure("no receiver called '\(wanted)'; found \(names)")
            }
            device = match
            if to != nil { preference.save(match.id.rawValue) }
        } else {
            guard playable.count == 1 else {
                let names = playable.map { "'\($0.name)'" }.joined(separator: ", ")
                throw CommandFailure("\(playable.count) receivers found (\(names)); choose one with --to NAME")
            }
            device = playable[0]
        }
        guard let address = device.addresses.first(where: { !$0.contains(":") }) else {
            throw CommandFailure("'\(device.name)' has no IPv4 address; Lyre streams over IPv4 for now")
        }
        return (address, device.port, "'\(device.name)'")
    }

    static func defaultSenderName() -> String {
        let user = ProcessInfo.processInfo.environment["USER"] ?? "lyre"
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        return "\(user)@\(host)"
    }
}

/// The output chosen last with `--to`, by id (`setPreferredOutput` on iOS): `$XDG_CONFIG_HOME/lyre/preferred-output`.
struct PreferredOutput {
    let path: String

    init() {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CONFIG_HOME"] ?? ((env["HOME"] ?? "/tmp") + "/.config")
        path = base + "/lyre/preferred-output"
    }

    func load() -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty
    }

    func save(_ id: String) {
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try? (id + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
