import CALSA
import CALSAShim
import LyreClock

#if canImport(Glibc)
import Glibc
#endif

/// A `snd_pcm_t` opened for playback (`snd_pcm_open` / `snd_pcm_close`), 48 kHz stereo S16_LE.
///
/// Underruns (`-EPIPE`) and suspends (`-ESTRPIPE`) are recovered with `snd_pcm_recover` and counted.
/// Presentation time is the frames queued ahead of the next write, counted from the device's own timestamp of
/// its pointer (`snd_pcm_status` with a `CLOCK_MONOTONIC` htimestamp) where the driver gives one, else from
/// the time of the read (`snd_pcm_delay`): a driver whose pointer moves a period at a time is then off by up
/// to a period, the device's timestamp is not.
public final class ALSAOutput: PCMSink {
    public let blockFrames = 240
    /// Self-paced plugins take 50 ms at once like the WAV sink; a device's 20 ms buffer takes one block.
    public var longestBlockFrames: Int { selfPaced ? ClockPacedTimeline.longestBlockFrames : blockFrames }
    public private(set) var outputLatency: UInt64 = 0
    public private(set) var recoveries = 0
    private let pcm: OpaquePointer
    private let name: String
    private let bufferFrames: Int
    private let mixer: ALSAMixer?
    /// Plugins such as `null` and `file` (over `null`) take any amount at once and never report a delay:
    /// detected after a few writes, and then paced here on the host clock, like `WAVFileOutput`.
    private var unpacedWrites = 0
    private var selfPaced = false
    private var timeline = ClockPacedTimeline()
    /// A sound server's estimate, made steady (`SteadyEstimate`); unused on a device.
    private var steady = SteadyEstimate()

    /// The buffer PipeWire's PCM gets at least (`pipewire`, and `default` where pipewire-alsa makes it so), its
    /// period a quarter of it. At 20 ms (5 ms periods) PipeWire, without real-time scheduling, ran its graph in
    /// 128-frame quanta and now and then dropped or repeated one: the song came out 128 frames early or late at
    /// once, then lyred steered back at its 1000 ppm limit for 2.7 s. At 60 ms it came out whole, at one lag,
    /// in 8 runs of 10 (PackageTests.theUserUnitPlaysThroughTheSessionsSoundServer); in a fresh clone's suite
    /// it still had 5 corrections, and beside another suite's run 30. Those were lyred's jumps at the server's
    /// estimate (`estimatesPresentation`): steered instead, whole in 16 runs of 16 (in one the lag moved by a
    /// sample, following the estimate's noise, which `SteadyEstimate` now takes out). PulseAudio's `pulse` PCM
    /// keeps 20 ms: at 60 ms lyred concealed 1.2 s of an 8 s song there, chasing the latency PulseAudio reports.
    public static let pipeWireBufferMicroseconds: UInt32 = 60_000

    /// The `type` of the I/O plugin `pcm` is, opened as `name` (`pipewire`, `pulse`); nil for any other PCM.
    static func ioPlugType(_ pcm: OpaquePointer, name: String) -> String? {
        snd_pcm_type(pcm) == SND_PCM_TYPE_IOPLUG ? definedType(name) : nil
    }

    /// The `type` of the PCM `name` in ALSA's configuration (`default` included, where pipewire-alsa or
    /// pulseaudio redefines it): `pulse`, `pipewire`, `hw`, …; nil where it has no definition of its own.
    /// (By the name it was opened as: an I/O plugin names itself after its stream, "ALSA Playback".)
    public static func definedType(_ name: String) -> String? {
        var top: OpaquePointer?
        guard snd_config_update_ref(&top) >= 0, let top else { return nil }
        defer { snd_config_unref(top) }
        // (It answers 1, not 0, for a definition it expanded: anything not negative is one.)
        var definition: OpaquePointer?
        guard snd_config_search_definition(top, "pcm", name, &definition) >= 0, let definition else { return nil }
        defer { snd_config_delete(definition) }
        var node: OpaquePointer?
        var type: UnsafePointer<CChar>?
        guard snd_config_search(definition, "type", &node) == 0, let node, snd_config_get_string(node, &type) == 0, let type else { return nil }
        return String(cString: type)
    }

    /// An I/O plugin's (`pipewire`; `pulse` was, and is now played through `PulseOutput`): its timestamp is
    /// the time `snd_pcm_status` was called and its delay the sound server's estimate of its latency. Through
    /// PulseAudio's null sink that estimate moved by up to 5 ms for a block and stepped by 18 to 20 ms at once,
    /// with nothing heard moving.
    public let estimatesPresentation: Bool

