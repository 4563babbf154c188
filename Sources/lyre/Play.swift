import ArgumentParser
import Dispatch
import Logging
import LyreAudio
import LyreCommandLine
import LyreDiscovery
import LyreIdentity
import LyrePairing
import LyreSender
import LyreWire
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `lyre play`: streams files (or raw PCM from stdin) to a receiver.
struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play audio files (or raw PCM on stdin) on a Lyre receiver.",
        discussion: """
            Files are anything FFmpeg reads (WAV, FLAC, Ogg Vorbis/Opus, MP3, M4A with AAC or ALAC, ...), played in order; '-' reads raw \
            PCM from stdin as --format says. Without --to, lyre plays to the saved preferred output, or to the \
            only receiver on the network. Ctrl-C stops and tears the session down.

            Several --to play in sync (multi-room), each with an optional channel map: --to Left=left --to Right=right \
            is a stereo pair (left, right, mono or stereo, the default). While it plays, 'lyre group' lists the \
            rooms and adds or removes them. A room that goes away leaves the others playing, and rejoins by \
            itself when its receiver is back. When the only room goes away, the playback pauses where it stopped \
            and waits for it (Ctrl-C to stop); its return resumes it, or with --no-resume leaves it paused for \
            its controls to play.

            What plays is described to the receivers from each file's tags (or --title, --artist, --album), with \
            cover art embedded in the file or in cover.jpg/folder.jpg beside it (or --artwork). Every room's \
            controls (lyre remote, MPRIS, media keys) drive the queue: play, pause, toggle, next, previous, seek, \
            skip, stop, and volume up/down (of that room).
            """)

    @Argument(help: "Files to play in order, or '-' for raw PCM on stdin.")
    var files: [String]

    @Option(help: ArgumentHelp("A receiver, by name or id, and which channels it plays; repeat for several rooms. One is saved as the preferred output.", valueName: "NAME|ID[=CHANNELS]"))
    var to: [String] = []

    @Option(help: ArgumentHelp("Connect to HOST:PORT directly, without mDNS ([IPV6]:PORT for an IPv6 address); repeatable.", valueName: "HOST:PORT[=CHANNELS]"))
    var host: [String] = []

    @Option(help: ArgumentHelp("The socket 'lyre group' talks to, this user only; 'off' for none (default: \(GroupSocketPath.default)).", valueName: "PATH"))
    var groupSocket: String?

    @Option(help: ArgumentHelp("Target latency in ms (10 to 2000).", valueName: "MS"))
    var latency: Int = 250

    @Option(help: ArgumentHelp("Opus bitrate in kbit/s (6 to 510).", valueName: "KBPS"))
    var bitrate: Int = 128

    @Option(help: ArgumentHelp("Opus frame length in ms, one of \(StreamConfiguration.frameChoicesListed) (default: 5 under 20 ms of latency, 10 under 50, so that a lost packet can be rebuilt in time; else 20).", valueName: "MS"))
    var frame: Int?

    @Option(help: ArgumentHelp("Packet FEC: off, auto (on under \(StreamConfiguration.fecLatencyThreshold) ms of latency) or N, one parity packet per N packets (2 to 15).", valueName: "off|auto|N"))
    var fec: String = "auto"

    @Flag(inversion: .prefixedNo, help: "Resend lost packets when a receiver asks (--no-resend: never, as version 1 senders).")
    var resend = true

    @Flag(inversion: .prefixedNo, help: "When the only room went away and comes back, play on where it paused (--no-resume: stay paused until its controls say play).")
    var resume = true

    @Flag(help: "Play over what a receiver already plays, both at their own level, instead of taking it over (an announcement). A receiver that mixes no more refuses, and what it plays goes on.")
    var mix = false

    @Flag(help: "As --mix, and lower what plays while this plays, by the receiver's duck depth (lyred --duck-db, 15 dB by default).")
    var duck = false

    @Flag(help: "As --mix, and pause what plays for as long as this plays if it is spoken audio (lyre play --spoken-audio, an app in spokenAudio mode); it plays on after.")
    var interruptSpokenAudio = false

    @Flag(help: "What this plays is spoken (a podcast, an audio book): an announcement that interrupts spoken audio pauses it rather than play over it, and it plays on after.")
    var spokenAudio = false

    // (.unconditional: the word after the option is its value, so that -24 is not read as an option.)
    @Option(parsing: .unconditional, help: ArgumentHelp("As --duck, lowering what plays by this many dB (-40 to -3) rather than by the receiver's own depth.", valueName: "DB"))
    var duckDb: Double?

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
        guard SessionLatency.milliseconds.contains(latency) else { throw ValidationError(SessionLatency.outOfRange) }
        guard (6...510).contains(bitrate) else { throw ValidationError("--bitrate must be between 6 and 510 kbit/s") }
        guard frame.map(StreamConfiguration.frameChoices.contains) ?? true else { throw ValidationError("--frame must be one of \(StreamConfiguration.frameChoicesListed) ms") }
        guard fecMode != nil else { throw ValidationError("--fec must be off, auto or a row of 2 to 15 packets") }
        guard RawPCMFormat(format) != nil else { throw ValidationError("--format must look like s16le:44100:2") }
        for room in to { _ = try RoomSpec(room) }
        for room in host where try RoomSpec(room).hostPort == nil {
            throw ValidationError("--host must be HOST:PORT, e.g. 127.0.0.1:7700 or [::1]:7700")
        }
        guard !(mix && (duck || duckDb != nil)) else { throw ValidationError("--mix and --duck go one at a time: --duck mixes too") }
        if let duckDb, !MixRequest.duckDepthRange.contains(duckDb) { throw ValidationError("--duck-db must be between -40 and -3") }
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
        let sources: [AudioSource] = files.map {
            $0 == "-" ? .raw(fileDescriptor: 0, format: RawPCMFormat(format)!) : .file(path: $0)
        }
        // Every file is opened and described (the first that is not a WAV loads FFmpeg's libraries, tens of ms) while the
        // receivers are found and connected to; nothing plays unless all open.
        let overrides = Overrides(title: title, artist: artist, album: album, artwork: artwork)
        let described = Task.detached { Result { try Self.queueItems(sources, overrides) } }
        var (routes, remembered) = try await resolveRoutes(known: true)
        var configuration = StreamConfiguration()
        configuration.latencyMilliseconds = latency
        configuration.bitrate = bitrate * 1000
        configuration.frameMilliseconds = frame ?? StreamConfiguration.defaultFrameMilliseconds(latency: latency)
        configuration.fec = fecMode!
        configuration.resend = resend
        configuration.waitsForLostRooms = true
        configuration.mixing = duck || duckDb != nil ? .duck : mix || interruptSpokenAudio ? .mix : nil
        configuration.interruptsSpokenAudio = interruptSpokenAudio
        configuration.mode = spokenAudio ? .spokenAudio : .default
        configuration.duckDB = duckDb
        configuration.senderName = name ?? Self.defaultSenderName()
        configuration.security = try SenderState.security(name: configuration.senderName)
        configuration.senderID = configuration.security?.identity.id

        func cannotPlay(_ error: Error) -> CommandFailure {
            // A receiver that mixes no more (streaming.md §7): what the user can do instead.
            var hint = ""
            if configuration.mixing != nil, case .refused(_, 453, _)? = error as? LyreSenderError {
                let asked = duckDb != nil ? "--duck-db" : duck ? "--duck" : interruptSpokenAudio ? "--interrupt-spoken-audio" : "--mix"
                hint = "; play without \(asked) to take it over"
            }
            return CommandFailure("cannot play on \(routes.map(\.description).joined(separator: ", ")): \(error)\(hint)")
        }
        let session: StreamSession
        do {
            // A remembered address is tried briefly: when it does not answer as its receiver, browse.
            var brief = configuration
            if remembered { brief.connectTimeoutMilliseconds = 1000 }
            session = try await StreamSession.connect(routes: routes, configuration: brief)
        } catch where remembered {
            Logger(label: "lyre.play").debug("remembered address failed (\(error)); looking for the receivers again")
            KnownReceivers().forget(routes.compactMap(\.id))
            routes = try await resolveRoutes(known: false).routes
            do { session = try await StreamSession.connect(routes: routes, configuration: configuration) } catch { throw cannotPlay(error) }
        } catch {
            throw cannotPlay(error)
        }
        let items: [QueueItem]
        do {
            items = try await described.value.get()
        } catch {
            await session.close()
            throw error
        }
        let label = routes.map(\.description).joined(separator: ", ")
        let player = QueuePlayer(items: items, session: session)
        let terminal = isatty(2) == 1
        // A room lost while others play comes back by itself when its receiver answers again.
        let returns = RoomReturns(session: session, discovery: (mdns.mdns, mdns.interfaces)) {
            Console.standardError.write(line: "\(terminal ? "\r\u{1B}[K" : "")lyre: no room left to play on or wait for; stopped")
            player.stop()
        }
        defer { returns.close() }
        let logger = Logger(label: "lyre.play")
        // Set when the last room went away while playing: its return resumes the playback (unless --no-resume).
        let resumeOnReturn = Mutex(false)
        let resume = resume
        session.observeRoomChanges { change in
            let rest = change.remaining > 0 ? "; playing on in \(session.routes.map(\.description).joined(separator: ", "))" : ""
            let line: String
            switch change.kind {
            case .joined:
                let back = returns.cameBack(change.route)
                line = "\(change.route) \(back ? "is back" : "joined")\(session.isEncrypted(change.route) ? "" : " (\(Self.plainNote))")"
                // A room again after the last went away (back, or one added): the playback that paused then
                // resumes (unless --no-resume).
                if resumeOnReturn.withLock({ wanted in defer { wanted = false }; return wanted }) {
                    Task {
                        do { try await player.resume() } catch { logger.warning("cannot resume on \(change.route): \(error)") }
                    }
                }
            case .left(nil): line = "\(change.route) removed\(rest)"
            case .left(.oldDeviceUnavailable?) where change.remaining > 0:
                returns.lost(change.route)
                line = "\(change.route) is no longer available\(rest); it rejoins when it is back"
            case .left(.oldDeviceUnavailable?) where session.isWaitingForRooms:
                returns.lost(change.route)
                // Said before the player pauses itself: a pause of the user's own is not undone by the return.
                let wanted = resume && !player.isPaused  // the player's lock, not under ours
                resumeOnReturn.withLock { $0 = wanted }
                let waiting = returns.returning
                line = "paused: \(waiting.map(\.description).joined(separator: ", ")) \(waiting.count > 1 ? "are" : "is") no longer available; "
                    + (resume ? "it plays on when \(waiting.count > 1 ? "one" : "it") is back" : "waiting for \(waiting.count > 1 ? "one" : "it"); its controls play on")
                    + " (Ctrl-C to stop)"
            case .left(.oldDeviceUnavailable?): line = "\(change.route) is no longer available\(rest)"
            case .left(.takenOver(let by)?): line = "\(by.map { "'\($0)'" } ?? "another sender") took over \(change.route)\(rest)"
            case .left(.unpaired?): line = "\(change.route) unpaired this sender\(rest); \(change.route.pairCommand) to play there again"
            case .left(.categoryChange?): line = "\(change.route) left: the category moved the audio\(rest)"  // an app's, not lyre play's
            }
            Console.standardError.write(line: "\(terminal ? "\r\u{1B}[K" : "")lyre: \(line)")
        }
        // A plain session is never silent about it: said once here, and on the status line while it plays.
        let plain = session.plainRoutes
        if !plain.isEmpty {
            Console.standardError.write(line: "lyre: \(plain.map(\.description).joined(separator: ", ")): \(Self.plainNote)")
        }
        let resolver = resolver
        let group = try await GroupServer.start(path: groupSocket, session: session, returns: returns, resolve: { spec in
            try await resolver.routes([spec]).first!
        })
        defer { group?.close() }

        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        interrupt.setEventHandler { player.stop() }
        interrupt.resume()
        // Each room's link quality, from its receiver's reports (streaming.md §4.2), in the log every 5 s.
        let qualityLog = DispatchSource.makeTimerSource()
        qualityLog.schedule(deadline: .now() + 5, repeating: 5)
        qualityLog.setEventHandler {
            for (route, quality) in session.linkQualities { logger.info("\(route): \(quality.summary)") }
        }
        qualityLog.resume()
        defer { qualityLog.cancel() }
        let outcome: Result<QueuePlayer.Outcome, Error>
        do {
            outcome = .success(
                try await player.play { progress in
                    guard terminal else { return }
                    // The room with the worst link, once a receiver has reported.
                    let worst = session.linkQualities.max { $0.quality.lossPercent < $1.quality.lossPercent }
                    let link = worst.map { "  \(session.routes.count > 1 ? "\($0.route) " : "")\($0.quality.summary)" } ?? ""
                    let total = progress.duration.map { " / " + NowPlayingInfo.clockText($0) } ?? ""
                    let by = progress.artist.map { " — \($0)" } ?? ""
                    let place = items.count > 1 ? "  [\(progress.index + 1)/\(items.count)]" : ""
                    let volume = session.volume <= -144 ? "  muted" : session.volume < 0 ? "  \(Int(session.volume.rounded())) dB" : ""
                    let plain = session.plainRoutes
                    let security = plain.isEmpty ? "" : "  unencrypted" + (session.routes.count > 1 ? ": \(plain.map(\.description).joined(separator: ", "))" : "")
                    Console.standardError.write("\r\u{1B}[K\(progress.paused ? "⏸" : "▶") \(progress.title)\(by)  \(NowPlayingInfo.clockText(progress.elapsed))\(total)\(place)\(volume)\(security)\(link)")
                })
        } catch {
            outcome = .failure(error)
        }
        interrupt.cancel()
        if terminal { Console.standardError.write("\r\u{1B}[K") }
        let dropped = session.timingRequestsDropped
        if dropped > 0 { logger.notice("dropped \(dropped) timing requests that did not verify (pairing.md §6.4)") }
        switch outcome {
        case .success(.finished), .success(.stopped): return
        case .success(.interrupted(.oldDeviceUnavailable)):
            let which = routes.count > 1 ? "the last room" : label
            throw CommandFailure("paused: \(which) is no longer available; play again to pick another receiver")
        case .success(.interrupted(.takenOver(let by))):
            let which = routes.count > 1 ? "the last room" : label
            throw CommandFailure("paused: \(by.map { "'\($0)'" } ?? "another sender") took over \(which)")
        case .success(.interrupted(.unpaired)):
            let which = routes.count > 1 ? "the last room" : label
            throw CommandFailure("stopped: \(which) unpaired this sender" + (routes.count == 1 ? "; \(routes[0].pairCommand) to play there again" : ""))
        case .success(.interrupted(.categoryChange)):
            throw CommandFailure("stopped: the audio session's category moved the audio off \(label)")  // an app's, not lyre play's
        case .failure(let error):
            await session.close()
            throw CommandFailure("\(error)")
        }
    }

    /// What a room whose session is not paired is told.
    static let plainNote = "not paired: audio, now playing and artwork go unencrypted (lyre pair NAME to encrypt)"

    private var fecMode: StreamConfiguration.FECMode? {
        switch fec.lowercased() {
        case "off": .off
        case "auto": .auto
        default: Int(fec).flatMap { (2...FECPacket.maximumRow).contains($0) ? .row($0) : nil }
        }
    }

    /// What --title, --artist, --album and --artwork say instead of the files.
    struct Overrides: Sendable {
        var title, artist, album, artwork: String?
    }

    /// The queue with what each item says about itself, and the overrides.
    private static func queueItems(_ sources: [AudioSource], _ overrides: Overrides) throws -> [QueueItem] {
        var cover: Artwork?
        if let artwork = overrides.artwork {
            guard let data = FileManager.default.contents(atPath: artwork) else { throw CommandFailure("cannot read --artwork '\(artwork)'") }
            do { cover = try Artwork(bytes: Array(data)) } catch { throw CommandFailure("--artwork '\(artwork)': \(error)") }
        }
        return try sources.map { source in
            var (metadata, art): (TrackMetadata, Artwork?)
            do { (metadata, art) = try source.describe() } catch { throw CommandFailure("\(error)") }
            if let title = overrides.title { metadata.title = title }
            if let artist = overrides.artist { metadata.artist = artist }
            if let album = overrides.album { metadata.album = album }
            if let cover { art = cover }
            return QueueItem(source: source, metadata: metadata, artwork: art)
        }
    }

    /// The rooms asked for with --host and --to, or the preferred output, or the only receiver: from
    /// addresses remembered by id when `known` and every room has one, else through discovery.
    private func resolveRoutes(known: Bool) async throws -> (routes: [OutputRoute], remembered: Bool) {
        let specs = try (host + to).map(RoomSpec.init)
        let remembered = known ? resolver.knownRoutes(specs.isEmpty ? nil : specs) : nil
        var routes = if let remembered { remembered } else { try await resolver.routes(specs.isEmpty ? nil : specs) }
        // A receiver given as HOST:PORT that was found or paired there before is known by its id: its pairing
        // applies, and it must answer as that receiver.
        let known = KnownReceivers().load()
        for index in routes.indices where routes[index].id == nil {
            if let entry = known.first(where: { $0.host == routes[index].host && $0.port == routes[index].port }) {
                routes[index].id = entry.id
            }
        }
        if to.count == 1, host.isEmpty, let id = routes.first?.id { PreferredOutput().save(id) }
        var seen = Set<String>()
        for route in routes where !seen.insert(route.address).inserted {
            throw CommandFailure("\(route) is named twice; name each room once")
        }
        return (routes, remembered != nil)
    }

    private var resolver: RouteResolver { RouteResolver(mode: mdns.mdns, interfaces: mdns.interfaces, timeout: timeout) }

    static func defaultSenderName() -> String {
        let user = ProcessInfo.processInfo.environment["USER"] ?? "lyre"
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        return "\(user)@\(host)"
    }
}

