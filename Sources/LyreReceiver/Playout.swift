import LyreAudio
import LyreCodec
import LyreWire

/// Counters a session reports (streaming.md §3 `stats`).
public struct PlayoutStatistics: Sendable, Equatable, Encodable {
    public var received = 0
    public var late = 0
    public var lost = 0
    public var concealed = 0
    public var recoveredByFEC = 0
    /// Sequence numbers asked for again (streaming.md §4.1), repeats included, and packets that came after.
    public var requested = 0
    public var recovered = 0
    public var duplicates = 0
    public var overflowed = 0
    public var malformed = 0
    public var foreign = 0
    /// SRTP packets dropped (Protocol/pairing.md §6): seen before, or failing authentication.
    public var replayed = 0
    public var unauthentic = 0
    public var corrections = 0
    /// How many times the output locked in tune: whole input samples at exactly the input's rate (§6.1).
    public var tuned = 0
    /// How far the drift correction runs the input faster (+) or slower (−) than the output, ppm.
    public var ratePPM: Double?
    /// The skew the controller has learnt (its integral), ppm: the steady part of `ratePPM`, without the
    /// moment's correction of the schedule error.
    public var skewPPM: Double?
    public var depthMilliseconds = 0.0
    /// Interarrival jitter (RFC 3550 A.8), ms.
    public var jitterMilliseconds = 0.0
    public var clockOffsetMicroseconds: Double?
    public var clockDelayMicroseconds: Double?
    public var driftPPM: Double?
    /// Timing answers the clock filter left out as outliers, and steps of the sender's clock it followed
    /// (streaming.md §5.1); in `text` only when not 0.
    public var clockOutliers = 0
    public var clockSteps = 0
    /// Times libopus refused to repair or conceal a gap (streaming.md §6.1): refused in-band FEC (a gap that is
    /// no whole number of 2.5 ms), concealed by libopus instead; refused concealment, played as silence. In
    /// `text` only when not 0.
    public var decoderRefusals = 0

    public var text: String {
        var parts = [
            "received=\(received)", "late=\(late)", "lost=\(lost)", "concealed=\(concealed)", "fec=\(recoveredByFEC)",
            "nack=\(requested)", "recovered=\(recovered)", "duplicates=\(duplicates)",
            "foreign=\(foreign)", "malformed=\(malformed)", "replayed=\(replayed)", "unauthentic=\(unauthentic)", "corrections=\(corrections)", "tuned=\(tuned)",
            "depth-ms=\(Int(depthMilliseconds.rounded()))",
        ]
        if let clockOffsetMicroseconds { parts.append("offset-us=\(Int(clockOffsetMicroseconds.rounded()))") }
        if let clockDelayMicroseconds { parts.append("rtt-us=\(Int(clockDelayMicroseconds.rounded()))") }
        if let driftPPM { parts.append("drift-ppm=\((driftPPM * 100).rounded() / 100)") }
        if let ratePPM { parts.append("rate-ppm=\((ratePPM * 100).rounded() / 100)") }
        if let skewPPM { parts.append("skew-ppm=\((skewPPM * 100).rounded() / 100)") }
        if clockOutliers > 0 || clockSteps > 0 { parts.append("clock-outliers=\(clockOutliers) clock-steps=\(clockSteps)") }
        if decoderRefusals > 0 { parts.append("decoder-refusals=\(decoderRefusals)") }
        return parts.joined(separator: " ")
    }
}

/// One line of the presentation log: when a block's first sample was due and when it left the output.
public struct PresentationRecord: Sendable {
    public var rtpTime: UInt32
    /// On the sender's clock.
    public var scheduled: UInt64
    /// On the receiver's clock (the same clock when both run on one host).
    public var presented: UInt64
    /// Frames of the block that came from the stream (the rest is silence or concealment).
    public var audioFrames: Int = 0
}

/// Turns a session's packets into samples at the right time (streaming.md §6).
///
/// Fed from the network (packets, anchors, flushes, timing samples) and drained by the output thread
/// (`render`). Pure apart from the Opus decoder: no I/O, no locks; `PlayoutController` adds the lock.
public struct Playout: ~Copyable {
    public let format: AudioFormat
    /// Target latency, ns.
    public let latency: UInt64
    /// True when the sender takes part in the timing exchange; else samples play on arrival (§6.2).
    public let timed: Bool
    /// Which of the stream's channels this room plays (`Lyre-Channels`).
    public let channels: ChannelMap
    public private(set) var statistics = PlayoutStatistics()
    public private(set) var clock = ClockOffsetEstimator()

