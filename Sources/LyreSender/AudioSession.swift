import LyreAudio
import LyreClock
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The app's audio session, as `AVAudioSession` on iOS: its category, mode and options say where the app's
/// audio goes (`AudioRouting`).
///
/// System sounds (`SystemSound`: alerts, clicks) are never part of a session. They always play on the
/// local output, whatever the category and whatever is streaming.
///
/// `@unchecked Sendable`: the state is behind `lock`.
public final class AudioSession: @unchecked Sendable {
    public enum Category: String, Sendable, CaseIterable {
        /// The app's main audio (music, podcasts, video sound): to the chosen receivers.
        case playback
        /// A voice or recording app: stays on this machine unless `allowLyre`.
        case playAndRecord
        /// Audio that belongs to this machine (game sounds, previews); on iOS it mixes with other apps'.
        case ambient
        /// As `ambient`, and on iOS alone: the default, as there. Both play on the local output.
        case soloAmbient
    }

    public enum Mode: String, Sendable, CaseIterable {
        case `default`
        /// Podcasts and audio books: what another app's `interruptSpokenAudioAndMixWithOthers` pauses on a
        /// receiver while it plays (`StreamConfiguration.take(_:)`, streaming.md §7).
        case spokenAudio
        /// A call: `playAndRecord` only.
        case voiceChat
    }

    /// How the app's audio meets what already plays, and where a `playAndRecord` app may go.
    public struct CategoryOptions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Asks to play over what the receiver plays instead of taking it over (`StreamConfiguration.mixing(for:)`,
        /// streaming.md §7).
        public static let mixWithOthers = CategoryOptions(rawValue: 1 << 0)
        /// As `mixWithOthers`, and asks that what else plays be lowered while this plays (implies `mixWithOthers`).
        public static let duckOthers = CategoryOptions(rawValue: 1 << 1)
        /// Pauses spoken audio (a podcast) on the receiver while this plays and mixes with the rest (implies
        /// `mixWithOthers`); the podcast plays on when this ends.
        public static let interruptSpokenAudioAndMixWithOthers = CategoryOptions(rawValue: 1 << 2)
        /// A `playAndRecord` app may play on a receiver (iOS's allow-AirPlay and allow-Bluetooth-A2DP).
        public static let allowLyre = CategoryOptions(rawValue: 1 << 3)
        /// A `playAndRecord` app with no receiver plays on the local output rather than the voice output
        /// (iOS's speaker rather than its earpiece).
        public static let defaultToSpeaker = CategoryOptions(rawValue: 1 << 4)

        static let mixing: CategoryOptions = [.mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers]
    }

    public static let shared = AudioSession()

    private let lock = Mutex<Void>(())
    private var setting = AudioRouting.Setting(category: .soloAmbient, mode: .default, options: [])
    private var preferred: String?
    private var local: OutputTarget
    private var voice: OutputTarget?
    private var observers: [Int: @Sendable (OutputRouteChangeReason) -> Void] = [:]
    private var nextObserver = 0

    init() {
        let environment = ProcessInfo.processInfo.environment
        local = OutputTarget(environment["LYRE_LOCAL_OUTPUT"] ?? "default")
        voice = environment["LYRE_VOICE_OUTPUT"].map { OutputTarget($0) }
    }

    public var category: Category { lock.withLock { _ in setting.category } }
    public var mode: Mode { lock.withLock { _ in setting.mode } }
    /// The options as set, with what they imply (`duckOthers` sets `mixWithOthers`).
    public var categoryOptions: CategoryOptions { lock.withLock { _ in setting.options } }

