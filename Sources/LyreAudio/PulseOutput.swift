import CPulseShim
import LyreClock
import LyreWire

/// A playback stream on PulseAudio (or PipeWire through pipewire-pulse), through libpulse: what lyred plays
/// to where ALSA's PCM is PulseAudio's `pulse` plugin (`OutputTarget.open`).
///
/// Through that plugin, presentation times were libpulse's estimate of the stream's latency, interpolated
/// between the server's answers: on a stream that sat idle it left out the first 20 ms buffer written for 2 to
/// 3 s, so that a room was heard 20 ms late and then steered back at 1000 ppm for 20 s. Here they are the
/// server's own timing of the stream (`pa_timing_info`): the frame it reads next is heard its sink's latency
/// after it measured, and the next frame written `(written − read)` frames after that. That was right from the
/// first block and steady within 0.1 ms on the test network's null sink, so it is taken as a device's
/// timestamps are: a step in it is the output moving, and is jumped (`estimatesPresentation` is false).
///
/// Like the `pulse` PCM it holds 20 ms, starts once a block is written, and is corked between sessions (a null
/// sink left with no stream renders 2 s ahead). The volume is the sink's, as the plugin's `Master` control
/// sets it.
public final class PulseOutput: PCMSink {
    public let blockFrames = 240
    public var longestBlockFrames: Int { blockFrames }
    public let outputLatency = UInt64(PulseOutput.bufferFrames) * 1_000_000_000 / 48000
    public private(set) var recoveries = 0
    /// The server's timing of its own stream is what a device's timestamps are: a step in it is the output
    /// moving (the stream ran dry and started again later), and is jumped, not steered over seconds.
    public let estimatesPresentation = false
    public var presentationSource: String { "PulseAudio's timing of the stream (\(answers) answers)" }
    public let volumeControl: String?

    static let bufferFrames = 960
    private static let bytesPerFrame = 4
    /// How old the timing may get before the server is asked again: 10 answers a second, where one per block
    /// would be 200. (Between answers the stream plays at its rate, so the time it gave stays true.)
    private static let refreshNanoseconds: Int64 = 100_000_000

    private let player: OpaquePointer
    private let name: String
    /// Bytes written since the stream was made: the server's write index.
    private var written: Int64 = 0
    private var timing = LyrePulseTiming()
    /// `timing` was taken since the stream last started (not corked, not run dry since).
    private var current = false
    private var underflows: UInt32 = 0
    private var corked = false
    private var answers = 0
    /// The server's answers wander by up to 0.1 ms from one to the next, more than the 2 samples the playout
    /// stays in tune within: made steady as a sound server's estimate is, and started again where the stream is.
    private var steady = SteadyEstimate()
    private lazy var silence = [Int16](repeating: 0, count: Self.bufferFrames * 2)

    /// A stream on `sink` (nil: the server's default), as `name` in the log. Volume as `volumeControl` says: the
    /// sink's (`Master`, as ALSA's pulse control calls it), or none.
    public init(sink: String?, name: String, volumeControl: VolumeControl = .auto) throws(AudioOutputError) {
        switch volumeControl.mixerControl {
        case .none: self.volumeControl = nil
        case .some(let control):
            guard control == nil || control == "Master" else {
                throw AudioOutputError("\(name) has no playback volume control '\(control!)' (it has 'Master', the sink's volume); set volume-control to mixer:Master, auto or software")
            }
            self.volumeControl = "Master"
        }
        var error = [CChar](repeating: 0, count: 256)
        guard let player = lyre_pulse_player_new("lyred", "lyred", sink, UInt32(Self.bufferFrames * Self.bytesPerFrame),
                                                 UInt32(blockFrames * Self.bytesPerFrame), &error, error.count)
        else { throw AudioOutputError("cannot open \(name): \(String(nulTerminated: error))") }
        self.player = player
        self.name = name
    }

    public func setVolume(dB: Double) -> Bool {
        volumeControl != nil && lyre_pulse_set_sink_volume(lyre_pulse_player_connection(player), lyre_pulse_player_sink(player), dB) == 0
    }

    private func check(_ status: Int32, _ what: String) throws(AudioOutputError) {
        if status != 0 { throw AudioOutputError("\(name): \(what): \(String(cString: lyre_pulse_strerror(status)))") }
    }

