import FoundationEssentials
import LyrePairing
import LyreWire

/// The web API's messages (Protocol/control-api.md): what a client sends, parsed, and what the receiver
/// sends, as JSON text. No I/O: WebServer carries them.
enum WebAPI {
    /// The protocol's version, in every snapshot (§2).
    static let version = 1

    /// A client's message: `{"id": 7, "command": "pause"}` (§3). The command is a line of the control
    /// socket's vocabulary (`lyre remote`'s words).
    struct Command: Equatable, Decodable {
        var id: Int?
        var command: String

        var line: String { command }
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// Any JSON value, decoded to its last character and kept nowhere: what makes the decoder check all of a text.
    private struct AnyJSON: Decodable {
        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                while !array.isAtEnd { _ = try array.decode(AnyJSON.self) }
            } else if let object = try? decoder.container(keyedBy: Key.self) {
                for key in object.allKeys { _ = try object.decode(AnyJSON.self, forKey: key) }
            } else {
                let value = try decoder.singleValueContainer()
                if value.decodeNil() || (try? value.decode(Bool.self)) != nil || (try? value.decode(Double.self)) != nil { return }
                _ = try value.decode(String.self)
            }
        }
    }

    static func command(_ text: String) -> Result<Command, Malformed> {
        let data = Data(text.utf8)
        // The whole text is read first: JSONDecoder checks a value only when something decodes it, so a
        // malformed value under a key the command does not use would otherwise pass as part of an object.
        guard (try? JSONDecoder().decode([String: AnyJSON].self, from: data)) != nil else {
            return .failure(Malformed(description: "not a JSON object; send {\"id\": 1, \"command\": \"pause\"} (control-api.md §3)"))
        }
        guard let command = try? JSONDecoder().decode(Command.self, from: data) else {
            return .failure(Malformed(description: "a command is {\"id\": NUMBER, \"command\": \"WORDS\"} (control-api.md §3)"))
        }
        guard !command.command.contains(where: \.isNewline) else {
            return .failure(Malformed(description: "a command is one line"))
        }
        return .success(command)
    }

    /// The receiver as the page shows it (§2).
    struct ReceiverState: Encodable {
        var name: String
        var status: String
        var sender: String?
        var volume: Double
        var outputDelay: Int
        /// This client may see the pairing PIN and unpair (it is on loopback).
        var pairing: Bool
        /// The rooms of the playing session's playback, this one among them; empty for a single room.
        var rooms: [String]
        /// What plays over the session (announcements), oldest first.
        var overlays: [ReceiverOverlay]
    }

    static func receiverState(_ registry: SessionRegistry, mayPair: Bool) -> ReceiverState {
        let sender: String? = if case .playing(let name) = registry.status { name } else { nil }
        return ReceiverState(name: registry.name, status: registry.status.token, sender: sender, volume: registry.volume,
                             outputDelay: registry.outputDelayMilliseconds, pairing: mayPair, rooms: registry.active?.rooms ?? [],
                             overlays: registry.overlayStates)
    }

    private struct Snapshot: Encodable {
        var type = "snapshot"
        var version = WebAPI.version
        var receiver: ReceiverState
        var nowPlaying: ControlNowPlaying
        var link: PlayoutStatistics?
    }

    private struct ReceiverEvent: Encodable {
        var type = "receiver"
        var receiver: ReceiverState
    }

    private struct NowPlayingEvent: Encodable {
        var type = "now-playing"
        var nowPlaying: ControlNowPlaying
    }

    private struct LinkEvent: Encodable {
        var type = "link"
        var link: PlayoutStatistics
    }

    /// What a loopback client sees of pairing: the one under way, and the paired senders.
    private struct PairingEvent: Encodable {
        var type = "pairing"
        var pending: PairingResponder.Pending?
        var paired: [PairedSender]
    }

    private struct PairedSender: Encodable {
        var id: String
        var name: String
    }

    private struct ErrorFrame: Encodable {
        var type = "error"
        var message: String
    }

    /// The whole state: `GET /api/state`, and a WebSocket's first message.
    static func snapshot(_ registry: SessionRegistry, mayPair: Bool) -> String {
        json(Snapshot(receiver: receiverState(registry, mayPair: mayPair),
                      nowPlaying: ControlNowPlaying(registry.active?.snapshot(), volume: registry.volume),
                      link: registry.active?.controller?.statistics))
    }

    /// The event `change` makes for a client; nil when it is not this client's to see.
    static func event(_ change: RegistryChange, registry: SessionRegistry, mayPair: Bool) -> String? {
        switch change {
        case .receiver: json(ReceiverEvent(receiver: receiverState(registry, mayPair: mayPair)))
        case .nowPlaying: json(NowPlayingEvent(nowPlaying: ControlNowPlaying(registry.active?.snapshot(), volume: registry.volume)))
        case .pairing: mayPair ? pairingEvent(registry) : nil
        }
    }

    /// The pairing event (§4), also sent after the snapshot to a loopback client.
    static func pairingEvent(_ registry: SessionRegistry) -> String? {
        guard let pairing = registry.pairing else { return nil }
        let pending = pairing.pending
        let paired = ((try? pairing.paired.load()) ?? []).map { PairedSender(id: $0.id, name: $0.name) }
        return json(PairingEvent(pending: pending, paired: paired))
    }

    /// The link figures, while a session plays.
    static func linkEvent(_ registry: SessionRegistry) -> String? {
        registry.active?.controller.map { json(LinkEvent(link: $0.statistics)) }
    }

    static func errorFrame(_ message: String) -> String { json(ErrorFrame(message: message)) }

    /// The answer to command `id` (§3): `{"type":"reply","id":7,"ok":true,"result":…}` or with `error` and `message`.
    static func reply(id: Int?, _ reply: ControlReply) -> String {
        var text = "{\"type\":\"reply\",\"id\":\(id.map(String.init) ?? "null"),\"ok\":\(reply.ok)"
        if reply.ok {
            if !reply.text.isEmpty { text += ",\"result\":" + (reply.isJSON ? reply.text : json(reply.text)) }
        } else {
            text += ",\"error\":\(json(reply.kind)),\"message\":\(json(reply.text))"
        }
        return text + "}"
    }
}
