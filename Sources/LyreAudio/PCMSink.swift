import LyreClock

/// The receiver's audio output: 48 kHz stereo 16-bit, written block by block by one audio thread.
///
/// A sink is paced like a DAC: `waitForRoom()` blocks until the next block can be written and says when its
/// first frame will leave the output (its presentation time on `HostClock`). Implementations recover from
/// underruns and suspends themselves and count them; they throw only when the device is unusable.
public protocol PCMSink: AnyObject {
    /// Frames per block: the shortest block, for the shortest latencies.
    var blockFrames: Int { get }
    /// The longest block the sink takes now (a multiple of `blockFrames`): a sink paced by the host clock
    /// takes up to 50 ms at once, so that sessions with room to spare wake the audio thread 20 times a
    /// second, not 200. A device with a short buffer takes `blockFrames`.
    var longestBlockFrames: Int { get }
    /// How long a frame spends in the device after `write`, ns: the output latency reported to senders.
    var outputLatency: UInt64 { get }
    /// The mixer control that sets the volume (`setVolume(dB:)`), or nil when the sink has none.
    var volumeControl: String? { get }
    /// Sets the device's volume (dB, RAOP scale: 0 is full, −144 mutes); false when it has no mixer or the
    /// mixer refused, and the caller then scales the samples itself.
    func setVolume(dB: Double) -> Bool
    /// Underruns and suspends recovered so far.
    var recoveries: Int { get }
    /// Where the presentation times `waitForRoom` returned came from, for the log.
    var presentationSource: String { get }
    /// True when presentation times are a sound server's estimate of its own latency (ALSA's `pipewire` PCM),
    /// which can step by milliseconds with nothing heard moving: the playout steers those out rather than
    /// jumping (`Playout.render`, streaming.md §6.1).
    var estimatesPresentation: Bool { get }
    /// Blocks until a block fits and the next frame written would be presented at most `lead` ns from now;
    /// returns that presentation time (`HostClock` ns). A sink whose buffer holds more than `lead` keeps it
    /// filled only that far, so that a session with a short latency is not rendered before its audio comes.
    func waitForRoom(within lead: UInt64) throws(AudioOutputError) -> UInt64
    /// Writes interleaved stereo frames: `blockFrames`, or a multiple of it up to `longestBlockFrames`.
    func write(_ samples: [Int16]) throws(AudioOutputError)
    /// Stops the timeline (a session ended); the next `waitForRoom` starts a new one. Stopped either way; what
    /// went wrong on the way, if anything, is returned for the log.
    @discardableResult
    func stop() -> AudioOutputError?
    /// Releases the device.
    func close()
}

extension PCMSink {
    public var presentationSource: String { "the host clock (the sink paces itself)" }
    public var estimatesPresentation: Bool { false }
    /// Blocks until a block fits, with the whole buffer filled.
    public func waitForRoom() throws(AudioOutputError) -> UInt64 { try waitForRoom(within: .max) }
}

/// The pacing of a sink that has no clock of its own (a WAV file; ALSA's `null` and `file` plugins), as a
/// DAC would pace it: frame n of a timeline is presented at `start + n / 48000 s`, and each block is
/// written `lead` ahead of its presentation time.
struct ClockPacedTimeline {
    /// The longest block such a sink takes at once: 50 ms.
    static let longestBlockFrames = 2400
    /// Nanoseconds per frame: 1e9 / 48000, shortened by the skew of a sink that runs fast.
    private let frameNanoseconds: Double
    private var start: UInt64?
    private var frames: UInt64 = 0

    /// `skewPPM`: how fast the timeline runs against the host clock, as a DAC's crystal does (+150 plays
    /// 48 007.2 frames a host second).
    init(skewPPM: Double = 0) { frameNanoseconds = 1e9 / 48000 / (1 + skewPPM * 1e-6) }

    /// Sleeps until the next block is due, `lead` ahead of its presentation, and returns that presentation
    /// time. The first call after `reset()` starts a timeline `lead` from now.
    mutating func waitForRoom(lead: UInt64) -> UInt64 {
        if start == nil {
            start = HostClock.now() + lead
            frames = 0
        }
        let presentation = start! + UInt64((Double(frames) * frameNanoseconds).rounded())
        HostClock.sleep(until: presentation - lead)
        return presentation
    }

    mutating func advance(frames written: Int) { frames += UInt64(written) }

    /// Ends the timeline (output stopped).
    mutating func reset() { start = nil }
}

/// Why the output cannot play.
public struct AudioOutputError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What `--output` names: an ALSA PCM, or `wav:PATH`.
public enum OutputTarget: Sendable, Equatable, CustomStringConvertible {
    case alsa(pcm: String)
    /// A WAV file paced like a DAC that runs `skewPPM` fast.
    case wav(path: String, skewPPM: Double)

    public init(_ text: String, skewPPM: Double = 0) {
        if text.hasPrefix("wav:") { self = .wav(path: String(text.dropFirst(4)), skewPPM: skewPPM) } else { self = .alsa(pcm: text) }
    }

    public var description: String {
        switch self {
        case .alsa(let pcm): "ALSA \(pcm)"
        case .wav(let path, let skew): "WAV \(path)" + (skew != 0 ? " (\(skew) ppm)" : "")
        }
    }

    /// Opens the sink, with the mixer control `volumeControl` names (a WAV file has none). An ALSA PCM that is
    /// PulseAudio's `pulse` plugin is played to through libpulse instead (`PulseOutput`), on the sink the plugin
    /// would play to: the plugin's presentation times were late by its first buffer for seconds.
    public func open(volumeControl: VolumeControl = .auto) throws(AudioOutputError) -> any PCMSink {
        switch self {
        case .alsa(let pcm) where ALSAOutput.definedType(pcm) == "pulse":
            try PulseOutput(sink: nil, name: "ALSA PCM \(pcm) (PulseAudio)", volumeControl: volumeControl)
        case .alsa(let pcm): try ALSAOutput(pcm: pcm, volumeControl: volumeControl)
        case .wav(let path, let skew): try WAVFileOutput(path: path, skewPPM: skew)
        }
    }
}