    /// Sets the category, mode and options; an invalid combination is refused (`AudioRouting.validate`)
    /// and changes nothing. When the change moves the app's audio, with a receiver chosen or without,
    /// observers hear `.categoryChange`.
    public func setCategory(_ category: Category, mode: Mode = .default, options: CategoryOptions = []) throws {
        let options = try AudioRouting.validate(category: category, mode: mode, options: options)
        let notify: [@Sendable (OutputRouteChangeReason) -> Void] = lock.withLock { _ in
            let before = [true, false].map { AudioRouting.destination(setting, receiverChosen: $0) }
            setting = AudioRouting.Setting(category: category, mode: mode, options: options)
            let after = [true, false].map { AudioRouting.destination(setting, receiverChosen: $0) }
            return after == before ? [] : Array(observers.values)
        }
        for observer in notify { observer(.categoryChange) }
    }

    /// Where the app's audio goes now, with a receiver chosen or not (`AudioRouting.destination`).
    public func destination(receiverChosen: Bool) -> AudioRouting.Destination {
        lock.withLock { _ in AudioRouting.destination(setting, receiverChosen: receiverChosen) }
    }

    /// Calls `handler` (on the thread that set the category) each time a category change moves the app's
    /// audio, until `cancelObservation` is called with what this returns (a change already being told may
    /// still reach it once).
    public func observeRouteChange(_ handler: @escaping @Sendable (OutputRouteChangeReason) -> Void) -> Int {
        lock.withLock { _ in
            defer { nextObserver += 1 }
            observers[nextObserver] = handler
            return nextObserver
        }
    }

    public func cancelObservation(_ id: Int) { _ = lock.withLock { _ in observers.removeValue(forKey: id) } }

    /// The receiver to use, by id or name (`setPreferredInput` / AirPlay route picker on iOS).
    public var preferredOutput: String? { lock.withLock { _ in preferred } }

    public func setPreferredOutput(_ idOrName: String?) { lock.withLock { _ in preferred = idOrName } }

    /// The local output, for system sounds and the local categories: an ALSA PCM (default `default`), or
    /// what `LYRE_LOCAL_OUTPUT` names (`wav:PATH` too).
    public var localOutput: OutputTarget {
        get { lock.withLock { _ in local } }
        set { lock.withLock { _ in local = newValue } }
    }

    /// The voice output (a headset; iOS's earpiece), where a `playAndRecord` app without
    /// `defaultToSpeaker` plays when it stays on this machine: what `LYRE_VOICE_OUTPUT` names, else the
    /// local output.
    public var voiceOutput: OutputTarget {
        get { lock.withLock { _ in voice ?? local } }
        set { lock.withLock { _ in voice = newValue } }
    }

    /// The output a local destination plays on; nil for `.receivers`.
    public func output(for destination: AudioRouting.Destination) -> OutputTarget? {
        switch destination {
        case .receivers: nil
        case .localOutput: localOutput
        case .voiceOutput: voiceOutput
        }
    }
}

/// Where an app's audio goes, decided in one place from its category, mode and options, as iOS decides
/// it from an `AVAudioSession`'s. Pure: unit-tested as a table (`AudioRoutingTests`).
public enum AudioRouting {
    public struct Setting: Sendable, Equatable {
        public var category: AudioSession.Category
        public var mode: AudioSession.Mode
        public var options: AudioSession.CategoryOptions
    }

    public enum Destination: Sendable, Equatable {
        /// The receivers the app chose.
        case receivers
        /// This machine's output (`AudioSession.localOutput`).
        case localOutput
        /// This machine's voice output (`AudioSession.voiceOutput`).
        case voiceOutput
    }