/// Finds the receivers a playback names.
struct RouteResolver: Sendable {
    var mode: MDNSMode
    var interfaces: [String]
    /// Seconds to look for receivers.
    var timeout: Double

    /// Routes for `specs` (or the preferred output when nil) from HOST:PORT and remembered addresses alone,
    /// without browsing; nil unless every room is one or the other.
    func knownRoutes(_ specs: [RoomSpec]?) -> [OutputRoute]? {
        let known = KnownReceivers()
        guard let specs else {
            return PreferredOutput().load().flatMap(known.find).map { [OutputRoute(host: $0.host, port: $0.port, name: $0.name, id: $0.id)] }
        }
        let pairings = Self.pairings()
        var routes: [OutputRoute] = []
        for spec in specs {
            let paired = Self.pairedIDs(for: spec.name, in: pairings)
            if let route = spec.directRoute {
                routes.append(route)
            } else if let entry = paired.isEmpty ? known.find(spec.name) : paired.lazy.compactMap(known.find).first {
                routes.append(OutputRoute(host: entry.host, port: entry.port, name: entry.name, id: entry.id, channels: spec.channels))
            } else {
                return nil
            }
        }
        return routes.contains { $0.id != nil } ? routes : nil
    }

    /// Routes for `specs` (HOST:PORT directly, names and ids through mDNS); nil means the preferred output,
    /// else the only receiver on the network. Receivers found are remembered (`KnownReceivers`).
    func routes(_ specs: [RoomSpec]?) async throws -> [OutputRoute] {
        let routes = try await browse(specs)
        KnownReceivers().remember(routes)
        return routes
    }