    private var buffer = JitterBuffer()
    private var requests = RetransmissionRequests()
    private var reception = ReceptionStatistics()
    /// FEC repair (§4.3), only when the sender sends FEC: it keeps every packet that comes.
    private var repair: FECRepair?
    private let decoder: OpusDecoder?
    private var anchor: (rtp: UInt32, senderClock: UInt64)?
    private var recording = false
    /// Decoded samples (interleaved stereo) starting at RTP position `stagedStart`.
    private var staged: [Int16] = []
    private var stagedStart: Int64 = 0
    /// Where the last concealment staged ends (input position).
    private var concealedEnd: Int64 = .min
    /// What `fill` did, for the tests that bound its work on a sender's stale audio: frames libopus concealed,
    /// and the most frames staged at once.
    struct Work { var concealedByLibopus = 0; var peakStaged = 0 }
    private(set) var work = Work()
    /// Frames `stageSilence` dropped before the output's first block that its count of audio skipped (in
    /// `renderBlock`) would have counted: added to that count there.
    private var skippedUnstaged = 0
    /// Input positions the output went past with nothing staged (the buffer ran dry), not yet counted.
    private var starved: (from: Int64, to: Int64)?
    /// True once something of this recording has been staged, so that `stagedStart` means something.
    private var staging = false
    /// The recording joined a playback under way and has not put audio out yet (`record(joining:)`).
    private var startingMidStream = false
    /// The first input position to put out (`Lyre-Start-At`, extended): what decodes before it primes the
    /// decoder after a resume and is dropped, so the output is silent until it.
    private var startAt: Int64?
    /// Next input position to read, in extended RTP time.
    private var cursor: Int64?
    /// True once this recording has put audio out: until then the cursor follows the clock estimate
    /// exactly, because moving through silence cannot be heard. From then on the output is interpolated
    /// at fractional input positions (`position`), at a rate that keeps it on the schedule.
    private var audible = false
    /// Drift correction (streaming.md §6.1): band-limited interpolation of the decoded stream at a rate
    /// steered by a PI controller from the schedule error; never a dropped or repeated sample.
    private static let interpolator = SincInterpolator()
    /// How far off the schedule (frames) the output jumps back onto it rather than steering: 5 ms, past any
    /// error a device's own timestamps make (a stall, a clock step). A sound server's estimate of its latency
    /// (`PCMSink.estimatesPresentation`) stepped by 18 to 20 ms with nothing heard moving, and each jump
    /// then cut that much out of the song; for those only 50 ms is a stall, and less is steered out.
    static let jumpFrames = 240.0
    static let estimatedJumpFrames = 2400.0
    /// The largest rate change the correction makes: ±1000 ppm, beyond any real crystal's error.
    static let maximumDeviation = 0.001
    /// The largest skew the integral learns (±500 ppm), and the largest error it learns from (0.5 ms).
    static let maximumSkew = 0.0005
    static let integrationLimit = 0.0005
    /// The input position (fractional extended RTP time) of the next output frame.
    private var position = 0.0
    private var ratio = 1.0
    /// The controller's integral: the rate the output needs in the long run (the DAC's skew). Kept across
    /// restarts, since it belongs to the device more than to the stream.
    private var integral = 0.0
    /// In tune (streaming.md §6.1): while the learned skew is under `tuneSkew`, the output is the input sample
    /// for sample, at whole positions and exactly its rate, as long as that keeps it within `tuneRelease`
    /// samples of the schedule. A rate that followed only the clock estimate's noise (a ppm or two) would
    /// move every output sample by a wandering fraction of a sample, for nothing.
    private var inTune = false
    static let tuneSkew = 2e-6
    /// Locks in tune once the error is within half a sample (10 µs); leaves past two samples (42 µs), which
    /// the clock estimate's early wander (a ppm or two until its samples span a minute) stays within for tens
    /// of seconds.
    static let tuneCapture = 0.5
    static let tuneRelease = 2.0
    /// The controller's time constants, s: proportional and integral (critically damped: Ti = 4·Tp).
    static let proportionalTime = 0.25
    static let integralTime = 1.0
    /// Extended RTP time: RTP timestamps unwrapped around the anchor.
    private var lastExtended: Int64?
    /// The length of the last packet decoded: what an undecodable one after it is taken to have lasted.
    private var lastPacketFrames = 480

    public init(format: AudioFormat, latency: UInt64, timed: Bool, channels: ChannelMap = .stereo) throws {
        self.format = format
        self.latency = latency
        self.timed = timed
        self.channels = channels
        decoder = format.encoding == .opus ? try OpusDecoder() : nil
        // The kernel table is built on first use: here, at SETUP on the event loop, not in the audio thread's
        // first audible block (it took long enough there to underrun a PulseAudio sink).
        _ = Self.interpolator.halfLength
    }

    // MARK: network side

    /// `joining`: the room joins a playback under way (RECORD without RTP-Info, streaming.md §9.3): the packets it
    /// was sent whose time has passed by its first block are skipped, as when any session starts late, but they
    /// were never going to be heard here, so they are no gap and not counted as concealed.
    /// `startAt`: the first input position to put out (`Lyre-Start-At`, streaming.md §3); the audio before it
    /// is decoded, so that the decoder is primed, and dropped.
    public mutating func record(anchor: PlaybackAnchor?, joining: Bool = false, startAt: UInt32? = nil) {
        recording = true
        startingMidStream = joining
        if let anchor { self.anchor = (anchor.rtpTime, anchor.senderClock) }
        if let startAt { self.startAt = extended(startAt) }
    }

