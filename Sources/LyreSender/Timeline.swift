import LyreWire

/// The sender's timeline (streaming.md §3, §9): what is queued, which frame is due when, with which sequence
/// number and RTP time, what was sent and can be resent or taken back, and where the app's content is.
///
/// A plain value without I/O or clock of its own: every question about time takes `now` (sender-clock ns), so
/// it is tested without sockets or waiting (TimelineTests). `StreamSession` keeps one under its lock; its
/// pacer asks `nextSlot` for each frame, encodes what it gets and reports the packet with `sent`.
struct Timeline {
    /// Samples of priming after a resume: 20 ms, one, two or four frames.
    static let primingSamples = 960

    /// A frame slot the pacer sends (or lets pass in silence).
    struct Slot: Equatable {
        /// Frames since the anchor.
        var index: UInt64
        var sequence: UInt16
        var rtp: UInt32
        /// The frame to encode (interleaved stereo), or nil: nothing is queued, the slot passes unsent.
        var pcm: ArraySlice<Float>?
        /// The encoder starts afresh with this frame (the first after a resume).
        var resetsEncoder: Bool
    }

    let frameSamples: Int
    let frameNanoseconds: UInt64
    /// The playout latency: a frame anchored at `t` plays at `t + latency`.
    let latency: UInt64
    /// How many frames `history` keeps: every frame that can still be unplayed (the latency and the lead)
    /// and a few more.
    let historyLength: Int

    private(set) var running = false
    private(set) var anchorClock: UInt64 = 0
    private(set) var anchorRTP: UInt32
    private(set) var framesSinceAnchor: UInt64 = 0
    private(set) var sequence: UInt16
    /// The Opus encoder's delay, samples (`OpusEncoder.lookahead`; 312 at 48 kHz, 120 for 5 ms frames): a packet
    /// decodes to the last `encoderDelay` samples of the frame before it, then its own frame less as many; never
    /// more than a frame (`FrameEncoder`), so one frame of silence carries it out. Set by the pacer.
    var encoderDelay = 0

    private var queue = SampleQueue()
    // Content accounting: frames of queued audio, as opposed to silent slots, so that players can map a
    // position in what they enqueued to the time it plays.
    private(set) var contentEnqueued: UInt64 = 0
    private var contentAtAnchor: UInt64 = 0
    private var contentSentSinceAnchor: UInt64 = 0
    private var silenceSinceAnchor: UInt64 = 0
    private var pendingSilence: UInt64 = 0
    /// Recently sent frames, by index since the anchor, to take back on pause: the app's audio (`content`), or
    /// the frame of silence that carries the encoder's look-ahead out after it.
    private var history: [(index: UInt64, pcm: ArraySlice<Float>, content: Bool)] = []
    /// The same frames as sent (RTP packets), for a room that joins or a receiver that asks for one again.
    private var sentPackets: [(index: UInt64, sequence: UInt16, bytes: [UInt8])] = []
    /// True while the encoder holds audio that no packet has carried out yet (the tail of the last frame sent):
    /// the next slot with nothing queued sends a frame of silence that carries it (the stream's end, or the app's
    /// audio running dry), so that every sample enqueued is played.
    private(set) var holdsUnflushedTail = false
    /// Set on pause: the audio resumed does not go on from what the encoder last saw, so it starts afresh,
    /// primed with `priming` (streaming.md §3).
    private var resetEncoder = false
    /// What the fresh encoder is fed first after a resume, in frames of its own that no room plays: the 20 ms
    /// of audio before the resume point (taken back with it), or silence where that audio is not the one that
    /// follows (a seek) or a room would play it (a version 1 receiver, which does not echo `Lyre-Start-At`).
    /// Without it a fresh encoder's first `encoderDelay` samples are not the audio (OpusTests).
    private var priming: [Float] = []
    /// Frames of `priming` still to send before the queue's audio, and all of it, as sent at the last resume.
    private var primingLeft: [Float] = []
    private var primed: [Float] = []
    /// The RTP position of the first sample to play after a resume (`Lyre-Start-At`): the audio after the
    /// priming and the encoder's delay. Nil before the first pause.
    private(set) var startAt: UInt32?

    init(frameSamples: Int, latency: UInt64, lead: UInt64, rtp: UInt32, sequence: UInt16) {
        self.frameSamples = frameSamples
        frameNanoseconds = UInt64(frameSamples) * 1_000_000 / 48
        self.latency = latency
        historyLength = Int((latency + lead) / frameNanoseconds) + 4
        anchorRTP = rtp
        self.sequence = sequence
    }

    // MARK: the queue

    /// Samples (interleaved, two per frame) queued and not yet sent.
    var queuedSamples: Int { queue.count }

