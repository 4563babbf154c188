import FoundationEssentials
import Logging
import LyreAudio
import LyreClock
import LyreControl
import LyrePairing
import LyreWire
import NIOCore
import NIOPosix

/// The receiver's local control socket (now-playing.md §5): a `LineServer` whose lines are `ControlRequest`s.
enum ControlServer {
    static func bind(path: String, registry: SessionRegistry) async throws(LineServerError) -> Channel {
        try await LineServer.bind(path: path, eventLoop: registry.eventLoop, owner: "lyred") { line, eventLoop in
            eventLoop.flatSubmit { answer(line, registry: registry, mayPair: true).map(\.line) }
        }
    }

    /// The answer to one request in the control vocabulary: the control socket's, and the web API's
    /// (control-api.md), one code path for both. `mayPair`: the client may see the PIN and unpair (the
    /// socket's user, or a web client on loopback).
    static func answer(_ line: String, registry: SessionRegistry, mayPair: Bool) -> EventLoopFuture<ControlReply> {
        let eventLoop = registry.eventLoop
        let request: ControlRequest
        do {
            request = try ControlRequest(line: line)
        } catch {
            if case .unknownCommand = error { return eventLoop.makeSucceededFuture(.error("unknown", "\(error)")) }
            return eventLoop.makeSucceededFuture(.error("invalid", "\(error)"))
        }
        switch request {
        case .pairing, .unpair:
            guard mayPair else {
                return eventLoop.makeSucceededFuture(
                    .error("forbidden", "pairing is seen and changed only on the receiver itself: open its page there (http://localhost:7780) or use 'lyre remote'"))
            }
        default: break
        }
        switch request {
        case .stats:
            return eventLoop.makeSucceededFuture(.ok(registry.statisticsLine))
        case .outputDelay(let milliseconds):
            guard let milliseconds else { return eventLoop.makeSucceededFuture(.ok("\(registry.outputDelayMilliseconds)", json: true)) }
            // At once, kept or not: the ear decides, and a setting that cannot be kept still helps until a restart.
            registry.setOutputDelay(milliseconds: milliseconds)
            return keep(.outputDelay(milliseconds: milliseconds), registry: registry, done: .ok("\(milliseconds)", json: true))
        case .name(let name):
            guard let name else { return eventLoop.makeSucceededFuture(.ok(json(registry.name), json: true)) }
            guard registry.keep != nil else {
                return eventLoop.makeSucceededFuture(.error("unsupported", "this receiver's name is set by the program that runs it"))
            }
            return keep(.name(name), registry: registry, done: .ok(json(name), json: true))
        case .nowPlaying:
            let report = ControlNowPlaying(registry.active?.snapshot(), volume: registry.volume)
            return eventLoop.makeSucceededFuture(.ok(report.json, json: true))
        case .pairing:
            guard let pending = registry.pairing?.pending else {
                return eventLoop.makeSucceededFuture(.error("none", "no pairing is under way; run 'lyre pair NAME' on the sender"))
            }
            return eventLoop.makeSucceededFuture(.ok(json(pending), json: true))
        case .paired:
            guard let pairing = registry.pairing else { return eventLoop.makeSucceededFuture(.ok("[]", json: true)) }
            do { return eventLoop.makeSucceededFuture(.ok(json(try pairing.paired.load()), json: true)) } catch {
                return eventLoop.makeSucceededFuture(.error("damaged", "\(error)"))
            }
        case .unpair(let name):
            guard let pairing = registry.pairing else { return eventLoop.makeSucceededFuture(.error("unknown", "this receiver does not pair")) }
            do {
                guard let entry = try pairing.forget(name) else {
                    return eventLoop.makeSucceededFuture(.error("unknown", "no paired sender '\(name)'; see 'lyre remote paired'"))
                }
                registry.logger.notice("unpaired '\(entry.name)' (\(entry.id))")
                registry.changed(.pairing)
                // What it plays ends now: an unpaired sender is no longer let play (pairing.md §6.5).
                registry.endSessions(ofKey: entry.publicKeyBytes, .unpaired)
                return eventLoop.makeSucceededFuture(.ok(json(entry.id), json: true))
            } catch {
                return eventLoop.makeSucceededFuture(.error("damaged", "\(error)"))
            }
        case .command(let event):
            return registry.relay(event).map { outcome in
                outcome.succeeded ? .ok("") : .error(outcome.kind.rawValue, outcome.message)
            }
        }
    }
}

extension ControlServer {
    /// Hands `setting` to the receiver's keeper (lyred: the advertisement and its config file) off the event
    /// loop, after the settings asked before it; `done` when it is kept, else `notKept` and why.
    static func keep(_ setting: ReceiverSetting, registry: SessionRegistry, done: ControlReply) -> EventLoopFuture<ControlReply> {
        let eventLoop = registry.eventLoop
        guard let keep = registry.keep else { return eventLoop.makeSucceededFuture(done) }
        // One at a time, in the order they came: the file and the advertisement end with the last one asked.
        let kept = (registry.keeping ?? eventLoop.makeSucceededVoidFuture()).flatMap {
            let promise = eventLoop.makePromise(of: ControlReply.self)
            promise.completeWithTask {
                if let failure = await keep(setting) { return .error("notKept", failure) }
                return done
            }
            return promise.futureResult
        }
        registry.keeping = kept.map { _ in () }
        return kept
    }
}

/// One answer in the control vocabulary: `ok [RESULT]` or `error KIND: MESSAGE` on the socket, a `reply`
/// object on the web API (control-api.md §3).
struct ControlReply: Sendable, Equatable {
    var ok: Bool
    var kind: String
    /// The result (ok) or the message (error).
    var text: String
    /// `text` is JSON.
    var isJSON: Bool

    static func ok(_ text: String, json: Bool = false) -> ControlReply { ControlReply(ok: true, kind: "", text: text, isJSON: json) }
    static func error(_ kind: String, _ message: String) -> ControlReply { ControlReply(ok: false, kind: kind, text: message, isJSON: false) }

    /// As the control socket says it. A JSON string result goes bare, as it always has (`ok 12AB…` for unpair).
    var line: String {
        guard ok else { return "error \(kind): \(text)" }
        guard !text.isEmpty else { return "ok" }
        if isJSON, text.hasPrefix("\""), let data = text.data(using: .utf8), let bare = try? JSONDecoder().decode(String.self, from: data) {
            return "ok \(bare)"
        }
        return "ok \(text)"
    }
}

/// One line of JSON, keys sorted.
func json(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
}

/// The `now-playing` answer: the snapshot, with the position extrapolated to now.
extension ControlNowPlaying {
    init(_ snapshot: NowPlayingSnapshot?, volume: Double) {
        self.init(state: snapshot?.state.rawValue ?? "idle", volume: volume, at: HostClock.now())
        sender = snapshot?.sender
        let info = snapshot?.info
        title = info?.title
        artist = info?.artist
        album = info?.album
        albumArtist = info?.albumArtist
        genre = info?.genre
        trackNumber = info?.trackNumber
        trackCount = info?.trackCount
        duration = info?.duration
        position = snapshot?.position(at: at)
        rate = info?.rate
        queueIndex = info?.queueIndex
        queueCount = info?.queueCount
        artwork = snapshot?.artworkPath
        artworkType = snapshot?.artworkType?.rawValue
        commands = RemoteCommand.allCases.filter { snapshot?.enabled.commands.contains($0) ?? false }.map(\.rawValue)
        skipInterval = snapshot?.enabled.skipInterval
        updates = snapshot?.updates ?? 0
    }

    var json: String { LyreReceiver.json(self) }
}