    /// The RTP time of the recording's first sample to put out (`Lyre-Start-At`, else the anchor's), once it
    /// records: where an overlay's `DuckEnvelope` position counts from.
    public var firstPosition: UInt32? {
        guard recording else { return nil }
        return startAt.map { UInt32(truncatingIfNeeded: $0) } ?? anchor?.rtp
    }

    /// Stops at once: what is staged and not yet put out is dropped. Returns the RTP position of the first
    /// input sample not put out, when audio was playing (`Lyre-Stopped-At`, streaming.md §3), so that the
    /// sender resumes from exactly there. When the output ran past the audio it had (a sender stops sending
    /// when it pauses, before its FLUSH arrives), it put silence out from where that audio ended: the first
    /// sample not heard is there, not where the output's position is.
    @discardableResult
    public mutating func flush(nextSequence: UInt16?) -> UInt32? {
        let next = Int64(position.rounded(.up))
        let stopped = audible ? UInt32(truncatingIfNeeded: min(next, starved?.from ?? next)) : nil
        buffer.flush(nextSequence: nextSequence)
        requests.reset(next: buffer.nextDue)
        reception.restart(next: buffer.nextDue)
        repair?.reset()
        // What comes after a FLUSH is a new encoder stream (the sender starts its encoder afresh, §3).
        decoder?.reset()
        staged.removeAll()
        skippedUnstaged = 0
        staging = false
        starved = nil
        cursor = nil
        audible = false
        inTune = false
        anchor = nil
        startAt = nil
        recording = false
        return stopped
    }

    public mutating func addTimingSample(localTime: UInt64, offset: Int64, delay: Int64) {
        clock.add(localTime: localTime, offset: offset, delay: delay)
        statistics.clockOffsetMicroseconds = clock.offset.map { Double($0) / 1000 }
        statistics.clockDelayMicroseconds = clock.delay.map { Double($0) / 1000 }
        statistics.driftPPM = clock.driftPPM
        statistics.clockOutliers = clock.outliers
        statistics.clockSteps = clock.steps
    }

    public mutating func countForeign() { statistics.foreign += 1 }
    public mutating func countMalformed() { statistics.malformed += 1 }
    public mutating func countReplayed() { statistics.replayed += 1 }
    public mutating func countUnauthentic() { statistics.unauthentic += 1 }

    /// A packet arrived at local time `arrival`. Returns the sequence numbers it shows missing, for the
    /// sender to send again (when it does: streaming.md §4.1).
    @discardableResult
    public mutating func receive(_ packet: RTPPacket, arrival: UInt64) -> [UInt16] {
        guard packet.payloadType == format.payloadType else {
            statistics.malformed += 1
            return []
        }
        statistics.received += 1
        if !timed, recording, anchor == nil { anchor = (packet.timestamp, arrival) }
        let sequence = buffer.extend(packet.sequenceNumber)
        reception.arrived(sequence: sequence, timestamp: packet.timestamp, arrival: arrival)
        statistics.jitterMilliseconds = reception.jitterMilliseconds
        var missing: [Int64] = []
        switch buffer.insert(packet) {
        case .accepted:
            missing = requests.arrived(sequence, now: arrival) { [buffer] in buffer.contains($0) }
        case .late: statistics.late += 1
        case .duplicate: statistics.duplicates += 1
        case .overflowed: statistics.overflowed += 1
        }
        if let rebuilt = repair?.media(packet) { insertRebuilt(rebuilt) }
        countRequests()
        return missing.map { UInt16(truncatingIfNeeded: $0) }
    }

    /// An FEC packet arrived (streaming.md §4.3): the packet it rebuilds, if any, goes into the buffer.
    public mutating func receiveParity(_ parity: FECPacket) {
        if let rebuilt = repair?.parity(parity) { insertRebuilt(rebuilt) }
        countRequests()
    }

    /// Packets rebuilt from FEC: into the buffer when still wanted, and not to be asked for again. One rebuilt
    /// after its samples were due (its parity came late) is counted `late`, as an original would be.
    private mutating func insertRebuilt(_ packets: [RTPPacket]) {
        for packet in packets {
            let sequence = buffer.extend(packet.sequenceNumber)
            switch buffer.insert(packet) {
            case .accepted:
                statistics.recoveredByFEC += 1
                requests.repaired(sequence)
            case .late: statistics.late += 1
            case .duplicate, .overflowed: break
            }
        }
    }

    /// The missing packets to ask for again at local time `now`: those that can still be played.
    public mutating func retransmissionsDue(now: UInt64) -> [UInt16] {
        let again = requests.due(now: now, oldestUseful: buffer.nextDue) { [buffer] in buffer.contains($0) }
        countRequests()
        return again.map { UInt16(truncatingIfNeeded: $0) }
    }

