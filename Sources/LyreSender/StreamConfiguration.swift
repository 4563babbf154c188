import LyreWire

/// How a sender streams (streaming.md §3).
public struct StreamConfiguration: Sendable {
    /// Target latency, ms (`SessionLatency.milliseconds`: 10…2000).
    public var latencyMilliseconds = 250
    /// Opus bitrate, bits per second.
    public var bitrate = 128_000
    /// Opus frame, ms: one of `frameChoices`.
    public var frameMilliseconds = 20

    /// The Opus frames a sender sends, ms. (5 ms frames are encoded with libopus's restricted low delay:
    /// `FrameEncoder`.)
    public static let frameChoices = [5, 10, 20]
    /// `frameChoices` as help and errors list them: "5, 10, 20".
    public static var frameChoicesListed: String { frameChoices.map(String.init).joined(separator: ", ") }

    /// The frame a sender picks when not told (streaming.md §4.3): 10 ms under 50 ms of latency, where an FEC
    /// row of 20 ms frames completes too late to rebuild a lost packet in time, and 5 ms under 20 ms, where a
    /// row of two 10 ms frames would: its parity goes 10 ms after the row's first packet, which at 10 ms of
    /// latency (sent 5 ms ahead) is 5 ms before that packet plays, after the receiver rendered it. Else 20 ms.
    public static func defaultFrameMilliseconds(latency: Int) -> Int { latency < 20 ? 5 : latency < 50 ? 10 : 20 }
    /// Shown by the receiver while it plays.
    public var senderName = "Lyre"
    public var senderID: String?
    /// The sender's key and pairings: paired receivers are played over TLS pinned to their keys
    /// (Protocol/pairing.md §6); nil plays every receiver in plain RTSP.
    public var security: SenderSecurity?
    /// Packet-level FEC (streaming.md §4.3).
    public var fec = FECMode.auto
    /// Resends lost packets when a receiver asks (streaming.md §4.1).
    public var resend = true
    /// How long to wait for each receiver's TCP connection, ms.
    public var connectTimeoutMilliseconds = 5000
    /// When the last room goes away by itself (not taken over, not removed), the playback is paused instead
    /// of ended, as an iOS app pauses when its route goes: what no room played is taken back, and
    /// ``StreamSession/addRoute(_:)`` then ``StreamSession/start(startDelay:backdate:)`` carry on from there
    /// (issue 27: the room's return resumes it). The route change is reported as when it ends.
    public var waitsForLostRooms = false
    /// How the playback meets a session a receiver already plays (streaming.md §7): nil takes it over;
    /// `.mix` or `.duck` asks to play over it, which a receiver that cannot mix refuses rather than take it
    /// over. `mixing(for:)` is an app's options in these words.
    public var mixing: MixRequest?
    /// With `.duck`: how far to lower what plays, dB (`MixRequest.duckDepthRange`); nil leaves it to the
    /// receiver's own depth (`lyred --duck-db`).
    public var duckDB: Double?
    /// What the playback is (`Lyre-Mode`): `.spokenAudio` (a podcast, an audio book) is paused, not played over,
    /// by an announcement that interrupts spoken audio, and plays on when it ends (streaming.md §7).
    public var mode: AudioSession.Mode = .default
    /// With `mixing`: a receiver playing spoken audio pauses it for as long as this plays (`Lyre-Interrupt`,
    /// an app's `interruptSpokenAudioAndMixWithOthers`), and mixes or ducks anything else as `mixing` says.
    public var interruptsSpokenAudio = false

    public init() {}

    /// What an app's audio session asks of the receivers: its mode, how it meets what plays (`mixing(for:)`),
    /// and whether it interrupts spoken audio.
    public mutating func take(_ session: AudioSession) {
        let options = session.categoryOptions
        mode = session.mode
        mixing = Self.mixing(for: options)
        interruptsSpokenAudio = options.contains(.interruptSpokenAudioAndMixWithOthers)
    }

    /// What an app's category options ask of a receiver: `duckOthers` ducks, `mixWithOthers` mixes.
    public static func mixing(for options: AudioSession.CategoryOptions) -> MixRequest? {
        if options.contains(.duckOthers) { return .duck }
        if options.contains(.mixWithOthers) { return .mix }
        return nil
    }

    /// How a sender sends FEC: not at all, when the latency is too short for a resend, or always with one
    /// parity packet per `row` media packets (2…15).
    public enum FECMode: Sendable, Equatable {
        case off, auto
        case row(Int)
    }

    /// Under this latency (ms) `auto` sends FEC: a lost packet asked for again would come too late, or only
    /// just in time, on anything but a quiet network.
    public static let fecLatencyThreshold = 100

    /// Media packets per parity packet, or nil for no FEC. `auto` picks the longest row whose packets all
    /// come within half of what the latency and the send-ahead leave (the rest is for the network and the
    /// output), at least 2 and at most 10.
    public var fecRow: Int? {
        switch fec {
        case .off: return nil
        case .row(let row): return row
        case .auto:
            guard latencyMilliseconds < Self.fecLatencyThreshold else { return nil }
            let window = latencyMilliseconds + leadMilliseconds
            return max(2, min(10, window / (2 * frameMilliseconds)))
        }
    }

    /// How far ahead of its due time the sender sends each frame, ms: half the latency, at most 100 ms,
    /// unless `liveLeadMilliseconds` says otherwise.
    public var leadMilliseconds: Int { liveLeadMilliseconds ?? min(latencyMilliseconds / 2, 100) }

    /// For a live source (`lyre sink`), whose audio cannot be sent before it is recorded: the lead then adds
    /// to its delay, so it is kept short, or 0 (each packet sent when it is due).
    public var liveLeadMilliseconds: Int?

    /// How long past its send time a live source's slot waits for audio that is late, ms: half the latency.
    /// A live source always has audio (a monitor records silence too), so a queue that runs dry means its
    /// capture ran late (a loaded machine), not that it stopped: the frame is sent when its audio comes, still
    /// half a latency before it plays, instead of its slot passing empty and the rest of the stream playing a
    /// frame later. 0 for other sources, whose audio running dry is the app's pause (the slot passes).
    public var lateAudioWaitMilliseconds: Int { liveLeadMilliseconds == nil ? 0 : latencyMilliseconds / 2 }
}
