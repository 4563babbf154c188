import FoundationEssentials
import Logging
import LyreAudio
import LyreClock
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The audio thread: pulls blocks from the current session's playout and writes them to the sink, paced by
/// the sink. Opens the sink at start and reopens it when it fails; says whether output is usable.
///
/// `@unchecked Sendable`: mutable state is behind `lock`; the sink is touched only by the audio thread.
final class OutputEngine: @unchecked Sendable {
    private let target: OutputTarget
    private let logger: Logger
    private let lock = Mutex<Void>(())
    private var current: PlayoutController?
    /// When set, `current` is draining: it stops when empty or at this time.
    private var drainDeadline: UInt64?
    /// Sessions mixed over `current` (streaming.md §7), in the order they came.
    private var overlays: [Overlay] = []
    /// How a ducking overlay lowers `current`, unless it asks its own depth.
    let duck: DuckEnvelope
    private var running = true
    /// The audio thread has left its loop.
    private var loopEnded = false
    /// The volume asked for (dB, RAOP scale), how it becomes a level, and whether the audio thread has yet
    /// to apply them.
    private var volume: Double
    private var policy: VolumePolicy
    private var volumeChanged = false
    /// What is plugged into the output holds the sound this long, ns (`--output-delay`; may be negative).
    private var delay: Int64 = 0
    /// Nil until the first attempt to open the output, so that the first answer is always reported.
    private var available: Bool?
    private var latency: UInt64 = 0
    private let presentationLog: UnsafeMutablePointer<FILE>?
    private let availabilityChanged: @Sendable (Bool) -> Void
    private var started = false
    /// Wakes the idle audio thread when there is something to play or it should stop.
    private let wake = Wakeup()
    /// Signalled by the audio thread when a draining session has played out, and when it ends: `stop()`
    /// waits on it.
    private let settled = Wakeup()

    /// A session played over the main one: mixed in, and lowering it while it plays when it ducks.
    private struct Overlay {
        let controller: PlayoutController
        /// How it lowers the main session, when it ducks.
        let duck: DuckEnvelope?
        /// Its own sender's volume, as a gain on its samples (the receiver's volume applies to the mix).
        var gain: Float = 1
        /// Where its next block starts, in frames from its first sample (`DuckEnvelope`'s position): read
        /// from its playout while that plays, carried on by the frames rendered once it is over.
        var position: Int64?
        /// Frames from its first sample to just after its last, once its audio ran out (its playout's
        /// `audioEnd`, which a session demoted to an overlay brings along) or it was stopped.
        var end: Int64?
        /// The dB its duck gave the last frame rendered (`DuckEnvelope.lower`).
        var level: Double?
        /// It is ending: it plays out what it holds (at most until this time), and the music comes back.
        var ending: UInt64?
    }

    init(target: OutputTarget, volume: Double, policy: VolumePolicy, duck: DuckEnvelope = DuckEnvelope(), presentationLogPath: String?,
         logger: Logger, availabilityChanged: @escaping @Sendable (Bool) -> Void) {
        self.duck = duck
        self.target = target
        self.volume = volume
        self.policy = policy
        self.logger = logger
        self.availabilityChanged = availabilityChanged
        presentationLog = presentationLogPath.flatMap { fopen($0, "w") }
        if let presentationLog { fputs("rtp_time,scheduled_ns,presented_ns,audio_frames,frames\n", presentationLog) }
    }

    /// Output latency of the open sink, ns.
    var outputLatency: UInt64 { lock.withLock { _ in latency } }
    var isAvailable: Bool { lock.withLock { _ in available ?? false } }

    /// Records whether the output is usable and tells the owner when that changed (or is first known).
    private func setAvailable(_ value: Bool) {
        let changed = lock.withLock { _ in
            defer { available = value }
            return available != value
        }
        if changed { availabilityChanged(value) }
    }

    func play(_ controller: PlayoutController?) {
        lock.withLock { _ in current = controller; drainDeadline = nil }
        wake.signal()
    }

    /// Mixes `controller` over what plays (streaming.md §7); with `duckDB`, what plays is lowered while it
    /// plays, as `duck` says but by that depth.
    func mix(_ controller: PlayoutController, duckDB: Double?) {
        let overlay = overlay(controller, duckDB: duckDB)
        lock.withLock { _ in overlays.append(overlay) }
        wake.signal()
    }