    private func browse(_ specs: [RoomSpec]?) async throws -> [OutputRoute] {
        var routes: [OutputRoute?] = specs?.map(\.directRoute) ?? [nil]
        guard routes.contains(where: { $0 == nil }) else { return routes.compactMap { $0 } }
        let browser: DeviceBrowser
        do { browser = try DeviceBrowser(mode: mode, interfaces: interfaces) } catch { throw CommandFailure("\(error)") }
        defer { browser.close() }
        // Receivers asked for by name or id: stop browsing as soon as each is seen with an address.
        let preferred = PreferredOutput().load()
        let wanted: [String]? = specs.map { specs in
            zip(specs, routes).compactMap { spec, route in route == nil ? spec.name : nil }
        } ?? preferred.map { [$0] }
        let unresolved = routes.filter { $0 == nil }.count
        let pairings = Self.pairings()
        let devices: [Device]
        do {
            devices = try await browser.currentDevices(timeout: .seconds(timeout)) { devices in
                guard let wanted, wanted.count == unresolved else { return false }
                let ready = Self.playable(devices).filter { $0.streamAddress != nil }
                return wanted.allSatisfy { name in
                    let paired = Self.pairedIDs(for: name, in: pairings)
                    return ready.contains { paired.isEmpty ? $0.matches(name) : paired.contains($0.id.rawValue) }
                }
            }
        } catch { throw CommandFailure("\(error)") }
        let playable = Self.playable(devices)
        guard !playable.isEmpty else {
            // A paired name says that its receiver is not there, rather than that none is.
            if let name = wanted?.first(where: { !Self.pairedIDs(for: $0, in: pairings).isEmpty }) {
                _ = try Self.device(named: name, among: [], pairings: pairings, names: "")
            }
            throw CommandFailure("no Lyre receivers found; start 'lyred' on a machine on this network, or use --host HOST:PORT")
        }
        let names = playable.map { "'\($0.name)'" }.joined(separator: ", ")
        for index in routes.indices where routes[index] == nil {
            let spec = specs?[index]
            let device: Device
            if let wanted = spec?.name ?? preferred {
                device = try Self.device(named: wanted, among: playable, pairings: pairings, names: names)
            } else {
                guard playable.count == 1 else {
                    throw CommandFailure("\(playable.count) receivers found (\(names)); choose one with --to NAME")
                }
                device = playable[0]
            }
            guard let address = device.streamAddress else {
                throw CommandFailure("'\(device.name)' has no address; give it with --host HOST:PORT")
            }
            routes[index] = OutputRoute(host: address, port: device.port, name: device.name, id: device.id.rawValue,
                                        channels: spec?.channels ?? .stereo, keyFingerprint: device.receiver.keyFingerprint)
        }
        return routes.compactMap { $0 }
    }