    /// Whether the sender sends FEC packets (§4.3), so that recent packets are kept to rebuild from.
    public var repairsFromFEC: Bool {
        get { repair != nil }
        set { repair = newValue ? repair ?? FECRepair() : nil }
    }

    /// Whether gaps are asked for again (the sender takes NACKs, §4.1); they are counted either way.
    public var asksForResends: Bool {
        get { requests.asking }
        set { requests.asking = newValue }
    }

    /// The sender says it has sent up to `report.highestSequence` (streaming.md §4.1): what has not come of it
    /// soon is asked for (the last packets of a stream, which no later packet shows missing).
    public mutating func senderSent(_ report: LyreSentReport, arrival: UInt64) {
        requests.sent(through: buffer.extend(report.highestSequence), now: arrival)
    }

    /// A sender report arrived at local time `arrival` (streaming.md §4.2).
    public mutating func senderReport(_ report: RTCPSenderReport, arrival: UInt64) {
        reception.senderReport(ntpTime: report.ntpTime, arrival: arrival)
    }

    /// The receiver report and Lyre's reception report for the stream `mediaSSRC`, as one compound RTCP
    /// datagram from `receiverSSRC` at local time `now` (streaming.md §4.2).
    public mutating func receptionReport(receiverSSRC: UInt32, mediaSSRC: UInt32, now: UInt64) -> [UInt8] {
        let block = reception.block(ssrc: mediaSSRC, now: now)
        let lyre = LyreReceptionReport(
            ssrc: receiverSSRC, mediaSSRC: mediaSSRC, missed: UInt32(clamping: requests.missed),
            recoveredByRetransmission: UInt32(clamping: statistics.recovered), recoveredByFEC: UInt32(clamping: statistics.recoveredByFEC),
            lost: UInt32(clamping: statistics.lost), concealedFrames: UInt32(clamping: statistics.concealed))
        return RTCPPacket.compound([RTCPReceiverReport(ssrc: receiverSSRC, blocks: [block]).serialized(), lyre.serialized()])
    }

    /// When `retransmissionsDue` next has something to ask for again.
    public var nextRetransmission: UInt64? { requests.nextRetry }

    private mutating func countRequests() {
        statistics.requested = requests.requested
        statistics.recovered = requests.recovered
    }

    // MARK: output side

    /// True when everything received has been played (or nothing is recording).
    public var isDrained: Bool { !recording || (buffer.isEmpty && staged.isEmpty) }

    /// Where the audio this recording put out ran out, in frames from `firstPosition` to just after its last
    /// audio frame, while the output goes on past it; nil before any audio came out and while audio plays.
    /// What an announcement's duck comes back from (`DuckEnvelope`, streaming.md §7): a position of the
    /// stream, the same in every room. Kept by the playout, not by whoever renders it, so that a session
    /// whose audio ended while it played alone, and then goes on as an overlay, has already come back up.
    public private(set) var audioEnd: Int64?
    /// Audio has come out of this recording.
    private var putOutAudio = false

    /// `frames` stereo frames to present at local time `presentation`, and a log record when playing.
    ///
    /// `outputDelay` (ns, may be negative) is how long what is plugged into the output (an AV receiver, a
    /// soundbar) holds the sound after it leaves: the block presented at `presentation` is heard
    /// `outputDelay` later, so it carries the samples due then (`lyred --output-delay`, streaming.md §6.3).
    /// `estimated`: `presentation` is a sound server's estimate (`PCMSink.estimatesPresentation`), and only
    /// `estimatedJumpFrames` off the schedule is a jump.
    public mutating func render(frames: Int, presentation: UInt64, outputDelay: Int64 = 0, estimated: Bool = false) -> ([Int16], PresentationRecord?) {
        let (samples, record) = renderBlock(frames: frames, presentation: presentation, outputDelay: outputDelay,
                                            jumpFrames: estimated ? Self.estimatedJumpFrames : Self.jumpFrames)
        let audio = record?.audioFrames ?? 0
        if audio == frames || (audio > 0 && audioEnd != nil) {
            // Audio plays, or came again in this block (what ran out is not what this block holds: that block
            // set the end): the duck goes back down from this block, not the next.
            audioEnd = nil
        } else if putOutAudio, audioEnd == nil, let record, let first = firstPosition {
            // It ran out in this block, after the audio the block still holds.
            audioEnd = Int64(Int32(bitPattern: record.rtpTime &- first)) + Int64(audio)
        }
        if audio > 0 { putOutAudio = true }
        return (samples, record)
    }