    /// `controller`, which plays as the main session, goes on as an overlay, first of them (a session that
    /// asked to mix and played alone, under a plain session that came after it: streaming.md §7). Nothing
    /// is the main session until `play` gives it one. In one step, so that not a block of it is skipped.
    func demote(_ controller: PlayoutController, duckDB: Double?) {
        var overlay = overlay(controller, duckDB: duckDB)
        lock.withLock { _ in
            guard current === controller else { return }
            overlay.ending = drainDeadline
            current = nil
            drainDeadline = nil
            overlays.insert(overlay, at: 0)
        }
    }

    private func overlay(_ controller: PlayoutController, duckDB: Double?) -> Overlay {
        var envelope = duck
        if let duckDB { envelope.depthDB = duckDB }
        return Overlay(controller: controller, duck: duckDB == nil ? nil : envelope)
    }

    /// An overlay's own volume (dB, RAOP scale; −144 mutes it).
    func setOverlayVolume(_ controller: PlayoutController, _ db: Double) {
        lock.withLock { _ in
            guard let index = overlays.firstIndex(where: { $0.controller === controller }) else { return }
            overlays[index].gain = Float(VolumePolicy.gain(db))
        }
    }

    /// Stops output if `controller` is what plays (a session that was taken over has already been replaced).
    /// With `drain`, what is already buffered plays out first (a sender that ends its stream wants its last
    /// packets heard), for at most `drainLimit` ns. An overlay that ends brings what it ducked back up over
    /// the envelope's release, drained or not: a stop without its end heard starts the release where it is.
    func stopIfPlaying(_ controller: PlayoutController, drain: Bool, drainLimit: UInt64) {
        lock.withLock { _ in
            if let index = overlays.firstIndex(where: { $0.controller === controller }) {
                overlays[index].ending = drain ? HostClock.now() + drainLimit : 0
                return
            }
            guard current === controller else { return }
            if drain { drainDeadline = HostClock.now() + drainLimit } else { current = nil }
        }
    }

    /// The extra latency of what is plugged into the output (ns, −500…500 ms): blocks carry the samples due
    /// that much later, so the room is heard in time with the others. Takes effect with the next block.
    var outputDelay: Int64 {
        get { lock.withLock { _ in delay } }
        set { lock.withLock { _ in delay = newValue } }
    }

    /// Volume in dB (RAOP scale), played at the policy's level: on the output's mixer when it has one and
    /// the policy uses it, else as a gain on the samples.
    func setVolume(_ db: Double) {
        lock.withLock { _ in
            volume = db
            volumeChanged = true
        }
        wake.signal()
    }

    /// The level a sender's full volume plays at (`--max-volume-db`), at once.
    func setMaximumVolume(_ db: Double) {
        lock.withLock { _ in
            policy.maximumDB = db
            volumeChanged = true
        }
        wake.signal()
    }

    /// Starts the audio thread: a thread of its own, because writing to the device blocks until it takes the
    /// block, and each block must be there before the device runs dry, whatever the event loops are doing.
    func start() throws(DedicatedThread.Failure) {
        // Started before the thread is, so that a stop() meanwhile waits for its loop to end.
        lock.withLock { _ in started = true }
        do {
            try DedicatedThread.detach("lyred-audio") { [self] in self.loop() }
        } catch {
            lock.withLock { _ in started = false }
            throw error
        }
    }

    /// Stops the audio thread, after letting a draining session finish (at most 3 s).
    func stop() {
        let deadline = HostClock.now() + 3_000_000_000
        while lock.withLock({ _ in drainDeadline != nil && current != nil }), HostClock.now() < deadline { settled.wait(until: deadline) }
        lock.withLock { _ in running = false }
        wake.signal()
        while lock.withLock({ _ in started && !loopEnded }) { settled.wait(until: HostClock.now() + 1_000_000_000) }
        if let presentationLog { fclose(presentationLog) }
    }

    /// How far ahead of now a block may be rendered: the session's latency less 5 ms. A Lyre sender sends each
    /// frame half the latency before its schedule, a sender that sends none ahead at its schedule, which is
    /// the latency before the frame is presented. A device buffer longer than that (PipeWire's 60 ms) is
    /// kept filled only that far: filled whole, at `lyre play --latency 20` every block was rendered before
    /// its frames came, and a 12 s song to the user unit through PipeWire was concealed from end to end
    /// (576,480 frames). At 20 ms the lead is 15 ms, what a 20 ms device buffer holds before a block; at 10 ms,
    /// the shortest, 5 ms, while each frame comes 15 ms before it plays (5 ms frames, sent 5 ms ahead).
    static func lead(latency: UInt64) -> UInt64 { latency > 5_000_000 ? latency - 5_000_000 : 0 }