    /// The device `wanted` names among `playable`. A name the user paired with means that receiver, by its id,
    /// whatever it is called now (`Kitchen (2)` when another device took its name), and never another device
    /// that holds the name: that one is refused with a line naming both, and a paired receiver that is not
    /// there is said so (pairing.md §6).
    static func device(named wanted: String, among playable: [Device], pairings: [PairedDevices.Entry], names: String) throws -> Device {
        let paired = pairedIDs(for: wanted, in: pairings)
        if paired.isEmpty {
            guard let match = playable.first(where: { $0.id.rawValue == wanted.lowercased() }) ?? playable.first(where: { $0.matches(wanted) })
            else {
                let channels = wanted.contains("=") ? " (the channels after '=' are one of \(ChannelMap.choices))" : ""
                throw CommandFailure("no receiver called '\(wanted)'\(channels); found \(names)")
            }
            return match
        }
        if let match = playable.first(where: { paired.contains($0.id.rawValue) }) { return match }
        let entry = pairings.first { $0.id == paired[0] }!
        let pairedText = "the '\(entry.name)' paired with (\(entry.id), key \(DeviceKey.fingerprint(of: entry.publicKeyBytes)))"
        if let other = playable.first(where: { $0.matches(wanted) }) {
            let key = other.receiver.keyFingerprint.map { ", key \($0)" } ?? ""
            throw CommandFailure("'\(other.name)' on the network (\(other.id.rawValue)\(key)) is not \(pairedText), which is not there; "
                + "nothing was sent. If it is the same receiver made anew: lyre pair --forget '\(entry.name)', then lyre pair \(other.id.rawValue)")
        }
        throw CommandFailure("\(pairedText) is not on the network; nothing was sent" + (names.isEmpty ? "" : "; found \(names)"))
    }

