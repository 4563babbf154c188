import CPulseShim
import Logging
import LyreClock
import LyreSender
import LyreWire
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Records one Lyre output's monitor for as long as the output exists, and hands what it records to the
/// receiver's session while one is attached.
///
/// It records all along, not only while an app plays: a null sink renders as much as its clients' latency
/// asks for at once (2 s for paplay), so a recorder that connected when the app did would miss the start.
/// Its 10 ms request keeps the sink's blocks small, and what is recorded while a session connects is kept
/// (`beginSession`) and sent first.
public final class MonitorCapture: @unchecked Sendable {
    /// 10 ms blocks: what the sound server hands over at a time, so it adds about that much latency.
    public static let blockFrames = 480
    /// Queued before a session starts beyond its lead and first packet: three blocks (30 ms). Each packet is
    /// sent when due, so the capture thread may run this late before a slot passes empty and the rest of the
    /// stream plays a block later. One block of margin was too little on a loaded 2-core machine (SinkTests
    /// saw that shift in most runs); three keep what lyre sink adds under 50 ms (`Tools/bench sink`: 46 ms,
    /// where four blocks measured 56.6).
    public static let marginFrames = 3 * blockFrames

    private struct State {
        var session: StreamSession?
        var connecting = false
        var backlog: [Float] = []
        /// Samples to queue before the session starts.
        var startSamples = 0
        var started = false
        var stopped = false
        var onEnded: (@Sendable (String) -> Void)?
        /// The app stopped (`finish`): what the monitor still holds of it goes on to the session, up to this
        /// many more samples, then the session is handed to `then`.
        var drain: (remaining: Int, then: @Sendable (StreamSession?) -> Void)?
    }

    private let state = Mutex(State())
    private let gainBox = Mutex<Float>(1)

    /// What each block recorded is multiplied by before a session gets it (`SinkRouter.captureGain`: the
    /// slider undone where the server applied it and it is the receiver's to apply). It takes effect from the
    /// next block read, so a slider move is a step, tens of ms from when the server applied it.
    public var gain: Float {
        get { gainBox.withLock { $0 } }
        set { gainBox.withLock { $0 = newValue } }
    }
    private let capture: OpaquePointer
    private let logger: Logger
    public let monitor: String

    /// Opens `monitor` for recording (float, 48 kHz stereo) and starts reading it.
    public init(monitor: String, logger: Logger) throws(PulseError) {
        var error = [CChar](repeating: 0, count: 256)
        // A fragment is one block: 8 bytes a frame (two float channels).
        guard let capture = lyre_pulse_record("Lyre", "Lyre stream", monitor, UInt32(Self.blockFrames * 8), &error, error.count) else {
            throw PulseError(description: "cannot record \(monitor): \(String(nulTerminated: error))")
        }
        self.capture = capture
        self.monitor = monitor
        self.logger = logger
        // A thread of its own: it blocks on the sound server's next block of audio, at the audio's pace. It
        // holds the capture until it ends, which `stop` does not wait for (see there).
        do {
            try DedicatedThread.detach("lyre-sink-capture") { [self] in read() }
        } catch {
            throw PulseError(description: error.description)
        }
    }

    deinit { lyre_pulse_record_free(capture) }

    /// What was recorded just before a session begins is kept for it: the app's first block can be read
    /// before its stream is seen and the session begun (a race SinkTests lost 2 runs in 8, one block off the head).
    public static let prerollFrames = 5 * blockFrames

    /// From now on what is recorded is kept for a session that is connecting, after the last
    /// `prerollFrames` recorded before.
    public func beginSession() {
        // An app that starts while the last one's end drains: that session is finished as it is.
        handOverDrain()
        state.withLock { s in
            s.connecting = true
            if s.backlog.count > Self.prerollFrames * 2 { s.backlog.removeFirst(s.backlog.count - Self.prerollFrames * 2) }
        }
    }

    /// The session that gets the audio from now on (after what was kept since `beginSession`). `onEnded`
    /// is called once if it ends on its own: the receiver went away, or another sender took it over.
    ///
    /// The session starts at once (no start delay) when its lead, a packet and `marginFrames` are
    /// queued: the first sample then plays the session's latency plus that much after it was recorded, and
    /// each packet is recorded by the time it is sent. What was recorded before that, while the session
    /// connected (the app's first sounds), is sent first and at once, the session's clock started that much
    /// earlier (`StreamSession.start(backdate:)`), so that it plays as long after it was recorded as the
    /// rest: nothing is lost and nothing delayed. Only what is more than half the latency old, which could no
    /// longer reach the receiver in time, is dropped.
    public func attach(_ session: StreamSession, configuration: StreamConfiguration, onEnded: @escaping @Sendable (String) -> Void) {
        state.withLock { s in
            s.session = session
            s.onEnded = onEnded
            s.started = false
            s.startSamples = ((configuration.leadMilliseconds + configuration.frameMilliseconds) * 48 + Self.marginFrames) * 2
            let kept = s.startSamples + configuration.latencyMilliseconds / 2 * 48 * 2
            if s.backlog.count > kept { s.backlog.removeFirst(s.backlog.count - kept) }
        }
    }

    /// Stops handing audio to the session (or keeping it for one); returns the session.
    public func detach() -> StreamSession? {
        state.withLock { s in
            defer { s = State(stopped: s.stopped) }
            return s.session
        }
    }

