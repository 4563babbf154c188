/// A command a receiver relays to its sender, as `MPRemoteCommandCenter` names them on iOS, plus the
/// volume steps the sender owns (now-playing.md §4).
public enum RemoteCommand: String, Sendable, CaseIterable, Hashable, Codable {
    case play, pause, stop, togglePlayPause, nextTrack, previousTrack
    case skipForward, skipBackward, seekForward, seekBackward
    case changePlaybackPosition, changePlaybackRate, changeRepeatMode, changeShuffleMode
    case volumeUp, volumeDown
    /// Set the volume to `volume` dB (a receiver's slider; AirPlay's `dmcp.device-volume`).
    case changeVolume
}

/// `seekForward` / `seekBackward` start when the button goes down and end when it comes up.
public enum SeekPhase: String, Sendable, Codable { case begin, end }

public enum RepeatMode: String, Sendable, Codable, CaseIterable { case off, one, all }

public enum ShuffleMode: String, Sendable, Codable, CaseIterable { case off, items, collection }

/// One command with its argument (`MPRemoteCommandEvent` and its subclasses).
public struct RemoteCommandEvent: Sendable, Equatable {
    public var command: RemoteCommand
    /// Seconds, for `skipForward` / `skipBackward`.
    public var interval: Double?
    /// Seconds into the item, for `changePlaybackPosition`.
    public var position: Double?
    /// For `changePlaybackRate`.
    public var rate: Double?
    public var phase: SeekPhase?
    public var repeatMode: RepeatMode?
    public var shuffleMode: ShuffleMode?
    /// dB, for `changeVolume`: −30…0, or −144 for mute.
    public var volume: Double?

    public init(_ command: RemoteCommand, interval: Double? = nil, position: Double? = nil, rate: Double? = nil,
                phase: SeekPhase? = nil, repeatMode: RepeatMode? = nil, shuffleMode: ShuffleMode? = nil, volume: Double? = nil) {
        self.command = command
        self.volume = volume
        self.interval = interval
        self.position = position
        self.rate = rate
        self.phase = phase
        self.repeatMode = repeatMode
        self.shuffleMode = shuffleMode
    }

    /// The `text/parameters` body of the receiver's `SET_PARAMETER`.
    public var parameters: TextParameters {
        var entries = [("remote-command", command.rawValue)]
        if let interval { entries.append(("interval", Self.number(interval))) }
        if let position { entries.append(("position", Self.number(position))) }
        if let rate { entries.append(("rate", Self.number(rate))) }
        if let phase { entries.append(("phase", phase.rawValue)) }
        if let repeatMode { entries.append(("repeat-mode", repeatMode.rawValue)) }
        if let shuffleMode { entries.append(("shuffle-mode", shuffleMode.rawValue)) }
        if let volume { entries.append(("volume", Self.number(volume))) }
        return TextParameters(entries)
    }

    /// Parses and checks a command: the name is known and the argument it needs is there and in range.
    public init(parsing parameters: TextParameters) throws(RemoteCommandError) {
        guard let name = parameters["remote-command"] else { throw .malformed("no remote-command") }
        guard let command = RemoteCommand(rawValue: name) else { throw .unknownCommand(name) }
        self.init(command)
        func number(_ key: String) throws(RemoteCommandError) -> Double? {
            guard let text = parameters[key] else { return nil }
            guard let value = Double(text), value.isFinite else { throw .malformed("\(key) must be a number") }
            return value
        }
        interval = try number("interval")
        position = try number("position")
        rate = try number("rate")
        volume = try number("volume")
        if let text = parameters["phase"] { guard let p = SeekPhase(rawValue: text) else { throw .malformed("phase must be begin or end") }; phase = p }
        if let text = parameters["repeat-mode"] {
            guard let m = RepeatMode(rawValue: text) else { throw .malformed("repeat-mode must be off, one or all") }
            repeatMode = m
        }
        if let text = parameters["shuffle-mode"] {
            guard let m = ShuffleMode(rawValue: text) else { throw .malformed("shuffle-mode must be off, items or collection") }
            shuffleMode = m
        }
        try validate()
    }

