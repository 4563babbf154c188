import LyreCommandLine
import LyreControl
import LyreSender
import LyreWire
import NIOCore
import NIOPosix

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The group socket of a running `lyre play` (streaming.md §9.4): a `LineServer` that `lyre group` talks to.
/// A request's words are written as `LineWords` says (a room name with spaces or quotes is quoted). Requests
/// are `list`, `add NAME|ID|HOST:PORT[=CHANNELS]`, `remove NAME`, `volume DB` (the group) and
/// `volume NAME DB` (one room); answers are `ok[ JSON]` or `error MESSAGE`. Each request's session call is
/// awaited, never run on the event loop.
final class GroupServer: Sendable {
    private let channel: Channel

    private init(channel: Channel) {
        self.channel = channel
    }

    /// Listens at `path` (nil: the default; "off": none). A socket another `lyre play` holds is a warning:
    /// this playback then runs without one.
    static func start(path: String?, session: StreamSession, returns: RoomReturns, resolve: @escaping @Sendable (RoomSpec) async throws -> OutputRoute) async throws
        -> GroupServer?
    {
        if path == "off" { return nil }
        let socketPath = path ?? GroupSocketPath.default
        do {
            let channel = try await LineServer.bind(path: socketPath, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), owner: "lyre play") {
                line, eventLoop in
                let promise = eventLoop.makePromise(of: String.self)
                promise.completeWithTask { await Self.respond(to: line, session: session, returns: returns, resolve: resolve) }
                return promise.futureResult
            }
            return GroupServer(channel: channel)
        } catch {
            if path == nil, case .inUse = error {
                Console.standardError.write(line: "lyre: \(error); 'lyre group' controls that playback, not this one")
                return nil
            }
            throw CommandFailure("\(error); pass --group-socket PATH, or off")
        }
    }

    func close() {
        let path = channel.localAddress?.pathname
        try? channel.close().wait()
        if let path { unlink(path) }
    }

    private static func respond(to line: String, session: StreamSession, returns: RoomReturns,
                                resolve: @Sendable (RoomSpec) async throws -> OutputRoute) async -> String {
        let words: [String]
        do { words = try LineWords.split(line) } catch { return "error \(error)" }
        /// "ok" once `body` is done, or the error it threw.
        func answer(_ body: () async throws -> Void) async -> String {
            do {
                try await body()
                return "ok"
            } catch {
                return "error \(error)"
            }
        }
        switch (words.first, words.count) {
        case ("list", 1):
            let rooms = await session.rooms()
            return "ok " + GroupListing(rooms: rooms, returning: returns.returning, volume: session.volume).json
        case ("add", 2):
            let route: OutputRoute
            let spec: RoomSpec
            do {
                spec = try RoomSpec(words[1])
                route = try await resolve(spec)
            } catch {
                return "error \(error)"  // a room waited for still is
            }
            return await answer {
                let joined = try await session.addRoute(route)
                // Added by hand, by name or at a new address: no longer waited for.
                returns.forget(joined)
            }
        case ("remove", 2):
            // A room waited for is removed by no longer waiting for it.
            if returns.forget(named: words[1]) { return "ok" }
            return await answer { try await session.removeRoute(named: words[1]) }
        case ("volume", 2), ("volume", 3):
            guard let db = Double(words.last!), db.isFinite, db <= 0, db >= -30 || db == -144 else {
                return "error volume is dB from -30 to 0, or -144 to mute"
            }
            if words.count == 3 { return await answer { try await session.setVolume(db, room: words[1]) } }
            return await answer { try await session.setVolume(db) }
        default:
            return "error unknown request; send list, add NAME[=CHANNELS], remove NAME, volume [NAME] DB"
        }
    }
}

/// The `list` answer: the group volume and each room.
struct GroupListing: Codable {
    struct Room: Codable {
        var name: String
        var id: String?
        var address: String
        var channels: String
        var state: String
        var volume: Double
        var outputLatencyMs: Double
        var outputDelayMs: Int
        /// The receiver's own figures: received, lost, late, concealed, asked again, recovered, clock offset
        /// and round trip.
        var link: [String: String]?
        /// What this sender did with the room's retransmission requests.
        var retransmission: RetransmissionReport?
        /// The room's link quality from its receiver's reports (loss, recovered, jitter, round trip).
        var quality: LinkQuality?
        /// True when the room's session is paired (TLS and SRTP), false when it is plain, unencrypted.
        var encrypted: Bool
    }

    var volume: Double
    var rooms: [Room]

    /// The rooms playing, then those lost and waited for (state `returning`).
    init(rooms: [RoomReport], returning: [OutputRoute] = [], volume: Double) {
        self.volume = volume
        self.rooms = rooms.map {
            Room(name: $0.route.name, id: $0.route.id, address: $0.route.address, channels: $0.route.channels.rawValue,
                 state: $0.state, volume: $0.volume, outputLatencyMs: $0.outputLatencyMilliseconds, outputDelayMs: $0.outputDelayMilliseconds,
                 link: $0.statistics, retransmission: $0.retransmission, quality: $0.quality, encrypted: $0.encrypted)
        } + returning.map {
            Room(name: $0.name, id: $0.id, address: $0.address, channels: $0.channels.rawValue, state: "returning", volume: ReceiverTXT.mutedVolume,
                 outputLatencyMs: 0, outputDelayMs: 0, link: nil, retransmission: nil, quality: nil, encrypted: $0.keyFingerprint != nil)
        }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