    mutating func enqueue(_ pcm: [Float]) {
        queue.append(contentsOf: pcm)
        contentEnqueued += UInt64(pcm.count / 2)
    }

    /// Pads a last part shorter than a packet with silence to a whole one.
    mutating func padToPacket() {
        let partial = (queue.count / 2) % frameSamples
        guard partial > 0 else { return }
        queue.append(contentsOf: [Float](repeating: 0, count: (frameSamples - partial) * 2))
        contentEnqueued += UInt64(frameSamples - partial)
    }

    /// Drops queued audio (a seek).
    mutating func dropQueued() {
        contentEnqueued -= UInt64(queue.count / 2)
        queue.removeAll()
        // What follows is not the audio the priming preceded: the encoder is primed with silence.
        priming = []
    }

    // MARK: anchor, pause and resume

    /// The next frame's RTP time.
    var nextRTP: UInt32 { anchorRTP &+ UInt32(truncatingIfNeeded: framesSinceAnchor * UInt64(frameSamples)) }

    /// When the next frame is due to be sent (less the lead).
    var nextDue: UInt64 { anchorClock + framesSinceAnchor * frameNanoseconds }

    var anchor: PlaybackAnchor { PlaybackAnchor(rtpTime: anchorRTP, senderClock: anchorClock) }

    /// Sets a new anchor `startDelay` from `now`, the next frame its first (a start or a resume); `backdate`
    /// (at most the latency) moves it earlier for a live source's audio recorded meanwhile. Returns what
    /// RECORD says: the anchor, the first sequence number, and where a resume starts to play.
    mutating func anchor(at now: UInt64, startDelay: UInt64, backdate: UInt64) -> (anchor: PlaybackAnchor, sequence: UInt16, startAt: UInt32?) {
        anchorRTP = nextRTP
        framesSinceAnchor = 0
        history.removeAll()
        sentPackets.removeAll()
        anchorClock = now + startDelay - min(backdate, latency)
        contentAtAnchor = contentEnqueued - UInt64(queue.count / 2)
        contentSentSinceAnchor = 0
        silenceSinceAnchor = 0
        pendingSilence = 0
        // A fresh encoder (a resume): its priming frames go first, and the rooms play from the audio after
        // them and the encoder's delay.
        startAt = resetEncoder ? anchorRTP &+ UInt32(Self.primingSamples + encoderDelay) : nil
        return (anchor, sequence, startAt)
    }

    /// The rooms answered RECORD: the pacer sends from the anchor. `echoedStart`: every room echoed
    /// `Lyre-Start-At`; a room that did not would play the priming, so then it is silence.
    mutating func began(echoedStart: Bool) {
        if startAt != nil {
            primingLeft = echoedStart && priming.count == Self.primingSamples * 2 ? priming : [Float](repeating: 0, count: Self.primingSamples * 2)
            primed = primingLeft
        }
        priming = []
        running = true
    }

    /// Stops sending. Returns the next frame's sequence number and RTP time (FLUSH's `RTP-Info`) and the RTP
    /// time of the frame due at the outputs at `now`, where the rooms stop unless they say.
    mutating func pause(at now: UInt64) -> (sequence: UInt16, rtp: UInt32, due: UInt32) {
        running = false
        return (sequence, nextRTP, dueRTP(at: now))
    }

    /// Stops for good (the playback ended).
    mutating func end() { running = false }

    /// The RTP time of the frame due at the outputs at `now` (the first not yet played, by the clock).
    func dueRTP(at now: UInt64) -> UInt32 {
        let played = now > anchorClock + latency ? (now - anchorClock - latency) / frameNanoseconds : 0
        return anchorRTP &+ UInt32(truncatingIfNeeded: played * UInt64(frameSamples))
    }

