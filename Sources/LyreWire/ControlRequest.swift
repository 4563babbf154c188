/// One request on a receiver's control socket (now-playing.md §5): a line of text, answered by one line,
/// `ok[ PAYLOAD]` or `error KIND: MESSAGE`. `lyre remote` speaks it; so can `socat`.
public enum ControlRequest: Sendable, Equatable {
    case nowPlaying
    case stats
    case command(RemoteCommandEvent)
    /// The receiver's output delay: read it (nil), or set it in ms. Answered by the receiver itself.
    case outputDelay(Int?)
    /// The PIN of the pairing under way (Protocol/pairing.md §4).
    case pairing
    /// The senders this receiver is paired with.
    case paired
    /// Forget a paired sender, by id or name.
    case unpair(String)
    /// The receiver's name: read it (nil), or change it (advertised at once, and kept).
    case name(String?)

    /// Valid output delays, ms (`lyred --output-delay`, streaming.md §6.3).
    public static let outputDelayRange = -500...500

    /// The words `lyre remote` takes, for help and error text.
    public static let usage =
        "play, pause, toggle, next, previous, stop, seek SECONDS, skip ±SECONDS, rate R, volume up|down|DB|mute, "
        + "seek-forward begin|end, seek-backward begin|end, repeat off|one|all, shuffle off|items|collection, now-playing, stats, "
        + "output-delay [MS], name [NAME], pairing, paired, unpair ID"

    /// Parses `words` (the line split by `LineWords`). The error is one line that says what to send instead.
    public init(words: [String]) throws(RemoteCommandError) {
        guard let verb = words.first?.lowercased() else { throw .malformed("empty request; send one of: \(Self.usage)") }
        let argument = words.count > 1 ? words[1] : nil
        func noArgument() throws(RemoteCommandError) {
            guard words.count == 1 else { throw .malformed("'\(verb)' takes no argument") }
        }
        func seconds(_ what: String) throws(RemoteCommandError) -> Double {
            guard words.count == 2, let text = argument, let value = Double(text), value.isFinite else {
                throw .malformed("'\(verb)' needs \(what)")
            }
            return value
        }
        func choice<T: RawRepresentable>(_ type: T.Type, _ options: String) throws(RemoteCommandError) -> T where T.RawValue == String {
            guard words.count == 2, let text = argument, let value = T(rawValue: text.lowercased()) else {
                throw .malformed("'\(verb)' needs one of \(options)")
            }
            return value
        }
        let event: RemoteCommandEvent
        switch verb {
        case "now-playing", "status":
            try noArgument()
            self = .nowPlaying
            return
        case "stats":
            try noArgument()
            self = .stats
            return
        case "output-delay":
            guard words.count <= 2 else { throw .malformed("'output-delay' takes at most one number of milliseconds") }
            guard let text = argument else {
                self = .outputDelay(nil)
                return
            }
            guard let ms = Int(text), Self.outputDelayRange.contains(ms) else {
                throw .malformed("'output-delay' needs whole milliseconds from -500 to 500, e.g. output-delay 40")
            }
            self = .outputDelay(ms)
            return
        case "name":
            guard words.count <= 2 else { throw .malformed("'name' takes one name; quote one with spaces: name \"Living Room\"") }
            guard let name = argument else {
                self = .name(nil)
                return
            }
            guard !name.isEmpty, name.utf8.count <= ServiceName.maximumBytes, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw .malformed("'name' needs 1 to \(ServiceName.maximumBytes) bytes of text without control characters")
            }
            self = .name(name)
            return
        case "pairing":
            try noArgument()
            self = .pairing
            return
        case "paired":
            try noArgument()
            self = .paired
            return
        case "unpair":
            guard words.count >= 2 else { throw .malformed("'unpair' needs a paired sender's id or name (see 'paired')") }
            self = .unpair(words.dropFirst().joined(separator: " "))
            return
        case "play": try noArgument(); event = RemoteCommandEvent(.play)
        case "pause": try noArgument(); event = RemoteCommandEvent(.pause)
        case "toggle": try noArgument(); event = RemoteCommandEvent(.togglePlayPause)
        case "next": try noArgument(); event = RemoteCommandEvent(.nextTrack)
        case "previous": try noArgument(); event = RemoteCommandEvent(.previousTrack)
        case "stop": try noArgument(); event = RemoteCommandEvent(.stop)
        case "seek": event = RemoteCommandEvent(.changePlaybackPosition, position: try seconds("a position in seconds, e.g. seek 90"))
        case "skip":
            let interval = try seconds("a signed number of seconds, e.g. skip +15 or skip -15")
            guard interval != 0 else { throw .malformed("'skip' needs a non-zero number of seconds") }
            event = RemoteCommandEvent(interval > 0 ? .skipForward : .skipBackward, interval: abs(interval))
        case "rate": event = RemoteCommandEvent(.changePlaybackRate, rate: try seconds("a rate, e.g. rate 1.5"))
        case "volume":
            let word = words.count == 2 ? argument!.lowercased() : ""
            switch word {
            case "up": event = RemoteCommandEvent(.volumeUp)
            case "down": event = RemoteCommandEvent(.volumeDown)
            case "mute": event = RemoteCommandEvent(.changeVolume, volume: ReceiverTXT.mutedVolume)
            default:
                guard let db = Double(word), ReceiverTXT.validVolume(db) != nil else {
                    throw .malformed("'volume' needs up, down, mute or a level in dB from -30 to 0, e.g. volume -12.5")
                }
                event = RemoteCommandEvent(.changeVolume, volume: db)
            }
        case "seek-forward", "seek-backward":
            event = RemoteCommandEvent(verb == "seek-forward" ? .seekForward : .seekBackward,
                                       phase: try choice(SeekPhase.self, "begin or end"))
        case "repeat": event = RemoteCommandEvent(.changeRepeatMode, repeatMode: try choice(RepeatMode.self, "off, one or all"))
        case "shuffle": event = RemoteCommandEvent(.changeShuffleMode, shuffleMode: try choice(ShuffleMode.self, "off, items or collection"))
        default:
            throw .unknownCommand(verb)
        }
        try event.validate()
        self = .command(event)
    }

    /// Parses one request line: its words as `LineWords` writes them, so that a name with spaces or quotes
    /// (`unpair "alice@my laptop"`) is one word.
    public init(line: String) throws(RemoteCommandError) {
        let words: [String]
        do { words = try LineWords.split(line) } catch { throw .malformed("\(error)") }
        try self.init(words: words)
    }
}