    private mutating func renderBlock(frames: Int, presentation: UInt64, outputDelay: Int64, jumpFrames: Double) -> ([Int16], PresentationRecord?) {
        var out = [Int16](repeating: 0, count: frames * 2)
        guard recording, let anchor, let offset = timed ? clock.offset(at: presentation) : 0 else { return (out, nil) }
        let anchorExtended = extended(anchor.rtp)
        let heard = Int64(bitPattern: presentation) &+ outputDelay
        let sinceAnchor = heard &+ offset &- Int64(bitPattern: anchor.senderClock &+ latency)
        // The input position due at this block's first frame: ns × 48000 / 1e9, fractional.
        let due = Double(anchorExtended) + Double(sinceAnchor) * 48e-6
        if audible, abs(due - position) > jumpFrames {
            // Far off (a stall, a clock step): start again on the schedule.
            statistics.corrections += 1
            audible = false
            inTune = false
            starved = nil
        }
        if !audible {
            let start = Int64(due.rounded())
            cursor = start
            fill(until: start + Int64(frames))
            // Audio due before this block that came too late (the first packets resent or rebuilt after their
            // time, or a restart after a stall): it is skipped, and heard as silence, so it counts as concealed
            // (concealment staged there already counted when it was made).
            let skipFrom = max(stagedStart, concealedEnd)
            if !startingMidStream {
                statistics.concealed += skippedUnstaged + stagedFrames(from: skipFrom, count: Int(max(0, start - skipFrom)))
            }
            skippedUnstaged = 0
            guard stagedFrames(from: start, count: frames) > 0 else {
                // Nothing to hear in this block: silence, and the cursor moves on with the schedule.
                cursor = start + Int64(frames)
                dropPlayed()
                updateDepth()
                return (out, PresentationRecord(rtpTime: UInt32(truncatingIfNeeded: start), scheduled: scheduled(Double(start), anchor, anchorExtended), presented: presentation))
            }
            // Audio from here on, interpolated from the schedule's own position.
            audible = true
            startingMidStream = false
            position = Double(start)
        }
        if inTune, abs(due - position) > Self.tuneRelease { inTune = false }
        if inTune {
            ratio = 1
        } else if abs(integral) < Self.tuneSkew, abs(due - position) <= Self.tuneCapture {
            // Into tune: this block ends on the whole sample nearest the schedule (a bend of at most a sample
            // over one block, 0.2 % for 10 ms; none when the position is whole already, as at a start).
            inTune = true
            statistics.tuned += 1
            ratio = (due.rounded() - position) / Double(frames) + 1
        } else {
            // PI controller: the error becomes a rate; the integral absorbs a steady skew (the DAC's crystal
            // against the sender's clock), so the error itself settles at zero.
            let error = (due - position) / 48000  // s; > 0: the output is behind, read the input faster
            let blockSeconds = Double(frames) / 48000
            let bound = Self.maximumDeviation
            // Anti-windup: the integral learns the skew only from small errors. A large one is a step in what
            // the output reports (PulseAudio's latency moving by milliseconds), not a rate, and the
            // proportional term alone takes it out; integrating it would leave the rate pinned at the bound
            // long after.
            if abs(error) < Self.integrationLimit {
                integral = min(max(integral + error * blockSeconds / (Self.integralTime * Self.proportionalTime), -Self.maximumSkew), Self.maximumSkew)
            }
            ratio = 1 + min(max(integral + error / Self.proportionalTime, -bound), bound)
        }
        statistics.ratePPM = (ratio - 1) * 1e6
        statistics.skewPPM = integral * 1e6
        let record = PresentationRecord(
            rtpTime: UInt32(truncatingIfNeeded: Int64(position.rounded())),
            scheduled: scheduled(position, anchor, anchorExtended), presented: presentation)

        // The input this block reads: the kernel's reach either side of the positions it interpolates at.
        let reach = Int64(Self.interpolator.halfLength)
        let end = position + Double(frames - 1) * ratio
        let low = Int64(position.rounded(.down)) - reach + 1
        let high = Int64(end.rounded(.down)) + reach
        fill(until: high + 1)
        let audioFrames = stagedFrames(from: Int64(position.rounded(.up)), count: frames)
        if ratio == 1, position == position.rounded() {
            // In tune: the input itself.
            copyStaged(from: Int64(position), into: &out)
        } else {
            let input = stagedFloats(from: low, count: Int(high - low + 1))
            let first = position - Double(low)
            let step = ratio
            input.withUnsafeBufferPointer { source in
                out.withUnsafeMutableBufferPointer { output in
                    for j in 0..<frames {
                        let (l, r) = Self.interpolator.stereo(source, at: first + Double(j) * step)
                        output[2 * j] = Int16(max(-32768, min(32767, l.rounded())))
                        output[2 * j + 1] = Int16(max(-32768, min(32767, r.rounded())))
                    }
                }
            }
        }
        position += Double(frames) * ratio
        // Landing in tune ends on a whole sample: no rounding error carried into the blocks that follow.
        if inTune { position = position.rounded() }
        if Int64(position.rounded(.down)) > stagedEnd { starved = (starved?.from ?? stagedEnd, Int64(position.rounded(.down))) }
        // Keep what the next block's kernel reaches back to.
        cursor = Int64(position.rounded(.down)) - reach + 1
        channels.apply(to: &out)
        dropPlayed()
        updateDepth()
        var logged = record
        logged.audioFrames = audioFrames
        return (out, logged)
    }

