import Foundation
import LyreAudio
import LyreClock
import NIOConcurrencyHelpers

/// The app's audio session, as `AVAudioSession` on iOS: its category says where the app's audio goes.
///
/// - `.playback`: the app's main audio (music, podcasts, video sound). It is routed to the chosen Lyre
///   receiver through a `StreamSession`.
/// - `.ambient` and `.soloAmbient`: audio that belongs to this machine (game sounds, previews). It plays on
///   the local output.
///
/// System sounds (`SystemSound`: alerts, clicks) are never part of a session. They always play on the
/// local output, whatever the category and whatever is streaming.
///
/// `@unchecked Sendable`: the state is behind `lock`.
public final class AudioSession: @unchecked Sendable {
    public enum Category: String, Sendable, CaseIterable {
        case playback, ambient, soloAmbient
    }

    public static let shared = AudioSession()

    private let lock = NIOLock()
    private var currentCategory: Category = .soloAmbient
    private var preferred: String?
    private var local: OutputTarget

    init() {
        let environment = ProcessInfo.processInfo.environment
        local = OutputTarget(environment["LYRE_LOCAL_OUTPUT"] ?? "default")
    }

    public var category: Category { lock.withLock { currentCategory } }

    public func setCategory(_ category: Category) { lock.withLock { currentCategory = category } }

    /// Whether the app's audio goes to a receiver (`.playback`) or stays on this machine.
    public var routesToReceiver: Bool { category == .playback }

    /// The receiver to use, by id or name (`setPreferredInput` / AirPlay route picker on iOS).
    public var preferredOutput: String? { lock.withLock { preferred } }

    public func setPreferredOutput(_ idOrName: String?) { lock.withLock { preferred = idOrName } }

    /// The local output, for system sounds and the local categories: an ALSA PCM (default `default`), or
    /// what `LYRE_LOCAL_OUTPUT` names (`wav:PATH` too).
    public var localOutput: OutputTarget {
        get { lock.withLock { local } }
        set { lock.withLock { local = newValue } }
    }
}

/// Short sounds for the user interface, as `AudioServicesPlaySystemSound` on iOS. They always play on the
/// local output (`AudioSession.localOutput`) and are never sent to a receiver, even while the app streams.
public enum SystemSound {
    /// Plays a sound file (anything FFmpeg's libraries read) on the local output; returns when it has played.
    public static func play(path: String, session: AudioSession = .shared) throws {
        var source = try StereoReader(AudioFileReader(path: path))
        let sink = try session.localOutput.open()
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