    /// Frames to render at once: one 5 ms block per 25 ms of the session's latency, from 1 (under 50 ms, as
    /// at `--latency 20` and 10) to 10 (50 ms, from 250 ms, the default), as far as the sink takes them. A block is
    /// rendered at most `lead` before it is due, and Lyre senders send each frame half the latency (at most
    /// 100 ms) before the schedule, so at 20 ms a block's last frame is there 15 ms before the block is rendered
    /// into the WAV sink (10 ms ahead), and at 10 ms (5 ms frames, rendered 5 ms ahead) 5 ms before.
    /// Wake-ups are what the audio thread costs: on the 2-core test machine a thread that only sleeps
    /// and wakes uses 1.2% of a core at 200 Hz and 0.3% at 50 Hz.
    static func blockFrames(for sink: any PCMSink, latency: UInt64) -> Int {
        let blocks = min(max(Int(latency / 25_000_000), 1), 10)
        return min(sink.blockFrames * blocks, sink.longestBlockFrames)
    }

    private func loop() {
        defer {
            lock.withLock { _ in loopEnded = true }
            settled.signal()
        }
        var loggedFrames = 0
        var sink: (any PCMSink)?
        var wasPlaying = false
        var lastFailure: String?
        var gain = 1.0
        while lock.withLock({ _ in running }) {
            if sink == nil {
                do {
                    let volumeControl = lock.withLock { _ in self.policy.control }
                    let opened = try target.open(volumeControl: volumeControl)
                    sink = opened
                    lock.withLock { _ in
                        latency = opened.outputLatency
                        volumeChanged = true
                    }
                    setAvailable(true)
                    let control = volumeControl == .none ? "not applied (volume-control none)" : opened.volumeControl.map { "on mixer control '\($0)'" } ?? "as software gain"
                    logger.info("output \(target) open, latency \(Double(opened.outputLatency) / 1e6) ms, volume \(control)")
                    lastFailure = nil
                } catch {
                    if lastFailure != error.description {
                        logger.warning("output \(target) unavailable: \(error); retrying every 2 s")
                        lastFailure = error.description
                    }
                    setAvailable(false)
                    wake.wait(until: HostClock.now() + 2_000_000_000)  // or at once when stopping
                    continue
                }
            }
            guard let out = sink else { continue }
            let (controller, newVolume, overlayLatency) = lock.withLock { _ in
                if let deadline = drainDeadline, let playing = current,
                    HostClock.now() > deadline || playing.withPlayout({ $0.isDrained })
                {
                    current = nil
                    drainDeadline = nil
                    settled.signal()
                }
                defer { volumeChanged = false }
                // The policy with the volume, and only when either changed: nothing is copied per block.
                // The overlays' lowest latency, nil when none plays: nothing is built per block for one session.
                return (current, volumeChanged ? (volume, policy) : nil, overlays.lazy.map(\.controller.latency).min())
            }
            let mixing = overlayLatency != nil
            if let (newVolume, volumePolicy) = newVolume {
                gain = volumePolicy.apply(newVolume) { level in
                    guard out.setVolume(dB: level) else {
                        if out.volumeControl != nil { logger.warning("output \(target): the mixer refused \(level) dB; applying it as software gain") }
                        return false
                    }
                    return true
                }.gain
            }
            guard controller != nil || mixing else {
                if wasPlaying {
                    logger.info("output \(target): presentation times from \(out.presentationSource)")
                    if let failure = out.stop() { logger.warning("output \(target): \(failure)") }
                    wasPlaying = false
                    if let presentationLog { fflush(presentationLog) }
                }
                // Idle: sleep until a session starts, the volume changes or the engine stops (each signals
                // `wake`): no wake-ups while nothing plays.
                wake.wait()
                continue
            }
            wasPlaying = true
            do {
                // One of the two is there (the guard above).
                let latency = min(controller?.latency ?? .max, overlayLatency ?? .max)
                let presentation = try out.waitForRoom(within: Self.lead(latency: latency))
                // Read after the wait, which lasts up to a block (50 ms on a WAV file): a delay set during it is
                // this block's, as streaming.md §6.3 says, not the next one's.
                let outputDelay = self.outputDelay
                let frames = Self.blockFrames(for: out, latency: latency)
                var (samples, record) = controller?.withPlayout {
                    $0.render(frames: frames, presentation: presentation, outputDelay: outputDelay, estimated: out.estimatesPresentation)
                } ?? ([Int16](repeating: 0, count: frames * 2), nil)
                if mixing {
                    samples = renderOverlays(over: controller == nil ? nil : samples, rendered: controller, frames: frames, presentation: presentation,
                                             outputDelay: outputDelay, estimated: out.estimatesPresentation)
                }
                if gain != 1 {
                    for i in samples.indices { samples[i] = Int16(clamping: Int((Double(samples[i]) * gain).rounded())) }
                }
                try out.write(samples)
                if let presentationLog {
                    // Every block, silence included (0 for what is not scheduled), so that a frame's place in
                    // the output maps to the time it left.
                    let r = record ?? PresentationRecord(rtpTime: 0, scheduled: 0, presented: presentation)
                    fputs("\(r.rtpTime),\(r.scheduled),\(r.presented),\(r.audioFrames),\(frames)\n", presentationLog)
                    // About four times a second, so the log can be read while the session plays.
                    loggedFrames += frames
                    if loggedFrames >= 12000 {
                        loggedFrames = 0
                        fflush(presentationLog)
                    }
                }
            } catch {
                logger.error("output \(target) failed: \(error); reopening")
                out.close()
                sink = nil
                setAvailable(false)
            }
        }
        sink?.close()
    }