    /// Puts back in the queue, in order, the app's audio from the decoded stream's RTP position `stop` on (what
    /// no room has played), forgets what was sent, and has the encoder start afresh. A packet decodes to the last
    /// `encoderDelay` samples of the frame encoded before it and then its own, so the audio at `stop` may begin in
    /// the frame before the one that holds `stop`.
    mutating func takeBack(from stop: UInt32) {
        // Nothing after a resume plays before its start (the priming), so no room stopped before it.
        let stop = startAt.map { Int32(bitPattern: stop &- $0) < 0 ? $0 : stop } ?? stop
        let relative = Int64(Int32(bitPattern: stop &- anchorRTP))
        let samples = Int64(frameSamples)
        let slot = relative < 0 ? 0 : relative / samples
        // Where in `slot`'s own frame the audio at `stop` is, when it is there (the encoder's input offset).
        let offset = relative < 0 ? 0 : relative % samples - Int64(encoderDelay)
        var back: [Float] = []
        // Where `back` begins on the encoder's input, in samples from the anchor.
        var from: Int64?
        if offset < 0, let previous = history.last(where: { $0.index < slot }), previous.content,
            history.contains(where: { $0.index == slot })
        {
            // The audio at `stop` is the tail of the frame before, which only `slot`'s packet carried out.
            back += previous.pcm.suffix(Int(-offset) * 2)
            from = slot * samples + offset
        }
        for frame in history where frame.index >= slot && frame.content {
            let skip = frame.index == slot ? max(0, offset) : 0
            from = from ?? Int64(frame.index) * samples + skip
            back += frame.pcm.dropFirst(Int(skip) * 2)
        }
        // The encoder's input just before that: the next encoder is primed with it (silence where no frame was).
        // Paused again before any of the queue's audio went: it still follows the last priming.
        priming = startAt != nil && !history.contains(where: \.content) ? primed : [Float](repeating: 0, count: Self.primingSamples * 2)
        if let from {
            let first = from - Int64(Self.primingSamples)
            for frame in history {
                let start = Int64(frame.index) * samples
                let lower = max(first, start), upper = min(from, start + samples)
                guard lower < upper else { continue }
                priming.replaceSubrange(Int(lower - first) * 2..<Int(upper - first) * 2,
                                        with: frame.pcm.dropFirst(Int(lower - start) * 2).prefix(Int(upper - lower) * 2))
            }
        }
        queue.prepend(back)
        history.removeAll()
        sentPackets.removeAll()
        holdsUnflushedTail = false
        resetEncoder = true
    }

    // MARK: pacing

    /// True while playing and the next frame would have to wait for the app's audio (a live source is late);
    /// `finishing`: the app has no more, so a part frame goes padded.
    func awaitsAudio(finishing: Bool) -> Bool {
        running && !finishing && primingLeft.isEmpty && queue.count < frameSamples * 2
    }

    /// The next slot: a resume's priming, the queue's next frame, the frame of silence that carries the encoder's
    /// tail out after the app's audio, or nothing (the slot passes in silence). Nil while not running.
    mutating func nextSlot(finishing: Bool) -> Slot? {
        guard running else { return nil }
        let samplesPerFrame = frameSamples * 2
        let index = framesSinceAnchor
        let rtp = nextRTP
        framesSinceAnchor += 1
        if !primingLeft.isEmpty {
            // A fresh encoder's priming (after a resume): sent, and played by no room (`startAt`).
            let pcm = ArraySlice(primingLeft.prefix(samplesPerFrame))
            primingLeft.removeFirst(pcm.count)
            pendingSilence += UInt64(frameSamples)
            keep((index, pcm, false))
            defer { sequence &+= 1; resetEncoder = false }
            return Slot(index: index, sequence: sequence, rtp: rtp, pcm: pcm, resetsEncoder: resetEncoder)
        }
        if queue.count >= samplesPerFrame || (finishing && !queue.isEmpty) {
            var pcm = queue.take(samplesPerFrame)
            contentSentSinceAnchor += UInt64(pcm.count / 2)
            silenceSinceAnchor += pendingSilence
            pendingSilence = 0
            if pcm.count < samplesPerFrame { pcm.append(contentsOf: repeatElement(0, count: samplesPerFrame - pcm.count)) }
            keep((index, pcm, true))
            holdsUnflushedTail = true
            defer { sequence &+= 1; resetEncoder = false }
            return Slot(index: index, sequence: sequence, rtp: rtp, pcm: pcm, resetsEncoder: resetEncoder)
        }
        pendingSilence += UInt64(frameSamples)
        if holdsUnflushedTail {
            // The first slot with nothing queued after audio: a frame of silence carries the last
            // `encoderDelay` samples of that audio out of the encoder, so a stream never ends cut.
            holdsUnflushedTail = false
            let silence = ArraySlice(repeatElement(Float(0), count: samplesPerFrame))
            keep((index, silence, false))
            defer { sequence &+= 1 }
            return Slot(index: index, sequence: sequence, rtp: rtp, pcm: silence, resetsEncoder: false)
        }
        return Slot(index: index, sequence: sequence, rtp: rtp, pcm: nil, resetsEncoder: false)
    }

    /// Keeps a frame just taken for a pause to take back, and as many before it as can still be unplayed.
    private mutating func keep(_ frame: (index: UInt64, pcm: ArraySlice<Float>, content: Bool)) {
        history.append(frame)
        if history.count > historyLength { history.removeFirst(history.count - historyLength) }
    }