    /// The sender-clock time input position `position` is due.
    private func scheduled(_ position: Double, _ anchor: (rtp: UInt32, senderClock: UInt64), _ anchorExtended: Int64) -> UInt64 {
        let since = (position - Double(anchorExtended)) * 1e9 / 48000
        return UInt64(bitPattern: Int64(bitPattern: anchor.senderClock &+ latency) &+ Int64(since.rounded()))
    }

    /// How many of the `count` frames from input position `from` are staged (audio, not silence).
    private func stagedFrames(from: Int64, count: Int) -> Int {
        return Int(max(0, min(from + Int64(count), stagedEnd) - max(from, stagedStart)))
    }

    /// `count` frames of what is staged from input position `from`, as float for the interpolator, with
    /// silence where nothing is.
    private func stagedFloats(from: Int64, count: Int) -> [Float] {
        var chunk = [Float](repeating: 0, count: count * 2)
        forStaged(from: from, count: count) { dst, source in
            chunk.withUnsafeMutableBufferPointer { o in
                for i in source.indices { o[dst + i] = Float(source[i]) }
            }
        }
        return chunk
    }

    /// What is staged from input position `from` into `out` as it is, with silence where nothing is.
    private func copyStaged(from: Int64, into out: inout [Int16]) {
        forStaged(from: from, count: out.count / 2) { dst, source in
            out.withUnsafeMutableBufferPointer { o in
                for i in source.indices { o[dst + i] = source[i] }
            }
        }
    }

    /// Calls `body` with the staged samples of the `count` frames from input position `from` (none when
    /// nothing is staged there), and the index among those frames' samples of the first of them.
    private func forStaged(from: Int64, count: Int, _ body: (Int, UnsafeBufferPointer<Int16>) -> Void) {
        let n = stagedFrames(from: from, count: count) * 2
        guard n > 0 else { return }
        let lower = max(from, stagedStart)
        let src = Int(lower - stagedStart) * 2
        staged.withUnsafeBufferPointer { s in
            body(Int(lower - from) * 2, UnsafeBufferPointer(rebasing: s[src..<(src + n)]))
        }
    }

    /// Drops staged samples before the cursor: they have gone into the output (or were skipped).
    private mutating func dropPlayed() {
        guard let cursor else { return }
        let keepFrom = min(max(cursor - stagedStart, 0), Int64(staged.count / 2))
        if keepFrom > 0 {
            staged.removeFirst(Int(keepFrom) * 2)
            stagedStart += keepFrom
        }
    }

    private mutating func updateDepth() {
        guard let cursor else { return }
        if let last = buffer.last {
            statistics.depthMilliseconds = max(0, Double(extended(last.packet.timestamp) - cursor) / 48)
        } else {
            statistics.depthMilliseconds = max(0, Double(stagedEnd - cursor) / 48)
        }
    }

