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
    /// Blocks until a block fits; returns the presentation time (`HostClock` ns) of the next frame written.
    func waitForRoom() throws(AudioOutputError) -> UInt64
    /// Writes interleaved stereo frames: `blockFrames`, or a multiple of it up to `longestBlockFrames`.
    func write(_ samples: [Int16]) throws(AudioOutputError)
    /// Stops the timeline (a session ended); the next `waitForRoom` starts a new one.
    func stop()
    /// Releases the device.
    func close()
}

/// Why the output cannot play.
public struct AudioOutputError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What `--output` names: an ALSA PCM, or `wav:PATH`.
public enum OutputTarget: Sendable, Equatable, CustomStringConvertible {
    case alsa(pcm: String)
    case wav(path: String)

    public init(_ text: String) {
        if text.hasPrefix("wav:") { self = .wav(path: String(text.dropFirst(4))) } else { self = .alsa(pcm: text) }
    }

    public var description: String {
        switch self {
        case .alsa(let pcm): "ALSA \(pcm)"
        case .wav(let path): "WAV \(path)"
        }
    }

    /// Opens the sink.
    public func open() throws(AudioOutputError) -> any PCMSink {
        switch self {
        case .alsa(let pcm): try ALSAOutput(pcm: pcm)
        case .wav(let path): try WAVFileOutput(path: path)
        }
    }
}
