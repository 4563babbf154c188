import Foundation
import Logging
import LyreAudio
import LyreClock
import NIOConcurrencyHelpers

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
    private let lock = NIOLock()
    private var current: PlayoutController?
    /// When set, `current` is draining: it stops when empty or at this time.
    private var drainDeadline: UInt64?
    private var running = true
    private var gain: Double = 1
    /// Nil until the first attempt to open the output, so that the first answer is always reported.
    private var available: Bool?
    private var latency: UInt64 = 0
    private let presentationLog: UnsafeMutablePointer<FILE>?
    private let availabilityChanged: @Sendable (Bool) -> Void
    private var thread: Thread?

    init(target: OutputTarget, presentationLogPath: String?, logger: Logger, availabilityChanged: @escaping @Sendable (Bool) -> Void) {
        self.target = target
        self.logger = logger
        self.availabilityChanged = availabilityChanged
        presentationLog = presentationLogPath.flatMap { fopen($0, "w") }
        if let presentationLog { fputs("rtp_time,scheduled_ns,presented_ns,audio_frames\n", presentationLog) }
    }

    /// Output latency of the open sink, ns.
    var outputLatency: UInt64 { lock.withLock { latency } }
    var isAvailable: Bool { lock.withLock { available ?? false } }

    /// Records whether the output is usable and tells the owner when that changed (or is first known).
    private func setAvailable(_ value: Bool) {
        let changed = lock.withLock {
            defer { available = value }
            return available != value
        }
        if changed { availabilityChanged(value) }
    }

    func play(_ controller: PlayoutController?) { lock.withLock { current = controller; drainDeadline = nil } }

    /// Stops output if `controller` is what plays (a session that was taken over has already been replaced).
    /// With `drain`, what is already buffered plays out first (a sender that ends its stream wants its last
    /// packets heard), for at most `drainLimit` ns.
    func stopIfPlaying(_ controller: PlayoutController, drain: Bool, drainLimit: UInt64) {
        lock.withLock {
            guard current === controller else { return }
            if drain { drainDeadline = HostClock.now() + drainLimit } else { current = nil }
        }
    }

    /// Volume in dB (RAOP scale): −144 mutes.
    func setVolume(_ db: Double) { lock.withLock { gain = db <= -144 ? 0 : pow(10, db / 20) } }

    func start() {
        let thread = Thread { [self] in self.loop() }
        thread.name = "lyred-audio"
        self.thread = thread
        thread.start()
    }

    /// Stops the audio thread, after letting a draining session finish (at most 3 s).
    func stop() {
        let deadline = HostClock.now() + 3_000_000_000
        while lock.withLock({ drainDeadline != nil && current != nil }), HostClock.now() < deadline { usleep(5000) }
        lock.withLock { running = false }
        while thread?.isFinished == false { usleep(2000) }
        if let presentationLog { fclose(presentationLog) }
    }

    private func loop() {
        var loggedRows = 0
        var sink: (any PCMSink)?
        var wasPlaying = false
        var lastFailure: String?
        while lock.withLock({ running }) {
            if sink == nil {
                do {
                    let opened = try target.open()
                    sink = opened
                    lock.withLock { latency = opened.outputLatency }
                    setAvailable(true)
                    logger.info("output \(target) open, latency \(Double(opened.outputLatency) / 1e6) ms")
                    lastFailure = nil
                } catch {
                    if lastFailure != error.description {
                        logger.warning("output \(target) unavailable: \(error); retrying every 2 s")
                        lastFailure = error.description
                    }
                    setAvailable(false)
                    usleep(2_000_000)
                    continue
                }
            }
            guard let out = sink else { continue }
            let (controller, gain) = lock.withLock {
                if let deadline = drainDeadline, let playing = current,
                    HostClock.now() > deadline || playing.withPlayout({ $0.isDrained })
                {
                    current = nil
                    drainDeadline = nil
                }
                return (current, self.gain)
            }
            guard let controller else {
                if wasPlaying { out.stop(); wasPlaying = false; if let presentationLog { fflush(presentationLog) } }
                usleep(5000)
                continue
            }
            wasPlaying = true
            do {
                let presentation = try out.waitForRoom()
                var (samples, record) = controller.withPlayout { $0.render(frames: out.blockFrames, presentation: presentation) }
                if gain != 1 {
                    for i in samples.indices { samples[i] = Int16(clamping: Int((Double(samples[i]) * gain).rounded())) }
                }
                try out.write(samples)
                if let record, let presentationLog {
                    fputs("\(record.rtpTime),\(record.scheduled),\(record.presented),\(record.audioFrames)\n", presentationLog)
                    // Four times a second, so the log can be read while the session plays.
                    loggedRows += 1
                    if loggedRows % 50 == 0 { fflush(presentationLog) }
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
}