    /// The argument each command needs (now-playing.md §4).
    public func validate() throws(RemoteCommandError) {
        switch command {
        case .skipForward, .skipBackward:
            guard let interval, interval > 0, interval <= 3600 else { throw .malformed("\(command.rawValue) needs an interval of 0 to 3600 s") }
        case .changePlaybackPosition:
            guard let position, position >= 0 else { throw .malformed("changePlaybackPosition needs a position ≥ 0 s") }
        case .changePlaybackRate:
            guard let rate, rate > 0, rate <= 32 else { throw .malformed("changePlaybackRate needs a rate above 0 and at most 32") }
        case .seekForward, .seekBackward:
            guard phase != nil else { throw .malformed("\(command.rawValue) needs a phase, begin or end") }
        case .changeRepeatMode:
            guard repeatMode != nil else { throw .malformed("changeRepeatMode needs a repeat-mode") }
        case .changeShuffleMode:
            guard shuffleMode != nil else { throw .malformed("changeShuffleMode needs a shuffle-mode") }
        case .changeVolume:
            guard let volume, ReceiverTXT.validVolume(volume) != nil else {
                throw .malformed("changeVolume needs a volume of -30 to 0 dB, or -144 for mute")
            }
        default: break
        }
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// What a command's handler answered (`MPRemoteCommandHandlerStatus`), carried back in the
/// `Lyre-Command-Status` header with the matching RTSP status.
public enum RemoteCommandStatus: String, Sendable, Equatable, CaseIterable {
    case success
    case noSuchContent
    case commandFailed
    /// The sender has the command disabled (or no handler for it).
    case disabled

    public var rtspStatus: Int {
        switch self {
        case .success: 200
        case .noSuchContent: 404
        case .commandFailed: 500
        case .disabled: 403
        }
    }
}

/// Why a command or an enabled-commands list was refused.
public enum RemoteCommandError: Error, Equatable, Sendable, CustomStringConvertible {
    case unknownCommand(String)
    case malformed(String)

    public var description: String {
        switch self {
        case .unknownCommand(let name):
            "unknown command '\(String(decoding: name.utf8.prefix(64), as: UTF8.self))'; known: \(RemoteCommand.allCases.map(\.rawValue).joined(separator: ", "))"
        case .malformed(let why): why
        }
    }
}

/// The commands a sender has enabled, sent as `remote-commands: a,b,c` in a `text/parameters` body.
public struct EnabledCommands: Sendable, Equatable {
    public var commands: Set<RemoteCommand>
    /// The skip interval the sender prefers, seconds (`preferredIntervals` on iOS).
    public var skipInterval: Double?

    public init(_ commands: Set<RemoteCommand>, skipInterval: Double? = nil) {
        self.commands = commands
        self.skipInterval = skipInterval
    }

    public var parameters: TextParameters {
        var entries = [("remote-commands", RemoteCommand.allCases.filter(commands.contains).map(\.rawValue).joined(separator: ","))]
        if let skipInterval { entries.append(("skip-interval", RemoteCommandEvent.number(skipInterval))) }
        return TextParameters(entries)
    }

    /// From the `remote-commands` value; an unknown name is an error, so a typo is not silently ignored.
    public init(list: String, skipInterval: String?) throws(RemoteCommandError) {
        var commands = Set<RemoteCommand>()
        for name in list.split(separator: ",").map({ String($0).trimmingSpaces }) where !name.isEmpty {
            guard let command = RemoteCommand(rawValue: name) else { throw .unknownCommand(name) }
            commands.insert(command)
        }
        var interval: Double?
        if let skipInterval {
            guard let value = Double(skipInterval), value > 0, value <= 3600 else { throw .malformed("skip-interval must be 0 to 3600 s") }
            interval = value
        }
        self.init(commands, skipInterval: interval)
    }
}