    /// A category, mode and options that do not go together, refused as iOS refuses them.
    public struct InvalidSetting: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The options with what they imply, or why the combination is refused:
    /// - `mixWithOthers`, `duckOthers` and `interruptSpokenAudioAndMixWithOthers` are for `playback` and
    ///   `playAndRecord` (`ambient` always mixes, `soloAmbient` never does); the last two set `mixWithOthers`;
    /// - `allowLyre` and `defaultToSpeaker` are for `playAndRecord` (`playback` always goes to a receiver);
    /// - the `voiceChat` mode is for `playAndRecord`, `spokenAudio` for `playback` and `playAndRecord`.
    public static func validate(category: AudioSession.Category, mode: AudioSession.Mode,
                                options: AudioSession.CategoryOptions) throws(InvalidSetting) -> AudioSession.CategoryOptions {
        let mixes = category == .playback || category == .playAndRecord
        if !mixes, !options.isDisjoint(with: AudioSession.CategoryOptions.mixing) {
            throw InvalidSetting(description: "\(category.rawValue) cannot take mixWithOthers, duckOthers or interruptSpokenAudioAndMixWithOthers: they are for playback and playAndRecord")
        }
        if category != .playAndRecord, !options.isDisjoint(with: [.allowLyre, .defaultToSpeaker]) {
            throw InvalidSetting(description: "\(category.rawValue) cannot take allowLyre or defaultToSpeaker: they are for playAndRecord")
        }
        switch mode {
        case .default: break
        case .voiceChat where category != .playAndRecord:
            throw InvalidSetting(description: "the voiceChat mode is for playAndRecord, not \(category.rawValue)")
        case .spokenAudio where !mixes:
            throw InvalidSetting(description: "the spokenAudio mode is for playback and playAndRecord, not \(category.rawValue)")
        case .voiceChat, .spokenAudio: break
        }
        var options = options
        if !options.isDisjoint(with: [.duckOthers, .interruptSpokenAudioAndMixWithOthers]) { options.insert(.mixWithOthers) }
        return options
    }

    /// Where the app's audio goes:
    /// - `playback`: to the chosen receivers, or the local output when none is chosen;
    /// - `playAndRecord`: to the chosen receivers only with `allowLyre`; otherwise on this machine, the
    ///   local output with `defaultToSpeaker`, else the voice output;
    /// - `ambient` and `soloAmbient`: the local output, always.
    ///
    /// System sounds are not an app's audio: they always play on the local output (`SystemSound`).
    public static func destination(_ setting: Setting, receiverChosen: Bool) -> Destination {
        switch setting.category {
        case .playback:
            receiverChosen ? .receivers : .localOutput
        case .playAndRecord:
            if receiverChosen, setting.options.contains(.allowLyre) { .receivers }
            else if setting.options.contains(.defaultToSpeaker) { .localOutput }
            else { .voiceOutput }
        case .ambient, .soloAmbient:
            .localOutput
        }
    }
}

/// Short sounds for the user interface, as `AudioServicesPlaySystemSound` on iOS. They always play on the
/// local output (`AudioSession.localOutput`) and are never sent to a receiver, even while the app streams.
public enum SystemSound {
    /// Plays a sound file (anything FFmpeg's libraries read) on the local output; returns when it has played.
    public static func play(path: String, session: AudioSession = .shared) throws {
        try LocalPlayback.play(path: path, on: session.localOutput)
    }
}

/// Audio that stays on this machine: system sounds, and an app's audio when its category keeps it local.
public enum LocalPlayback {
    /// Plays a sound file (anything FFmpeg's libraries read) on `output`; returns when it has played.
    public static func play(path: String, on output: OutputTarget) throws {
        var source = try StereoReader(AudioFileReader(path: path))
        let sink = try output.open()
        defer {
            sink.stop()
            sink.close()
        }
        var pending: [Float] = []
        var finished = false
        while !finished {
            pending += source.read()
            finished = source.isAtEnd
            let block = sink.blockFrames * 2
            while pending.count >= block || (finished && !pending.isEmpty) {
                var samples = pending.prefix(block).map { Int16(clamping: Int(($0 * 32767).rounded())) }
                pending.removeFirst(min(block, pending.count))
                if samples.count < block { samples += [Int16](repeating: 0, count: block - samples.count) }
                _ = try sink.waitForRoom()
                try sink.write(samples)
            }
        }
        // Let the device play out what it holds.
        HostClock.sleep(until: HostClock.now() + sink.outputLatency)
    }
}
