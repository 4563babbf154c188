import LyreCodec
import LyreWire

/// Counters a session reports (streaming.md §3 `stats`).
public struct PlayoutStatistics: Sendable, Equatable {
    public var received = 0
    public var late = 0
    public var lost = 0
    public var concealed = 0
    public var recoveredByFEC = 0
    public var duplicates = 0
    public var overflowed = 0
    public var malformed = 0
    public var foreign = 0
    public var corrections = 0
    public var depthMilliseconds = 0.0
    public var clockOffsetMicroseconds: Double?
    public var clockDelayMicroseconds: Double?
    public var driftPPM: Double?

    public var text: String {
        var parts = [
            "received=\(received)", "late=\(late)", "lost=\(lost)", "concealed=\(concealed)", "fec=\(recoveredByFEC)",
            "foreign=\(foreign)", "malformed=\(malformed)", "corrections=\(corrections)",
            "depth-ms=\(Int(depthMilliseconds.rounded()))",
        ]
        if let clockOffsetMicroseconds { parts.append("offset-us=\(Int(clockOffsetMicroseconds.rounded()))") }
        if let clockDelayMicroseconds { parts.append("rtt-us=\(Int(clockDelayMicroseconds.rounded()))") }
        if let driftPPM { parts.append("drift-ppm=\((driftPPM * 100).rounded() / 100)") }
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
    private let decoder: OpusDecoder?
    private var anchor: (rtp: UInt32, senderClock: UInt64)?
    private var recording = false
    /// Decoded samples (interleaved stereo) starting at RTP position `stagedStart`.
    private var staged: [Int16] = []
    private var stagedStart: Int64 = 0
    /// Next output position in extended RTP time.
    private var cursor: Int64?
    /// True once this recording has put audio out: until then the cursor follows the clock estimate
    /// exactly, because moving through silence cannot be heard.
    private var audible = false
    /// Extended RTP time: RTP timestamps unwrapped around the anchor.
    private var lastExtended: Int64?

    public init(format: AudioFormat, latency: UInt64, timed: Bool, channels: ChannelMap = .stereo) throws(OpusError) {
        self.format = format
        self.latency = latency
        self.timed = timed
        self.channels = channels
        decoder = format.encoding == .opus ? try OpusDecoder() : nil
    }

    // MARK: network side

    public mutating func record(anchor: PlaybackAnchor?) {
        recording = true
        if let anchor { self.anchor = (anchor.rtpTime, anchor.senderClock) }
    }

    public mutating func flush(nextSequence: UInt16?) {
        buffer.flush(nextSequence: nextSequence)
        staged.removeAll()
        cursor = nil
        audible = false
        anchor = nil
        recording = false
    }

    public mutating func addTimingSample(localTime: UInt64, offset: Int64, delay: Int64) {
        clock.add(localTime: localTime, offset: offset, delay: delay)
        statistics.clockOffsetMicroseconds = clock.offset.map { Double($0) / 1000 }
        statistics.clockDelayMicroseconds = clock.delay.map { Double($0) / 1000 }
        statistics.driftPPM = clock.driftPPM
    }

    public mutating func countForeign() { statistics.foreign += 1 }
    public mutating func countMalformed() { statistics.malformed += 1 }

    /// A packet arrived at local time `arrival`.
    public mutating func receive(_ packet: RTPPacket, arrival: UInt64) {
        guard packet.payloadType == format.payloadType else {
            statistics.malformed += 1
            return
        }
        statistics.received += 1
        if !timed, recording, anchor == nil { anchor = (packet.timestamp, arrival) }
        switch buffer.insert(packet) {
        case .accepted: break
        case .late: statistics.late += 1
        case .duplicate: statistics.duplicates += 1
        case .overflowed: statistics.overflowed += 1
        }
    }

    // MARK: output side

    /// True when everything received has been played (or nothing is recording).
    public var isDrained: Bool { !recording || (buffer.isEmpty && staged.isEmpty) }

    /// `frames` stereo frames to present at local time `presentation`, and a log record when playing.
    ///
    /// `outputDelay` (ns, may be negative) is how long what is plugged into the output (an AV receiver, a
    /// soundbar) holds the sound after it leaves: the block presented at `presentation` is heard
    /// `outputDelay` later, so it carries the samples due then (`lyred --output-delay`, streaming.md §6.3).
    public mutating func render(frames: Int, presentation: UInt64, outputDelay: Int64 = 0) -> ([Int16], PresentationRecord?) {
        var out = [Int16](repeating: 0, count: frames * 2)
        guard recording, let anchor, let offset = timed ? clock.offset : 0 else { return (out, nil) }
        let anchorExtended = extended(anchor.rtp)
        let heard = Int64(bitPattern: presentation) &+ outputDelay
        let sinceAnchor = heard &+ offset &- Int64(bitPattern: anchor.senderClock &+ latency)
        let due = anchorExtended + Int64((Double(sinceAnchor) * 48e-6).rounded())  // ns × 48000 / 1e9
        if let current = cursor, audible {
            let error = due - current
            if abs(error) > 240 {
                // Far off (a stall, a clock step): jump.
                statistics.corrections += 1
                cursor = due
            } else if abs(error) > 2 {
                // Slightly off (the clock estimate moved): slew one sample per block, which is inaudible.
                statistics.corrections += 1
                cursor = current + error.signum()
            }
        } else {
            cursor = due
        }
        let position = cursor!
        let scheduled = Int64(bitPattern: anchor.senderClock &+ latency) + Int64((Double(position - anchorExtended) * 1e9 / 48000).rounded())
        var record = PresentationRecord(
            rtpTime: UInt32(truncatingIfNeeded: position), scheduled: UInt64(bitPattern: scheduled), presented: presentation)

        fill(until: position + Int64(frames))
        // Copy what is staged for [position, position + frames).
        let stagedEnd = stagedStart + Int64(staged.count / 2)
        let from = max(position, stagedStart)
        let to = min(position + Int64(frames), stagedEnd)
        if from < to {
            record.audioFrames = Int(to - from)
            audible = true
            let src = Int(from - stagedStart) * 2
            let dst = Int(from - position) * 2
            let count = Int(to - from) * 2
            out.withUnsafeMutableBufferPointer { o in
                staged.withUnsafeBufferPointer { s in
                    (o.baseAddress! + dst).update(from: s.baseAddress! + src, count: count)
                }
            }
        }
        channels.apply(to: &out)
        cursor = position + Int64(frames)
        // Drop what has been played.
        let keepFrom = min(max(cursor! - stagedStart, 0), Int64(staged.count / 2))
        if keepFrom > 0 {
            staged.removeFirst(Int(keepFrom) * 2)
            stagedStart += keepFrom
        }
        if let last = buffer.last {
            statistics.depthMilliseconds = max(0, Double(extended(last.packet.timestamp) - cursor!) / 48)
        } else {
            statistics.depthMilliseconds = max(0, Double(stagedEnd - cursor!) / 48)
        }
        return (out, record)
    }

    /// Decodes packets in sequence order until samples reach `end` or the buffer runs dry, concealing gaps.
    private mutating func fill(until end: Int64) {
        while stagedStart + Int64(staged.count / 2) < end, let head = buffer.first {
            let stagedEnd = stagedStart + Int64(staged.count / 2)
            let position = extended(head.packet.timestamp)
            if let due = buffer.nextDue, head.sequence > due {
                // Packets missing before this one: conceal the time they covered, now that it is needed.
                let missing = Int(head.sequence - due)
                let gap = Int(max(0, min(position - stagedEnd, 48000)))
                statistics.lost += missing
                if staged.isEmpty { stagedStart = position - Int64(gap) }
                conceal(frames: gap, before: missing == 1 ? head.packet : nil)
                buffer.nextDue = head.sequence
                continue
            }
            _ = buffer.removeFirst()
            if staged.isEmpty || position < stagedEnd - 48000 || position > stagedEnd + 48000 {
                // First packet, or a jump in the timeline (resume, a new talk spurt): restart staging here.
                staged.removeAll()
                stagedStart = position
            } else if position > stagedEnd {
                staged.append(contentsOf: repeatElement(0, count: Int(position - stagedEnd) * 2))
            } else if position < stagedEnd {
                // Overlaps what is staged (already concealed): keep the decoder in step, drop the overlap.
                var scratch: [Int16] = []
                decode(head.packet, into: &scratch)
                let overlap = Int(min(stagedEnd - position, Int64(scratch.count / 2)))
                staged.append(contentsOf: scratch.dropFirst(overlap * 2))
                continue
            }
            // Decoded straight onto the end of `staged` (moved out and back: no copy, no scratch buffer).
            var target: [Int16] = []
            swap(&target, &staged)
            decode(head.packet, into: &target)
            swap(&target, &staged)
        }
        // Samples before the cursor are stale (the cursor jumped ahead): they are dropped by `render`.
    }

    private func decode(_ packet: RTPPacket, into output: inout [Int16]) {
        switch format.encoding {
        case .opus:
            if (try? decoder?.decode(packet.payload, into: &output)) == nil {
                // A corrupt packet: conceal its expected length instead.
                _ = try? decoder?.conceal(frames: 480, into: &output)
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
        }
    }

    private mutating func conceal(frames: Int, before next: RTPPacket?) {
        guard frames > 0 else { return }
        statistics.concealed += frames
        var produced: [Int16] = []
        if format.encoding == .opus {
            if let next, frames <= OpusFormat.maximumFrame,
                (try? decoder?.decodeFEC(from: next.payload, frames: frames, into: &produced)) != nil
            {
                statistics.recoveredByFEC += 1
            } else {
                produced.removeAll()
                var left = frames
                while left > 0 {
                    let chunk = min(left, 960)
                    if (try? decoder?.conceal(frames: chunk, into: &produced)) == nil {
                        produced.append(contentsOf: repeatElement(0, count: chunk * 2))
                    }
                    left -= chunk
                }
            }
        }
        if produced.count < frames * 2 { produced.append(contentsOf: repeatElement(0, count: frames * 2 - produced.count)) }
        staged += produced.prefix(frames * 2)
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