    /// The receivers this user paired with; none when the file cannot be read (playing then says why).
    static func pairings() -> [PairedDevices.Entry] { (try? SenderState.pairedReceivers.load()) ?? [] }

    /// The ids of the paired receivers that `name` names by the name they were paired under (any case); none
    /// when `name` is an id, or names no paired receiver.
    static func pairedIDs(for name: String, in pairings: [PairedDevices.Entry]) -> [String] {
        guard !pairings.contains(where: { $0.id == name.lowercased() }) else { return [] }
        return pairings.filter { $0.name.lowercased() == name.lowercased() }.map(\.id)
    }

    static func playable(_ devices: [Device]) -> [Device] {
        devices.filter(\.isPlayable)
    }
}

extension Device {
    /// Whether `name` is this device's id or its name (any case).
    func matches(_ name: String) -> Bool {
        id.rawValue == name.lowercased() || self.name.lowercased() == name.lowercased()
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
        (try? String(contentsOfFile: path, encoding: .utf8)).map { PathText.trimmed($0) }?.nilIfEmpty
    }

    func save(_ id: String) {
        try? FileManager.default.createDirectory(atPath: PathText.directory(of: path), withIntermediateDirectories: true)
        try? (id + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}

extension RoomSpec {
    /// The route when the room is HOST:PORT, found without discovery.
    var directRoute: OutputRoute? { hostPort.map { OutputRoute(host: $0.0, port: $0.1, channels: channels) } }
}