    /// At most this much is read on after the app stopped (`finish`), should its sound never fall silent.
    public static let drainFrames = 25 * blockFrames

    /// The app stopped playing to the output: the last of its audio, which the sound server had rendered but
    /// the monitor had not yet handed over when the app's stream went away (a block or more when this thread
    /// runs late), still goes to the session, up to the first block of silence the output renders without
    /// the app (or `drainFrames`); then the capture lets go of the session and `then` gets it, to finish.
    /// Taking the session at once cut the end of the stream (SinkTests: 1.4 dB over its last 20 ms).
    /// `then` gets nil when no session was attached (it was still connecting).
    public func finish(then: @escaping @Sendable (StreamSession?) -> Void) {
        let now = state.withLock { s -> Bool in
            guard s.session != nil, !s.stopped else { return true }
            s.drain = (Self.drainFrames * 2, then)
            return false
        }
        if now { then(detach()) }
    }

    /// Stops recording: from now on nothing recorded reaches a session. It returns at once, without waiting
    /// for the reader, which is blocked until the sound server's next block: a server that stalls would hold
    /// lyre sink's queue here, and every output's changes with it. (One CI run under PipeWire left a departed
    /// receiver's output in place for more than 10 s, with no log line to say where it waited; a monitor
    /// with nothing playing into its sink still renders blocks here, so a stall is the suspect, not proven.)
    /// The reader ends on its next block, or when the caller unloads the sink and the server ends the
    /// recording.
    public func stop() {
        state.withLock { $0.stopped = true }
        // A session still draining is handed over as it is.
        handOverDrain()
    }

    /// Ends a drain (`finish`) where it stands: the capture lets go of the session and its `then` gets it.
    private func handOverDrain() {
        let drained = state.withLock { s -> ((@Sendable (StreamSession?) -> Void), StreamSession?)? in
            guard let drain = s.drain else { return nil }
            defer { s = State(stopped: s.stopped) }
            return (drain.then, s.session)
        }
        if let (then, session) = drained { then(session) }
    }

    private func read() {
        var block = [Float](repeating: 0, count: Self.blockFrames * 2)
        while !state.withLock({ $0.stopped }) {
            let status = block.withUnsafeMutableBytes { lyre_pulse_record_read(capture, $0.baseAddress, $0.count) }
            guard status == 0 else {
                // Stopped: the sink went, and its recording with it.
                if state.withLock({ $0.stopped }) { return }
                logger.error("recording \(monitor) stopped: \(String(cString: lyre_pulse_strerror(status)))")
                let ended = state.withLock { s in defer { s.session = nil }; return s.onEnded }
                ended?("the sound server stopped")
                return
            }
            let gain = self.gain
            if gain != 1 { for i in block.indices { block[i] *= gain } }
            var drained: (then: @Sendable (StreamSession?) -> Void, session: StreamSession)?
            let (session, pending, start, startFrames) = state.withLock { s -> (StreamSession?, [Float], Bool, Int) in
                // Stopped while this block was read: it is no one's.
                if s.stopped { return (nil, [], false, 0) }
                if let drain = s.drain, let session = s.session {
                    // The app is gone: silence, or the bound, ends what is its.
                    if drain.remaining <= 0 || block.allSatisfy({ $0 == 0 }) {
                        drained = (drain.then, session)
                        let (started, backlog, startFrames) = (s.started, s.backlog, s.startSamples / 2)
                        s = State(stopped: s.stopped)
                        // A sound too short to have started the session starts it now, to play whole.
                        return started ? (nil, [], false, 0) : (session, backlog, true, startFrames)
                    }
                    s.drain?.remaining -= block.count
                }
                guard let session = s.session else {
                    // While connecting the last second is kept; before, the last `prerollFrames`.
                    s.backlog += block
                    let keep = s.connecting ? 96000 : Self.prerollFrames * 2
                    if s.backlog.count > keep { s.backlog.removeFirst(s.backlog.count - keep) }
                    return (nil, [], false, 0)
                }
                defer { s.backlog.removeAll() }
                let start = !s.started && session.queuedFrames * 2 + s.backlog.count + block.count >= s.startSamples
                if start { s.started = true }
                return (session, s.backlog + block, start, s.startSamples / 2)
            }
            if let drained, session == nil {
                drained.then(drained.session)
                continue
            }
            guard let session else { continue }
            var ended = !session.enqueue(pending)
            if !ended, start {
                // What is queued past the start's worth was recorded while the session connected.
                let backdate = UInt64(max(0, session.queuedFrames - startFrames)) * 1_000_000_000 / 48000
                do { try session.start(startDelay: 0, backdate: backdate) } catch { ended = true }
            }
            if ended {
                let (handler, draining) = state.withLock { s -> ((@Sendable (String) -> Void)?, (@Sendable (StreamSession?) -> Void)?) in
                    guard s.session === session else { return (nil, nil) }
                    defer { s = State(stopped: s.stopped) }
                    return (s.onEnded, s.drain?.then)
                }
                handler?(session.routeChangeReason.map { "\($0)" } ?? "the session ended")
                draining?(session)
            }
            if let drained { drained.then(drained.session) }
        }
    }
}