    /// Renders every overlay for the block at `presentation`, ducks `main` as the ducking ones ask, and sums
    /// them (on the audio thread). Overlays whose release is over leave the list. `rendered`: the main session
    /// this block was rendered from, which, demoted to an overlay since (`demote`), is not rendered twice.
    private func renderOverlays(over main: [Int16]?, rendered mainController: PlayoutController?, frames: Int, presentation: UInt64,
                                outputDelay: Int64, estimated: Bool) -> [Int16] {
        var playing = lock.withLock { _ in overlays.filter { $0.controller !== mainController } }
        var mainGains = [Float](repeating: 1, count: frames)
        var rendered: [(samples: [Int16], gain: Float)] = []
        var done: [ObjectIdentifier] = []
        let now = HostClock.now()
        for index in playing.indices {
            var overlay = playing[index]
            let (samples, record, first, audioEnd) = overlay.controller.withPlayout { playout in
                let (samples, record) = playout.render(frames: frames, presentation: presentation, outputDelay: outputDelay, estimated: estimated)
                return (samples, record, playout.firstPosition, playout.audioEnd)
            }
            // Its position: from the playout's schedule while it has one, else carried on.
            if let record, let first {
                overlay.position = Int64(Int32(bitPattern: record.rtpTime &- first))
            }
            if let audioEnd {
                // Its audio ran out (in this block, or before, while it played as the main session): the music
                // comes back from there, the same sample in every room, rather than when its sender ends the
                // session (a latency or more later, or never while an app keeps it on).
                if overlay.end == nil { overlay.end = audioEnd }
            } else if overlay.ending == nil {
                // Playing, or its audio came again (its packets were late): it ducks again.
                overlay.end = nil
            }
            if overlay.end == nil, let ending = overlay.ending, ending == 0 || now > ending {
                // Stopped before its audio ran out (taken off, or its sender gone): it ends where it is.
                overlay.end = overlay.position ?? 0
            }
            if let duck = overlay.duck, let position = overlay.position {
                duck.lower(&mainGains, from: position, end: overlay.end, level: &overlay.level)
            }
            rendered.append((samples, overlay.gain))
            if let position = overlay.position { overlay.position = position + Int64(frames) }
            // Gone once its session ended and the music is back up.
            let over = overlay.ending != nil && overlay.end.map { end in overlay.position.map { duck.isReleased(at: $0, end: end) } ?? true } ?? false
            if over { done.append(ObjectIdentifier(overlay.controller)) }
            playing[index] = overlay
        }
        lock.withLock { _ in
            // Written back by identity: an overlay added or ended meanwhile keeps what the event loop set.
            for updated in playing {
                guard let index = overlays.firstIndex(where: { $0.controller === updated.controller }) else { continue }
                let ending = overlays[index].ending, gain = overlays[index].gain
                overlays[index] = updated
                overlays[index].ending = ending
                overlays[index].gain = gain
            }
            overlays.removeAll { done.contains(ObjectIdentifier($0.controller)) }
        }
        return SessionMixer.mix(main: main, mainGains: mainGains, overlays: rendered, frames: frames)
    }
}