    /// The packet encoded from `slot` is sent: kept for rooms that join and for resends. False when it must
    /// not go: paused since the slot was taken, so its audio was taken back.
    mutating func sent(_ bytes: [UInt8], for slot: Slot) -> Bool {
        guard running, slot.index < framesSinceAnchor else { return false }
        sentPackets.append((slot.index, slot.sequence, bytes))
        if sentPackets.count > history.count { sentPackets.removeFirst(sentPackets.count - history.count) }
        return true
    }

    /// The packet with RTP sequence number `sequence` among those sent and kept (the latency and the lead
    /// and a few frames more: everything a receiver can still play), for a receiver that asks for it again.
    func keptPacket(_ sequence: UInt16) -> [UInt8]? {
        // Sent packets have consecutive sequence numbers: the one wanted is found by its distance.
        guard let first = sentPackets.first else { return nil }
        let distance = Int(sequence &- first.sequence)
        guard distance < sentPackets.count, sentPackets[distance].sequence == sequence else { return nil }
        return sentPackets[distance].bytes
    }

    /// The packets sent that a room joining at `now` can still play (at least one frame before they are due,
    /// streaming.md §9.3), in order; none while paused.
    func packetsStillDue(at now: UInt64) -> [[UInt8]] {
        guard running else { return [] }
        let firstDue = now + frameNanoseconds > anchorClock + latency ? (now + frameNanoseconds - anchorClock - latency) / frameNanoseconds + 1 : 0
        return sentPackets.filter { $0.index >= firstDue }.map(\.bytes)
    }

    // MARK: clock and content positions

    /// The stream's RTP timestamp for sender-clock time `now` on the current anchor (for sender reports).
    func rtpTime(at now: UInt64) -> UInt32 {
        let since = Int64(bitPattern: now &- anchorClock &- latency) * 48 / 1_000_000
        return anchorRTP &+ UInt32(truncatingIfNeeded: since)
    }

    /// Sender-clock time at which what has been sent so far will have played.
    var sentUntil: UInt64 { anchorClock + framesSinceAnchor * frameNanoseconds + latency }

    /// How many enqueued frames have played by `now`.
    func playedFrames(at now: UInt64) -> UInt64 {
        guard running else { return contentEnqueued - UInt64(queue.count / 2) }
        let start = anchorClock + latency
        let elapsed = now > start ? (now - start) * 48 / 1_000_000 : 0
        return contentAtAnchor + min(contentSentSinceAnchor, elapsed > silenceSinceAnchor ? elapsed - silenceSinceAnchor : 0)
    }

    /// Sender-clock time at which enqueued frame `frame` plays, while playing; nil while paused.
    func playTime(ofFrame frame: UInt64) -> UInt64? {
        guard running else { return nil }
        let offset = Int64(frame) - Int64(contentAtAnchor) + Int64(silenceSinceAnchor)
        return UInt64(Int64(anchorClock + latency) + offset * 1_000_000 / 48)
    }
}

/// The samples waiting to be sent. The pacing thread takes a frame from the front every 5–20 ms; taking
/// moves a read index instead of shifting the whole queue, which is compacted now and then.
private struct SampleQueue {
    private var storage: [Float] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(contentsOf samples: [Float]) { storage += samples }

    /// Puts samples back at the front (audio taken back on pause).
    mutating func prepend(_ samples: [Float]) {
        storage = samples + storage[head...]
        head = 0
    }

    /// Up to `n` samples from the front.
    mutating func take(_ n: Int) -> ArraySlice<Float> {
        let end = min(head + n, storage.count)
        let taken = ArraySlice(storage[head..<end])
        head = end
        if head >= 48_000, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return taken
    }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        head = 0
    }
}

/// A pacer catching up after the sender was stopped (streaming.md §9.1): the frames it ran through whose time to
/// play had passed, how many of them passed in silence because the app's audio was not there yet, and until
/// when such frames wait for it.
struct CatchUp: Equatable {
    /// All of a catch-up's waits for the app's audio end by then.
    let waitUntil: UInt64
    private(set) var frames = 0
    private(set) var silent = 0

    init(waitUntil: UInt64) { self.waitUntil = waitUntil }

    /// A frame run through; `starved`: the app's audio was not there for it (`Timeline.awaitsAudio`).
    mutating func count(starved: Bool) {
        frames += 1
        if starved { silent += 1 }
    }

    /// The line the sender logs when the catch-up is over.
    func summary(frameMilliseconds: Int) -> String {
        let moved = silent == 0 ? "every sample after it plays where it was due"
            : "\(silent) of them passed in silence, the app's audio late, and what follows plays \(silent * frameMilliseconds) ms later"
        return "the sender was stopped or held up: \(frames) frames (\(frames * frameMilliseconds) ms) could no longer play and were skipped; \(moved)"
    }
}