    /// Waits for a block's room; then, when the next frame would be presented more than `lead` from now, until
    /// the stream has played down to `lead` (as `ALSAOutput` does). A stream that is not playing (new, corked
    /// after a session, or run dry) is started on silence, and the server asked where it is until it plays.
    /// The next frame written is heard `(written − read index)` frames after the frame the server reads next.
    public func waitForRoom(within lead: UInt64) throws(AudioOutputError) -> UInt64 {
        if corked {
            try check(lyre_pulse_player_cork(player, 0), "cannot resume the stream")
            corked = false
        }
        while true {
            var writable = 0
            var ranDry: UInt32 = 0
            try check(lyre_pulse_player_wait_writable(player, blockFrames * Self.bytesPerFrame, &writable, &ranDry), "the stream failed")
            if ranDry != underflows {
                underflows = ranDry
                recoveries += 1
                steady.reset()
                current = false
            }
            let now = HostClock.now()
            // An answer older than two refreshes: lyred was held up (stopped, starved of CPU), and the stream
            // may have run dry with the news of it not read yet. The server is asked before anything is written.
            if current, Int64(now) - timing.taken_ns > 2 * Self.refreshNanoseconds {
                current = false
                try ask(.init(LYRE_PULSE_TIMING_WAIT.rawValue))
                continue
            }
            if !current {
                // Silence before the session's first frame, until the server says the stream plays: what is
                // returned is then its timing, never a guess that would have to be steered out later.
                try write(Array(silence.prefix(writable / Self.bytesPerFrame / blockFrames * blockFrames * 2)))
                try ask(.init(LYRE_PULSE_TIMING_WAIT.rawValue))
                continue
            }
            if Int64(now) - timing.taken_ns > Self.refreshNanoseconds { try ask(.init(LYRE_PULSE_TIMING_ASK.rawValue)) }
            let presentation = UInt64(max(timing.heard_ns + (written - timing.read_index) / Int64(Self.bytesPerFrame) * 1_000_000_000 / 48000, 0))
            let buffered = Self.bufferFrames - writable / Self.bytesPerFrame
            guard lead < outputLatency, presentation > now + lead, buffered > 2 * blockFrames else { return steady.presentation(estimate: presentation) }
            HostClock.sleep(until: min(presentation - lead, now + outputLatency))
        }
    }

    /// Takes the server's latest timing when it is of the stream playing; `current` says whether it is.
    private func ask(_ request: LyrePulseTimingRequest) throws(AudioOutputError) {
        var answer = LyrePulseTiming()
        try check(lyre_pulse_player_timing(player, request, &answer), "no timing from the server")
        guard answer.usable != 0, answer.underflows == underflows else { return }
        if answer.taken_ns != timing.taken_ns { answers += 1 }
        timing = answer
        current = true
    }

    public func write(_ samples: [Int16]) throws(AudioOutputError) {
        let bytes = samples.count * 2
        try check(samples.withUnsafeBytes { lyre_pulse_player_write(player, $0.baseAddress, bytes) }, "cannot write")
        written += Int64(bytes)
        steady.advance(frames: samples.count / 2)
    }

    /// Ends the session's stream: a buffer of silence behind what is queued, so that the session's last frames
    /// play and nothing after them, and the stream corked (paused), not ended: a null sink left with no stream
    /// renders 2 s ahead, and through the `pulse` PCM, which lyred ended with drop and prepare, a session that
    /// followed within 2 s lost up to 1.9 s of its start.
    @discardableResult
    public func stop() -> AudioOutputError? {
        defer {
            steady.reset()
            current = false
        }
        guard !corked else { return nil }
        do throws(AudioOutputError) {
            var left = Self.bufferFrames
            while left > 0 {
                var writable = 0
                var ranDry: UInt32 = 0
                try check(lyre_pulse_player_wait_writable(player, blockFrames * Self.bytesPerFrame, &writable, &ranDry), "the stream failed")
                let frames = min(left, writable / Self.bytesPerFrame / blockFrames * blockFrames)
                try write(Array(silence.prefix(frames * 2)))
                left -= frames
            }
            try check(lyre_pulse_player_cork(player, 1), "cannot pause the stream")
            corked = true
            return nil
        } catch {
            return error
        }
    }

    public func close() { lyre_pulse_player_free(player) }
}