    /// Decodes packets in sequence order until samples reach `end` or the buffer runs dry, concealing gaps.
    ///
    /// Nothing is taken before its time: a missing packet is concealed only once the audio before it is all
    /// staged and its own time falls within `end`, one missing packet at a time (all at once when more are
    /// missing than their time holds at 2.5 ms each: a sequence number that jumped), and the first packet of a
    /// recording waits until it is due. Until then a resend or a rebuild may still bring what is missing (or
    /// a reordered earlier packet); once the buffer has moved past a packet, it is late for good.
    private mutating func fill(until end: Int64) {
        defer { work.peakStaged = max(work.peakStaged, staged.count / 2) }
        while stagedEnd < end, let head = buffer.first {
            let stagedSoFar = stagedEnd
            let position = extended(head.packet.timestamp)
            if let due = buffer.nextDue, head.sequence > due {
                // From the end of what is staged or, before anything is, from the anchor's time (the first
                // packet's, RECORD's RTP-Info): losing the first packets loses anchor…position.
                let from = staging ? stagedSoFar : (anchor.map { extended($0.rtp) } ?? position)
                guard from < end else { break }
                // The missing packets share the time up to this one; the first of them is concealed now. More
                // missing than their time holds at 2.5 ms each (Opus's shortest frame) is a sequence that jumped,
                // not that many packets lost: all of them are concealed at once, for the time up to this one.
                // One at a time, a jump of tens of thousands cost as many concealments in one render, and the
                // event loop, waiting for the playout's lock, answered nobody for seconds.
                let missing = head.sequence - due
                let span = max(0, min(position - from, 48000))
                let together = missing > 1 && span / missing < Int64(OpusFormat.shortestFrame)
                let count = together ? missing : 1
                let gap = Int(together ? span : span / missing)
                statistics.lost += Int(count)
                if staged.isEmpty {
                    stagedStart = position - span
                    // Packets missing for longer than concealment reaches (a second: a link down for seconds):
                    // the output went on in silence before it, and that silence was the loss's too.
                    if let starved, stagedStart > starved.from {
                        statistics.concealed += Int(min(stagedStart, starved.to) - starved.from)
                        self.starved = stagedStart >= starved.to ? nil : (stagedStart, starved.to)
                    }
                }
                staging = true
                conceal(frames: gap, before: missing == 1 ? head.packet : nil)
                concealedEnd = stagedEnd
                skippedUnstaged = 0  // all before the concealment's end, which the count starts from
                // Counted as concealed already, starved or not.
                if let starved { self.starved = concealedEnd >= starved.to ? nil : (max(starved.from, concealedEnd), starved.to) }
                buffer.nextDue = due + count
                continue
            }
            if !staging, position >= end { break }
            let jump = position < stagedSoFar - 48000 || position > stagedSoFar + 48000
            if !staged.isEmpty, position < stagedSoFar - 48000, let past = behindOutput, position + 24000 <= past {
                // Stamped more than a second back from what is staged, and half a second and more behind the output
                // (a sender's timestamps gone wrong; longer than any packet lasts): never heard, so it is dropped
                // undecoded, and counted `late` like any packet that came after its time.
                _ = buffer.removeFirst()
                statistics.late += 1
                continue
            }
            if !staged.isEmpty, jump, let past = behindOutput, stagedSoFar > past {
                // A jump in the timeline while what is staged is still to be heard (the first packet after a pause
                // of more than a second, already here): it waits until the output has gone past what is staged.
                // Restarting staging now dropped what was staged for the blocks to come, which cut the end of the
                // audio before the jump by up to a block and the interpolator's reach.
                break
            }
            _ = buffer.removeFirst()
            if staged.isEmpty || jump {
                // First packet, or a jump in the timeline (resume, a new talk spurt): restart staging here.
                staged.removeAll()
                skippedUnstaged = 0
                stagedStart = position
                staging = true
            } else if position > stagedSoFar {
                stageSilence(frames: Int(position - stagedSoFar))
            } else if position < stagedSoFar {
                // Overlaps what is staged (already concealed): keep the decoder in step, drop the overlap.
                var scratch: [Int16] = []
                let concealedFrames = decode(head.packet, sequence: head.sequence, into: &scratch)
                let overlap = Int(min(stagedSoFar - position, Int64(scratch.count / 2)))
                staged.append(contentsOf: scratch.dropFirst(overlap * 2))
                if concealedFrames > 0 { countConcealed(from: stagedSoFar, to: stagedEnd) }
                continue
            }
            // Decoded straight onto the end of `staged` (moved out and back: no copy, no scratch buffer).
            var target: [Int16] = []
            swap(&target, &staged)
            let concealedFrames = decode(head.packet, sequence: head.sequence, into: &target)
            swap(&target, &staged)
            if concealedFrames > 0 {
                let end = stagedEnd
                countConcealed(from: end - Int64(concealedFrames), to: end)
            }
            if let startAt, stagedStart < startAt {
                // The priming: decoded, not played.
                let primed = Int(min(startAt - stagedStart, Int64(staged.count / 2)))
                staged.removeFirst(primed * 2)
                stagedStart += Int64(primed)
            }
            countStarved(audioFrom: position)
        }
        // Samples before the cursor are stale (the cursor jumped ahead): they are dropped by `render`.
    }

    /// Input positions `from…to` were concealed in place of a packet that came but did not decode: counted,
    /// apart from the priming before a resume's start (never heard) and what the output already went past
    /// (`countStarved` counts that).
    private mutating func countConcealed(from: Int64, to: Int64) {
        var from = max(from, startAt ?? from)
        if let starved, starved.from < to, from < starved.to {
            statistics.concealed += Int(max(0, starved.from - from))
            from = starved.to
        }
        statistics.concealed += Int(max(0, to - from))
    }

    /// Audio from input position `from` to the end of what is staged just came; what of it the output already
    /// went past (it ran dry there and played silence) is a dropout, counted as concealed. Counted only when the
    /// audio comes, so that the silence after a stream's end is not.
    private mutating func countStarved(audioFrom from: Int64) {
        guard let starved else { return }
        let end = stagedEnd
        statistics.concealed += Int(max(0, min(end, starved.to) - max(from, starved.from)))
        self.starved = end >= starved.to ? nil : (max(starved.from, end), starved.to)
    }