    /// `bufferMicroseconds` is the device buffer asked for; ALSA may round it, and PipeWire's PCM gets at
    /// least `pipeWireBufferMicroseconds`. `volumeControl` says which
    /// mixer control the volume moves, if any: a control it names that the output lacks is an error.
    public init(pcm name: String, bufferMicroseconds: UInt32 = 20_000, volumeControl: VolumeControl = .auto) throws(AudioOutputError) {
        Self.captureErrors
        lyre_alsa_clear_error()
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc == 0, let handle else { throw Self.error("cannot open ALSA PCM \(name)", rc) }
        let plugin = Self.ioPlugType(handle, name: name)
        let buffer = plugin == "pipewire" ? max(bufferMicroseconds, Self.pipeWireBufferMicroseconds) : bufferMicroseconds
        rc = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 2, 48000, 1, buffer)
        guard rc == 0 else {
            snd_pcm_close(handle)
            throw Self.error("cannot set 48 kHz stereo S16_LE on \(name)", rc)
        }
        var bufferSize: snd_pcm_uframes_t = 0
        var periodSize: snd_pcm_uframes_t = 0
        snd_pcm_get_params(handle, &bufferSize, &periodSize)
        outputLatency = UInt64(bufferSize) * 1_000_000_000 / 48000
        bufferFrames = Int(bufferSize)
        switch volumeControl.mixerControl {
        case .none: mixer = nil
        case .some(let control):
            mixer = ALSAMixer(pcm: name, control: control)
            if let control, mixer == nil {
                snd_pcm_close(handle)
                let controls = ALSAMixer.playbackControls(pcm: name)
                throw AudioOutputError(
                    "ALSA PCM \(name) has no playback volume control '\(control)' ("
                        + (controls.isEmpty ? "it has none" : "it has \(controls.map { "'\($0)'" }.joined(separator: ", "))")
                        + "); set volume-control to mixer:NAME with one of them, or to auto or software")
            }
        }
        pcm = handle
        self.name = name
        estimatesPresentation = snd_pcm_type(handle) == SND_PCM_TYPE_IOPLUG
        // Timestamps on the host's clock (HostClock), taken by the driver when it updates its pointer.
        var sw: OpaquePointer?
        if snd_pcm_sw_params_malloc(&sw) == 0, let sw {
            if snd_pcm_sw_params_current(handle, sw) == 0,
                snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE) == 0,
                snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC) == 0
            {
                _ = snd_pcm_sw_params(handle, sw)
            }
            snd_pcm_sw_params_free(sw)
        }
        if snd_pcm_status_malloc(&status) != 0 { status = nil }
    }

    /// Where presentation times came from so far: the device's timestamps, and the time of the read.
    public private(set) var presentationSources = (deviceTimestamps: 0, readTimes: 0)

    public var presentationSource: String {
        if selfPaced { return "the host clock (\(name) keeps no time)" }
        let (stamped, read) = presentationSources
        return "the device's timestamps \(stamped) times, snd_pcm_delay at the time of reading \(read) times"
    }
    private var status: OpaquePointer?

    public var volumeControl: String? { mixer?.controlName }

    public func setVolume(dB: Double) -> Bool { mixer?.setVolume(dB: dB) ?? false }

    /// libasound's own messages go into errors, not to stderr on every retry (see CALSAShim.h).
    private static let captureErrors: Void = lyre_alsa_capture_errors()

    /// The failure with `snd_strerror`'s text and what libasound said about it on this thread, if anything.
    static func error(_ what: String, _ rc: Int32) -> AudioOutputError {
        let said = String(cString: lyre_alsa_last_error())
        lyre_alsa_clear_error()
        return AudioOutputError("\(what): \(String(cString: snd_strerror(rc)))\(said.isEmpty ? "" : " (\(said))")")
    }

    /// Waits for a block's room, then, when the next frame would be presented more than `lead` from now (a
    /// device buffer longer than the session's latency allows), until the device has played down to `lead`:
    /// what it says of its own delay decides, since a sound server's PCM adds its graph's latency to what
    /// lyred queued. A stream that holds that much before its start threshold (the whole buffer) is started.
    /// (With the whole buffer allowed, as for every session of 65 ms or more on PipeWire's 60 ms, nothing
    /// changes.)
    /// A plugin that paces itself (`null`, `file`) is written its buffer's time ahead, or `lead` when that is shorter.
    public func waitForRoom(within lead: UInt64) throws(AudioOutputError) -> UInt64 {
        if selfPaced { return timeline.waitForRoom(lead: min(outputLatency, lead)) }
        while true {
            let avail = snd_pcm_avail_update(pcm)
            if avail < 0 {
                try recover(Int32(avail))
                continue
            }
            guard avail >= blockFrames else {
                let rc = snd_pcm_wait(pcm, 100)
                if rc < 0 { try recover(rc) }
                continue
            }
            let (presentation, now) = presentationTime()
            // Never below two blocks of lyred's own: a server whose graph alone is later than `lead` gets
            // what it can play, rather than nothing.
            guard lead < outputLatency, presentation > now + lead, bufferFrames - avail > 2 * blockFrames else { return steadied(presentation) }
            if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED {
                if snd_pcm_start(pcm) != 0 { return steadied(presentation) }
                continue
            }
            // At most a buffer's time, in case what the device said was stale.
            HostClock.sleep(until: min(presentation - lead, now + outputLatency))
        }
    }

    /// A sound server's estimate made steady; a device's timestamps as they are.
    private func steadied(_ presentation: UInt64) -> UInt64 {
        estimatesPresentation ? steady.presentation(estimate: presentation) : presentation
    }

    /// When the next frame written is presented (`HostClock` ns), and the time it was read.
    private func presentationTime() -> (UInt64, now: UInt64) {
        if let status, snd_pcm_status(pcm, status) == 0 {
            let now = HostClock.now()
            var stamp = timespec()
            snd_pcm_status_get_htstamp(status, &stamp)
            let stamped = UInt64(stamp.tv_sec) * 1_000_000_000 + UInt64(stamp.tv_nsec)
            if let time = Self.presentationTime(now: now, deviceTimestamp: stamped, delayFrames: Int(snd_pcm_status_get_delay(status))) {
                presentationSources.deviceTimestamps += 1
                return (time, now)
            }
        }
        var delay: snd_pcm_sframes_t = 0
        let now = HostClock.now()
        if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
        presentationSources.readTimes += 1
        return (now + UInt64(max(delay, 0)) * 1_000_000_000 / 48000, now)
    }

    /// When the next frame written is presented, from the device's timestamp of its pointer and the delay it
    /// gave with it (`now` read after both): nil when there is no usable timestamp (plugins such as `null`
    /// give none), one older than a second (a stopped stream's), or one from the future (another clock's).
    public static func presentationTime(now: UInt64, deviceTimestamp: UInt64, delayFrames: Int) -> UInt64? {
        guard deviceTimestamp != 0, deviceTimestamp <= now, now - deviceTimestamp < 1_000_000_000 else { return nil }
        return deviceTimestamp + UInt64(max(delayFrames, 0)) * 1_000_000_000 / 48000
    }

    public func write(_ samples: [Int16]) throws(AudioOutputError) {
        var offset = 0
        let frames = samples.count / 2
        while offset < frames {
            let n = samples.withUnsafeBufferPointer { snd_pcm_writei(pcm, $0.baseAddress! + offset * 2, snd_pcm_uframes_t(frames - offset)) }
            if n < 0 {
                try recover(Int32(n))
                continue
            }
            offset += n
        }
        steady.advance(frames: frames)
        if selfPaced {
            timeline.advance(frames: frames)
        } else if unpacedWrites >= 0 {
            var delay: snd_pcm_sframes_t = 0
            let consumedAtOnce = snd_pcm_avail_update(pcm) >= bufferFrames && (snd_pcm_delay(pcm, &delay) < 0 || delay <= 0)
            unpacedWrites = consumedAtOnce ? unpacedWrites + 1 : -1
            if unpacedWrites >= 8 { selfPaced = true }
        }
    }

    private func recover(_ rc: Int32) throws(AudioOutputError) {
        if rc == -EPIPE || rc == -ESTRPIPE || rc == -EINTR {
            if snd_pcm_recover(pcm, rc, 1) == 0 {
                recoveries += 1
                // An interrupted write left the stream as it was; an xrun or a suspend restarted it.
                if rc != -EINTR { steady.reset() }
                return
            }
        }
        throw Self.error("ALSA PCM \(name) failed", rc)
    }

    /// Ends the session's stream: what is queued is dropped, and the stream prepared for the next. (PulseAudio's
    /// `pulse` PCM, which a null sink made start up to 2 s late after a drop, is played through `PulseOutput`.)
    @discardableResult
    public func stop() -> AudioOutputError? {
        timeline.reset()
        restart()
        return nil
    }

    /// Drops what is queued and prepares the stream for the next write.
    private func restart() {
        steady.reset()
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
    }

    public func close() {
        snd_pcm_close(pcm)
        if let status { snd_pcm_status_free(status) }
        status = nil
    }
}