    /// Decodes one packet onto the end of `output`; returns the frames concealed in its place (0 when it decoded).
    ///
    /// An Opus payload libopus refuses (it passed RTP's checks, not Opus's) is counted `malformed` and concealed
    /// for as long as it lasted (streaming.md §6.1): up to the next packet's timestamp when that packet is
    /// here, else its own table-of-contents byte's length when that reads, else the length of the packet
    /// before it (a stream's packets are one length). Concealing a fixed 10 ms instead cut the audio of the
    /// packets after a shorter one (2.5 or 5 ms frames) and left a longer one's rest silent.
    private mutating func decode(_ packet: RTPPacket, sequence: Int64, into output: inout [Int16]) -> Int {
        switch format.encoding {
        case .opus:
            do throws(OpusError) {
                if let frames = try decoder?.decode(packet.payload, into: &output) { lastPacketFrames = frames }
                return 0
            } catch {
                var frames = OpusDecoder.frames(in: packet.payload) ?? lastPacketFrames
                if let next = buffer.first, next.sequence == sequence + 1 {
                    let untilNext = Int(next.packet.timestamp &- packet.timestamp)
                    if (1...OpusFormat.maximumFrame).contains(untilNext) { frames = untilNext }
                }
                statistics.malformed += 1
                concealWithLibopus(frames: frames, into: &output)
                return frames
            }
        case .l16:
            let p = packet.payload
            if format.channels == 2 {
                for i in stride(from: 0, to: p.count - 1, by: 2) { output.append(Int16(bitPattern: UInt16(p[i]) << 8 | UInt16(p[i + 1]))) }
                if output.count % 2 == 1 { output.append(0) }
            } else {
                for i in stride(from: 0, to: p.count - 1, by: 2) {
                    let s = Int16(bitPattern: UInt16(p[i]) << 8 | UInt16(p[i + 1]))
                    output.append(s)
                    output.append(s)
                }
            }
            return 0
        }
    }

    /// Stages `frames` of silence. When they end behind the output, no block reads them or what is staged before
    /// them again: all of it goes but the last frame (so that what follows stages on as it would have), rather
    /// than a second of silence staged for each packet of a sender's audio stamped long before its time, up to
    /// the jitter buffer's 1024 packets in one render. Before the output's first block, what of it the count of
    /// audio skipped would have counted (from the last concealment's end, not the priming before a resume's
    /// start) is kept for that count.
    private mutating func stageSilence(frames: Int) {
        let end = stagedEnd + Int64(frames)
        if let past = behindOutput, end <= past {
            if !audible { skippedUnstaged += Int(max(0, end - 1 - max(stagedStart, concealedEnd, startAt ?? .min))) }
            staged = [0, 0]
            stagedStart = end - 1
        } else {
            staged.append(contentsOf: repeatElement(0, count: frames * 2))
        }
    }

    /// The input position after the last staged frame.
    private var stagedEnd: Int64 { stagedStart + Int64(staged.count / 2) }

    /// Input positions before this one are behind the output: no block reads them again (the cursor, less the
    /// interpolator's reach, which a block that starts again reads back to).
    private var behindOutput: Int64? {
        cursor.map { $0 - Int64(Self.interpolator.halfLength) }
    }

    private mutating func conceal(frames: Int, before next: RTPPacket?) {
        guard frames > 0 else { return }
        statistics.concealed += frames
        var produced: [Int16] = []
        if let past = behindOutput, stagedEnd + Int64(frames) <= past - 48000 {
            // A gap that ends a second and more behind the output: never heard, so silence stands for it (and it is
            // not counted in `fec`). Concealed by libopus, a sender's audio stamped long before its time cost a
            // second of concealment for each packet of it, up to the jitter buffer's 1024 in one render, while the
            // event loop waited for the playout's lock. A gap closer to the output is concealed as ever: what the
            // decoder makes of the packets after it depends on the concealment, and may be heard.
            stageSilence(frames: frames)
            return
        }
        if format.encoding == .opus {
            // Opus's in-band FEC, when the next packet carries it (a plain RTSP publisher's speech), counted in `fec`
            // (streaming.md §4.3); else (Lyre's music stream) libopus conceals. Either way the frames count as
            // concealed: in-band FEC is a coarser copy.
            var inBand = false
            if let next, frames <= OpusFormat.maximumFrame, OpusDecoder.hasInBandFEC(next.payload) {
                inBand = (try? decoder?.decodeFEC(from: next.payload, frames: frames, into: &produced)) != nil
                if !inBand { statistics.decoderRefusals += 1 }
            }
            if inBand {
                statistics.recoveredByFEC += 1
            } else {
                produced.removeAll()
                concealWithLibopus(frames: frames, into: &produced)
            }
        }
        if produced.count < frames * 2 { produced.append(contentsOf: repeatElement(0, count: frames * 2 - produced.count)) }
        staged += produced.prefix(frames * 2)
    }

    /// libopus's packet-loss concealment for `frames` frames, 20 ms at a time, appended to `output`; silence
    /// for any piece it cannot conceal, counted in `decoderRefusals`.
    private mutating func concealWithLibopus(frames: Int, into output: inout [Int16]) {
        work.concealedByLibopus += frames
        var left = frames
        while left > 0 {
            let chunk = min(left, 960)
            if (try? decoder?.conceal(frames: chunk, into: &output)) == nil {
                statistics.decoderRefusals += 1
                output.append(contentsOf: repeatElement(0, count: chunk * 2))
            }
            left -= chunk
        }
    }

    /// An RTP timestamp unwrapped to the 64-bit timeline, nearest the last one seen.
    private mutating func extended(_ timestamp: UInt32) -> Int64 {
        guard let last = lastExtended else {
            lastExtended = Int64(timestamp) + (1 << 32)
            return lastExtended!
        }
        let value = last + Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: last)))
        lastExtended = value
        return value
    }
}
