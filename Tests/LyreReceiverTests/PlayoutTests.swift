import Foundation
import LyreReceiver
import LyreWire
import Testing

/// The playout schedule without sockets: L16 packets of a hard signal go in, the output is rendered block by
/// block against a simulated output clock, and what comes out is measured against what went in: where each
/// stretch of the input lands (cross-correlation) and how clean it is (SNR).
struct PlayoutTests {
    static let rate = 48000.0
    static let format = AudioFormat(encoding: .l16, payloadType: 96)

    /// A logarithmic sweep, 20 Hz to 20 kHz, at −6 dBFS on the left and a reversed one on the right.
    static func sweep(seconds: Double) -> [Int16] {
        let n = Int(seconds * rate)
        let (f0, f1) = (20.0, 20000.0)
        let k = log(f1 / f0)
        func phase(_ t: Double) -> Double { 2 * .pi * f0 * seconds / k * (exp(t / seconds * k) - 1) }
        var out = [Int16](repeating: 0, count: n * 2)
        for i in 0..<n {
            let t = Double(i) / rate
            out[2 * i] = Int16(16384 * sin(phase(t)))
            out[2 * i + 1] = Int16(16384 * sin(phase(seconds - t)))
        }
        return out
    }

    /// A 1 kHz tone at −6 dBFS on both channels.
    static func tone(seconds: Double, frequency: Double = 1000) -> [Int16] {
        (0..<Int(seconds * rate)).flatMap { i -> [Int16] in
            let v = Int16(16384 * sin(2 * .pi * frequency * Double(i) / rate))
            return [v, v]
        }
    }

    /// 10 ms L16 packets of `pcm` from RTP time `start`.
    static func packets(_ pcm: [Int16], start: UInt32, sequence: UInt16) -> [RTPPacket] {
        stride(from: 0, to: pcm.count / 2, by: 480).enumerated().map { index, frame in
            let slice = pcm[(frame * 2)..<min(pcm.count, (frame + 480) * 2)]
            let payload = slice.flatMap { [UInt8(UInt16(bitPattern: $0) >> 8), UInt8(UInt16(bitPattern: $0) & 0xff)] }
            return RTPPacket(payloadType: 96, sequenceNumber: sequence &+ UInt16(index), timestamp: start &+ UInt32(frame),
                             ssrc: 1, payload: payload)
        }
    }

    struct Run {
        /// Left channel of the output, and each block's presentation time and first output frame.
        var left: [Double] = []
        var records: [(frame: Int, presented: Double)] = []
        /// The playout's `audioEnd` after each block.
        var audioEnds: [Int64?] = []
        var statistics: PlayoutStatistics
    }

    /// Plays `pcm` through a Playout whose output runs `skewPPM` fast against the local clock, the sender's
    /// clock `offset` ns ahead of it, in blocks of `block` frames.
    static func play(_ pcm: [Int16], skewPPM: Double = 0, senderDriftPPM: Double = 0, block: Int = 240,
                     latency: UInt64 = 100_000_000, extraSeconds: Double = 0.5, fecRow: Int? = nil,
                     withheld: [Int: Double] = [:], presentationStep: (seconds: Double, nanoseconds: Double)? = nil,
                     pause: (packet: Int, frames: Int)? = nil, estimated: Bool = false) throws -> Run {
        var playout = try Playout(format: format, latency: latency, timed: true)
        playout.repairsFromFEC = fecRow != nil  // as SETUP does when the sender sends FEC
        let start: UInt64 = 5_000_000_000
        let offset: Int64 = 1_234_567  // sender minus local
        // Timing samples one a second over the run: the sender's clock drifts by senderDriftPPM. Exact, over
        // an idle link's 10 µs round trip (the clock filter takes a sample's offset as uncertain by a share of
        // its round trip, and a drift from 3 samples as real only past 5 standard errors: ClockFilterTests).
        func senderOffset(at local: UInt64) -> Int64 {
            offset + Int64(Double(Int64(local) - Int64(start)) * senderDriftPPM * 1e-6)
        }
        var nextSample = start - 3_000_000_000
        func feedTiming(until local: UInt64) {
            while nextSample <= local {
                playout.addTimingSample(localTime: nextSample, offset: senderOffset(at: nextSample), delay: 10_000)
                nextSample += 1_000_000_000
            }
        }
        feedTiming(until: start)
        let rtpStart: UInt32 = 4_294_000_000  // wraps during the run
        // As RECORD does: its RTP-Info names the first packet, then its anchor.
        playout.flush(nextSequence: 65000)
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: UInt64(Int64(start) + offset)))
        // `pause`: from that packet on, `frames` later in the stream (the sender's slots passed while its source
        // had nothing, as `lyre play -` from a pipe that waits), the sequence unbroken.
        let sent = packets(pcm, start: rtpStart, sequence: 65000).enumerated().map { index, packet in
            var packet = packet
            if let pause, index >= pause.packet { packet.timestamp &+= UInt32(pause.frames) }
            return packet
        }
        // Packets `withheld` (by index) arrive that many seconds after the start instead (a resend), or never.
        var pending = withheld.map { (index: $0.key, at: Double(start) + $0.value * 1e9) }.sorted { $0.at < $1.at }
        if let fecRow {
            // One packet of each row lost, at a different place each row; its parity delivered before or after
            // the rest of the row.
            for (r, row) in stride(from: 0, to: sent.count - fecRow + 1, by: fecRow).map({ Array(sent[$0..<($0 + fecRow)]) }).enumerated() {
                let parity = try FECPacket(parsing: FECPacket(protecting: row).serialized(payloadType: 97, sequenceNumber: UInt16(r), timestamp: 0, ssrc: 2))
                if r % 2 == 0 { playout.receiveParity(parity) }
                for (i, packet) in row.enumerated() where i != r % fecRow { playout.receive(packet, arrival: start) }
                if r % 2 == 1 { playout.receiveParity(parity) }
            }
        } else {
            for (i, packet) in sent.enumerated() where withheld[i] == nil { playout.receive(packet, arrival: start) }
        }
        var run = Run(statistics: playout.statistics)
        var presented = Double(start) + Double(latency) - 20_000_000
        let seconds = Double(pcm.count / 2) / rate + Double(latency) / 1e9 + extraSeconds
        let framePeriod = 1e9 / rate / (1 + skewPPM * 1e-6)
        var stepped = false
        while run.left.count < Int(seconds * rate) {
            feedTiming(until: UInt64(presented))
            while let next = pending.first, next.at <= presented {
                playout.receive(sent[next.index], arrival: UInt64(next.at))
                pending.removeFirst()
            }
            if let step = presentationStep, !stepped, presented >= Double(start) + step.seconds * 1e9 {
                // The output's clock steps once (a stall, or the device's reported latency jumping).
                presented += step.nanoseconds
                stepped = true
            }
            let (out, _) = playout.render(frames: block, presentation: UInt64(presented.rounded()), estimated: estimated)
            run.records.append((run.left.count, presented))
            run.audioEnds.append(playout.audioEnd)
            run.left += stride(from: 0, to: out.count, by: 2).map { Double(out[$0]) }
            presented += Double(block) * framePeriod
        }
        run.statistics = playout.statistics
        return run
    }

    /// The longest run of zero samples in `samples`: a jump or a cut inside a sound shows as one.
    static func longestSilence(_ samples: ArraySlice<Double>) -> Int {
        var zeros = 0, longest = 0
        for sample in samples {
            zeros = sample == 0 ? zeros + 1 : 0
            longest = max(longest, zeros)
        }
        return longest
    }

    /// Where input frame `inputFrame` should leave the output, local ns: due at `start + latency + i/rate`
    /// on the sender's clock, which runs `senderDriftPPM` off the local one from `start` on.
    static func due(_ inputFrame: Double, latency: UInt64 = 100_000_000, senderDriftPPM: Double = 0) -> Double {
        let start = 5_000_000_000.0
        let sender = start + Double(latency) + inputFrame / rate * 1e9
        return start + (sender - start) / (1 + senderDriftPPM * 1e-6)
    }

    /// When output frame `k` (fractional) left, from the block records.
    static func time(ofOutput k: Double, _ run: Run, skewPPM: Double) -> Double {
        let i = lastRecord(run) { Double($0.frame) <= k }
        return run.records[i].presented + (k - Double(run.records[i].frame)) * 1e9 / rate / (1 + skewPPM * 1e-6)
    }

    /// The output frame that left at local time `t`.
    static func frame(at t: Double, _ run: Run, skewPPM: Double) -> Int {
        let i = lastRecord(run) { $0.presented <= t }
        return run.records[i].frame + Int(((t - run.records[i].presented) * rate * (1 + skewPPM * 1e-6) / 1e9).rounded(.up))
    }

    /// The last block record for which `before` holds (records are in time order), or the first.
    static func lastRecord(_ run: Run, _ before: ((frame: Int, presented: Double)) -> Bool) -> Int {
        var (low, high) = (0, run.records.count)
        while low < high {
            let mid = (low + high) / 2
            if before(run.records[mid]) { low = mid + 1 } else { high = mid }
        }
        return max(0, low - 1)
    }

    /// For 50 ms windows of the input every `every` seconds: how far from its due time it left the output
    /// (µs, by cross-correlation near where it should be), and the SNR of the output there against it.
    static func measure(_ pcm: [Int16], _ run: Run, skewPPM: Double, senderDriftPPM: Double = 0, every: Double = 0.25,
                        from: Double = 0.2)
        -> [(at: Double, errorMicroseconds: Double, snr: Double)]
    {
        let input = stride(from: 0, to: pcm.count, by: 2).map { Double(pcm[$0]) }
        let window = 2400
        var results: [(Double, Double, Double)] = []
        for start in stride(from: Int(from * rate), to: input.count - window, by: Int(every * rate)) {
            let reference = Array(input[start..<(start + window)])
            // The output frame that left when this window was due.
            let dueTime = due(Double(start), senderDriftPPM: senderDriftPPM)
            let guess = frame(at: dueTime, run, skewPPM: skewPPM)
            guard guess < run.left.count else { continue }
            var best = (lag: 0, score: -Double.infinity)
            var scores: [Int: Double] = [:]
            for lag in -48...48 where guess + lag >= 0 && guess + lag + window <= run.left.count {
                var dot = 0.0
                var energy = 0.0
                for i in 0..<window {
                    let o = run.left[guess + lag + i]
                    dot += o * reference[i]
                    energy += o * o
                }
                let score = dot / (energy.squareRoot() + 1e-9)
                scores[lag] = score
                if score > best.score { best = (lag, score) }
            }
            guard let y0 = scores[best.lag - 1], let y2 = scores[best.lag + 1] else { continue }
            let y1 = best.score
            let fraction = (y0 - 2 * y1 + y2) != 0 ? 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2) : 0
            let found = Double(guess + best.lag) + fraction
            let error = (time(ofOutput: found, run, skewPPM: skewPPM) - dueTime) / 1000
            // SNR at the best integer lag, with the best gain.
            let out = Array(run.left[(guess + best.lag)..<(guess + best.lag + window)])
            let gain = zip(out, reference).map(*).reduce(0, +) / reference.map { $0 * $0 }.reduce(0, +)
            let noise = zip(out, reference).map { ($0 - gain * $1) * ($0 - gain * $1) }.reduce(0, +)
            let signal = out.map { $0 * $0 }.reduce(0, +)
            results.append((Double(start) / rate, error, 10 * log10(signal / max(noise, 1e-9))))
        }
        return results
    }

    /// streaming.md §5.1: the stats name the timing answers left out as outliers and the steps followed, once
    /// there are any (a CI failure that jumped the output had nothing to say why).
    @Test func theStatsNameTheClocksOutliersAndSteps() throws {
        var playout = try Playout(format: Self.format, latency: 100_000_000, timed: true)
        for i in 0..<5 { playout.addTimingSample(localTime: UInt64(i) * 1_000_000_000, offset: 0, delay: 10_000) }
        #expect(!playout.statistics.text.contains("clock-"))
        playout.addTimingSample(localTime: 5_000_000_000, offset: 50_000_000, delay: 10_000)
        #expect(playout.statistics.text.hasSuffix("clock-outliers=1 clock-steps=0"), "\(playout.statistics.text)")
        for i in 6..<8 { playout.addTimingSample(localTime: UInt64(i) * 1_000_000_000, offset: 50_000_000, delay: 10_000) }
        #expect(playout.statistics.text.hasSuffix("clock-outliers=3 clock-steps=1"), "\(playout.statistics.text)")
    }

    /// FLUSH's `Lyre-Stopped-At` (streaming.md §3) is the first input sample the output did not put out: the
    /// next one due while audio plays, and where the audio ended when the output had run past it (a pausing
    /// sender stops sending before its FLUSH arrives), so that the sender resumes with no sample lost.
    @Test(arguments: [(1.0, 0.5), (0.3, 0.6)])
    func aFlushSaysTheFirstSampleNotPutOut(sent: Double, rendered: Double) throws {
        var playout = try Playout(format: Self.format, latency: 100_000_000, timed: true)
        let start: UInt64 = 5_000_000_000
        for t in stride(from: start - 3_000_000_000, through: start, by: 1_000_000_000) {
            playout.addTimingSample(localTime: t, offset: 0, delay: 10_000)
        }
        let rtpStart: UInt32 = 4_294_960_000  // wraps while it plays
        playout.flush(nextSequence: 100)
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start))
        let pcm = [Int16](repeating: 1000, count: Int(sent * Self.rate) * 2)
        for packet in Self.packets(pcm, start: rtpStart, sequence: 100) { playout.receive(packet, arrival: start) }
        var heard = 0
        var presented = Double(start) + 90_000_000
        while presented < Double(start) + 100_000_000 + rendered * 1e9 {
            let (out, _) = playout.render(frames: 240, presentation: UInt64(presented))
            heard += stride(from: 0, to: out.count, by: 2).filter { out[$0] != 0 }.count
            presented += 240 * 1e9 / Self.rate
        }
        let flushed = playout.flush(nextSequence: 200)
        let stopped = try #require(flushed)
        #expect(heard > 0)
        #expect(Int(stopped &- rtpStart) == heard, "stopped at \(stopped &- rtpStart), heard \(heard) input samples")
    }

    @Test(arguments: [240, 2400]) func onTimeOutputIsTheInputSampleForSample(block: Int) throws {
        let pcm = Self.sweep(seconds: 2)
        let run = try Self.play(pcm, block: block)
        let windows = Self.measure(pcm, run, skewPPM: 0)
        #expect(windows.count >= 6)
        for window in windows {
            #expect(abs(window.errorMicroseconds) < 25 && window.snr > 40, "\(window)")
        }
        #expect(run.statistics.corrections == 0)
        // In tune from the start: the input itself, sample for sample, never resampled.
        #expect(run.statistics.tuned == 1 && run.statistics.ratePPM == 0, "\(run.statistics)")
        let input = stride(from: 0, to: pcm.count, by: 2).map { Double(pcm[$0]) }
        let first = try #require(run.left.firstIndex { $0 != 0 })
        let firstIn = try #require(input.firstIndex { $0 != 0 })
        #expect(Array(run.left[first..<(first + input.count - firstIn)]) == Array(input[firstIn...]))
    }

    /// A pause of more than a second in the timeline (the sender's slots passed while its source had nothing),
    /// whose first packet after it is already here while the audio before it plays (a latency over a second, a
    /// sender that sends ahead): the whole output is the input before the pause, then the pause's silence, then
    /// the rest, sample for sample. Staging restarted at that packet as soon as the render reached the end of what
    /// was staged, which dropped the audio staged for the blocks to come and cut the end before the pause.
    @Test(arguments: [240, 1000]) func aPauseOverASecondAlreadyHereKeepsTheAudioBeforeItWhole(block: Int) throws {
        let pcm = Self.sweep(seconds: 1)
        let pause = 72_000  // 1.5 s, after packet 50 of 100 (24,000 frames)
        let run = try Self.play(pcm, block: block, extraSeconds: 1.6, pause: (packet: 50, frames: pause))
        #expect(run.statistics.lost == 0 && run.statistics.concealed == 0 && run.statistics.late == 0 && run.statistics.corrections == 0,
                "\(run.statistics)")
        #expect(run.statistics.tuned == 1 && run.statistics.ratePPM == 0, "\(run.statistics)")
        let input = stride(from: 0, to: pcm.count, by: 2).map { Double(pcm[$0]) }
        let expected = Array(input[..<24_000]) + Array(repeating: 0, count: pause) + Array(input[24_000...])
        // Aligned by the first frame of audio (the sweep's first sample is 0).
        let firstIn = try #require(expected.firstIndex { $0 != 0 })
        let first = try #require(run.left.firstIndex { $0 != 0 })
        let heard = Array(run.left[(first - firstIn)...])
        try #require(heard.count >= expected.count, "\(heard.count) frames heard")
        let differing = expected.indices.filter { heard[$0] != expected[$0] }
        #expect(differing.isEmpty, "\(differing.count) frames differ, from frame \(differing.first ?? 0) (the pause starts at 24,000)")
        #expect(heard[expected.count...].allSatisfy { $0 == 0 }, "something played after the end")
    }

    /// One packet lost in every row of 5, its row's parity delivered before or after the rest: every lost
    /// packet is rebuilt, and the output is the input sample for sample, as with nothing lost.
    @Test func fecRebuildsOneLossPerRow() throws {
        let pcm = Self.sweep(seconds: 2)
        let run = try Self.play(pcm, fecRow: 5)
        #expect(run.statistics.recoveredByFEC == 40 && run.statistics.lost == 0 && run.statistics.concealed == 0, "\(run.statistics)")
        for window in Self.measure(pcm, run, skewPPM: 0) {
            #expect(abs(window.errorMicroseconds) < 25 && window.snr > 40, "\(window)")
        }
    }

    /// A parity that comes after its row's time (a loaded sender at 20 ms of latency) rebuilds a packet that
    /// can no longer play: the rebuilt packet is counted `late`, as an original after its time would be, and
    /// the packet it stands for `lost`; nothing is counted as repaired (streaming.md §4.3).
    @Test func aPacketRebuiltAfterItsTimeIsCountedLate() throws {
        var playout = try Playout(format: Self.format, latency: 100_000_000, timed: true)
        playout.repairsFromFEC = true
        let start: UInt64 = 5_000_000_000
        for second in (0...3).reversed() { playout.addTimingSample(localTime: start - UInt64(second) * 1_000_000_000, offset: 0, delay: 10_000) }
        playout.flush(nextSequence: 100)
        playout.record(anchor: PlaybackAnchor(rtpTime: 0, senderClock: start))
        let sent = Self.packets(Self.sweep(seconds: 0.2), start: 0, sequence: 100)
        for (i, packet) in sent.enumerated() where i != 3 { playout.receive(packet, arrival: start) }
        // 100 ms of output, well past packet 3's 30…40 ms, then the row's parity.
        for block in 0..<20 { _ = playout.render(frames: 240, presentation: start + 100_000_000 + UInt64(block) * 5_000_000) }
        #expect(playout.statistics.lost == 1 && playout.statistics.late == 0, "\(playout.statistics)")
        let parity = try FECPacket(parsing: FECPacket(protecting: Array(sent[2...3])).serialized(payloadType: 97, sequenceNumber: 0, timestamp: 0, ssrc: 2))
        playout.receiveParity(parity)
        #expect(playout.statistics.late == 1 && playout.statistics.recoveredByFEC == 0 && playout.statistics.lost == 1, "\(playout.statistics)")
    }
}

extension PlayoutTests {
    /// The sine that best fits `x` (amplitude, phase and frequency near `frequency`, cycles per sample), and
    /// the SNR of `x` against it, dB: a four-parameter least-squares fit (IEEE 1057), by Gauss-Newton steps.
    /// The first 5 packets lost and resent, arriving after the output has started (with silence, 20 ms before
    /// the first sample is due) but before their time: they are played, nothing is lost or late. (The buffer
    /// took the first packet that came at the first block and concealed the ones before it there and then, so
    /// that their resends came late: LossTests' bursts at 1 s latency, under load.)
    @Test func firstPacketsResentBeforeTheirTimeArePlayed() throws {
        let pcm = Self.sweep(seconds: 1)
        let run = try Self.play(pcm, withheld: Dictionary(uniqueKeysWithValues: (0..<5).map { ($0, 0.09) }))
        #expect(run.statistics.lost == 0 && run.statistics.late == 0 && run.statistics.concealed == 0, "\(run.statistics)")
        for window in Self.measure(pcm, run, skewPPM: 0, every: 0.1, from: 0) {
            #expect(abs(window.errorMicroseconds) < 25 && window.snr > 40, "\(window)")
        }
    }

    /// `audioEnd`, where an announcement's duck comes back from (streaming.md §7): nil while the audio plays, a
    /// lost packet's concealment included, then just after the last frame of audio, to the frame, however the
    /// blocks fall (a last packet of 240 frames), and so on while the output goes on.
    @Test(arguments: [240, 1000]) func theAudioEndIsJustAfterTheLastFrame(block: Int) throws {
        let pcm = Array(Self.sweep(seconds: 1).prefix(47_760 * 2))
        let run = try Self.play(pcm, block: block, withheld: [50: .infinity])
        #expect(run.statistics.lost == 1, "\(run.statistics)")
        let firstEnd = try #require(run.audioEnds.firstIndex { $0 != nil })
        // Known from the block the audio ran out in: the block holding the last frame heard, or the next one
        // when that frame ends a block (47,760 frames are 199 blocks of 240).
        let heard = try #require(run.left.lastIndex { $0 != 0 })
        #expect(run.records[firstEnd].frame <= heard + 1 && heard < run.records[firstEnd].frame + block, "ran out at block \(firstEnd)")
        #expect(run.audioEnds[firstEnd...].allSatisfy { $0 == 47_760 }, "\(run.audioEnds[firstEnd...].prefix(3))")
    }

    /// An announcement whose audio runs out and comes again (streaming.md §7): the end is dropped in the block
    /// that holds the first frame of the audio that came again, so the duck starts back down from there, not a
    /// block later; and the second end is where the second audio runs out.
    @Test(arguments: [240, 1000]) func theAudioEndGoesWhenTheAudioComesAgain(block: Int) throws {
        let pcm = Self.sweep(seconds: 1)
        // The audio after the pause arrives as a sender sends it, 100 ms before it is due (due 1.1 s from the start,
        // after the latency of 100 ms), not with the rest.
        let after = Dictionary(uniqueKeysWithValues: (50..<100).map { ($0, 1.0 + Double($0 - 50) * 0.01) })
        let run = try Self.play(pcm, block: block, extraSeconds: 1, withheld: after, pause: (packet: 50, frames: 24_000))
        let firstEnd = try #require(run.audioEnds.firstIndex { $0 != nil })
        #expect(run.audioEnds[firstEnd] == 24_000)
        // The first frame heard again: 24,000 frames of silence after the first end.
        let again = try #require(run.left.indices.first { $0 > run.records[firstEnd].frame + block && run.left[$0] != 0 })
        let block = try #require(run.records.lastIndex { $0.frame <= again })
        #expect(run.audioEnds[firstEnd..<block].allSatisfy { $0 == 24_000 }, "\(run.audioEnds[firstEnd..<block].prefix(3))")
        #expect(run.audioEnds[block] == nil, "the audio came again in block \(block) and its end stayed")
        #expect(run.audioEnds.last == 48_000 + 24_000, "\(String(describing: run.audioEnds.last))")
    }

    /// Three packets missing in a row, the last two resent after the first one's time has come but before
    /// their own: only the first is concealed (its 10 ms), the other two are played.
    @Test func aGapIsConcealedOnePacketAtATimeAsItComesDue() throws {
        let pcm = Self.sweep(seconds: 1)
        let run = try Self.play(pcm, withheld: [50: .infinity, 51: 0.602, 52: 0.602])
        #expect(run.statistics.lost == 1 && run.statistics.late == 0 && run.statistics.concealed == 480, "\(run.statistics)")
        // An L16 gap is silence (streaming.md §6.1): one run of zeros the length of the lost packet (give or
        // take a zero crossing of the sweep at either edge), and no other.
        let first = try #require(run.left.firstIndex { $0 != 0 }), last = try #require(run.left.lastIndex { $0 != 0 })
        var runs: [Int] = []
        var zeros = 0
        for sample in run.left[first...last] {
            if sample == 0 { zeros += 1 } else { if zeros >= 8 { runs.append(zeros) }; zeros = 0 }
        }
        #expect(runs.count == 1 && (480...482).contains(runs.first ?? 0), "silent runs \(runs)")
        let windows = Self.measure(pcm, run, skewPPM: 0, every: 0.05)
        for window in windows where abs(window.at - 0.5) > 0.06 {
            #expect(abs(window.errorMicroseconds) < 25 && window.snr > 40, "\(window)")
        }
    }

    /// A room that joins a playback under way is sent the packets not yet due, some of which are due before its
    /// output's first block: those are skipped, and are no gap there (the room was not playing), so they are not
    /// counted as concealed; a session whose own first audio comes too late has lost its start, which is.
    @Test(arguments: [true, false])
    func audioDueBeforeAJoiningRoomsFirstBlockIsNoGap(joining: Bool) throws {
        var playout = try Playout(format: Self.format, latency: 100_000_000, timed: true)
        let start: UInt64 = 5_000_000_000
        for t in stride(from: start - 3_000_000_000, through: start, by: 1_000_000_000) {
            playout.addTimingSample(localTime: t, offset: 0, delay: 10_000)
        }
        let rtpStart: UInt32 = 1000
        if !joining { playout.flush(nextSequence: 100) }
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start), joining: joining)
        for packet in Self.packets(Self.tone(seconds: 0.5), start: rtpStart, sequence: 100) { playout.receive(packet, arrival: start) }
        // The output's first block is presented 30 ms after the first packet's time: 1440 samples passed.
        var presented = Double(start) + 130_000_000
        for _ in 0..<20 {
            _ = playout.render(frames: 240, presentation: UInt64(presented))
            presented += 240 * 1e9 / Self.rate
        }
        #expect(playout.statistics.concealed == (joining ? 0 : 1440), "\(playout.statistics)")
    }

    /// A resume's RECORD names where the output starts (`Lyre-Start-At`, streaming.md §3): the packets before it
    /// prime the decoder and are not heard. The output is silent to that position and the input from there,
    /// sample for sample, with nothing counted lost or concealed; a pause before any of it was heard says so.
    @Test func aResumePlaysFromItsStartAndNotThePrimingBeforeIt() throws {
        var playout = try Playout(format: Self.format, latency: 100_000_000, timed: true)
        let start: UInt64 = 5_000_000_000
        for t in stride(from: start - 3_000_000_000, through: start, by: 1_000_000_000) {
            playout.addTimingSample(localTime: t, offset: 0, delay: 10_000)
        }
        let rtpStart: UInt32 = 4_294_967_000  // the start lies past the wrap
        let skip = 1272  // 20 ms of priming and the encoder's delay
        let pcm = Self.sweep(seconds: 0.5)
        playout.flush(nextSequence: 100)
        playout.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start), startAt: rtpStart &+ UInt32(skip))
        for packet in Self.packets(pcm, start: rtpStart, sequence: 100) { playout.receive(packet, arrival: start) }
        var out: [Int16] = []
        var presented = start + 100_000_000  // the anchor's position is due at the first block's first frame
        for block in 0..<10 {
            if block == 2 {
                // Paused before the start: nothing of the audio was heard, so no position is told.
                var paused = try Playout(format: Self.format, latency: 100_000_000, timed: true)
                paused.addTimingSample(localTime: start, offset: 0, delay: 10_000)
                paused.flush(nextSequence: 100)
                paused.record(anchor: PlaybackAnchor(rtpTime: rtpStart, senderClock: start), startAt: rtpStart &+ UInt32(skip))
                for packet in Self.packets(pcm, start: rtpStart, sequence: 100) { paused.receive(packet, arrival: start) }
                for b in 0..<2 { _ = paused.render(frames: 240, presentation: start + 100_000_000 + UInt64(b) * 5_000_000) }
                #expect(paused.flush(nextSequence: 200) == nil)
            }
            out += playout.render(frames: 240, presentation: presented).0
            presented += 5_000_000
        }
        #expect(out[..<(skip * 2)].allSatisfy { $0 == 0 }, "the priming was heard")
        #expect(Array(out[(skip * 2)...]) == Array(pcm[(skip * 2)..<(2400 * 2)]), "the output from the start is not the input")
        #expect(playout.statistics.lost == 0 && playout.statistics.concealed == 0, "\(playout.statistics)")
        #expect(playout.flush(nextSequence: 200) == rtpStart &+ 2400)
    }

    /// A link down for 3 s (Wi-Fi): nothing comes for 3 s, then the packets of the moment come again, each
    /// 100 ms before its time, and the 3 s of packets in between never. The output is silent or concealed
    /// for the 3 s and counted so (one gap, not a second of it: concealment reaches a second), then plays on
    /// in place.
    @Test func aLinkDownForSecondsIsCountedWhole() throws {
        let pcm = Self.sweep(seconds: 6)
        // 10 ms packets: 100 to 399 (1 s to 4 s) never come; from 400 on, each 100 ms before it is due, none
        // before 4.1 s (the link is back at 4 s, after the output's 100 ms latency).
        var withheld: [Int: Double] = [:]
        for index in 100..<400 { withheld[index] = .infinity }
        for index in 400..<600 { withheld[index] = max(4.1, Double(index) / 100 + 0.1 - 0.1) }
        let run = try Self.play(pcm, withheld: withheld)
        let concealed = Double(run.statistics.concealed) / 48000
        #expect(abs(concealed - 3) < 0.05, "concealed \(concealed) s: \(run.statistics)")
        let windows = Self.measure(pcm, run, skewPPM: 0, every: 0.1)
        for window in windows where window.at < 0.95 || window.at > 4.05 {
            #expect(abs(window.errorMicroseconds) < 25 && window.snr > 40, "\(window)")
        }
    }

    static func sineFitSNR(_ x: [Double], frequency: Double) -> Double {
        var w = 2 * Double.pi * frequency
        var (a, b, c) = (0.0, 0.0, 0.0)
        for step in 0..<6 {
            // Linear in a, b, c for the current w, plus (after the first, three-parameter step) the
            // derivative in w: y ≈ a·s + b·co + c + dw·t·(a·co − b·s).
            let size = step == 0 ? 3 : 4
            var m = [[Double]](repeating: [Double](repeating: 0, count: size), count: size)
            var v = [Double](repeating: 0, count: size)
            for (n, y) in x.enumerated() {
                let t = Double(n)
                let (s, co) = (sin(w * t), cos(w * t))
                let row = [s, co, 1, t * (a * co - b * s)]
                for i in 0..<size {
                    v[i] += row[i] * y
                    for j in 0..<size { m[i][j] += row[i] * row[j] }
                }
            }
            guard let solution = solve(m, v) else { break }
            (a, b, c) = (solution[0], solution[1], solution[2])
            if size == 4 { w += solution[3] }
        }
        var signal = 0.0
        var noise = 0.0
        for (n, y) in x.enumerated() {
            let fit = a * sin(w * Double(n)) + b * cos(w * Double(n)) + c
            signal += fit * fit
            noise += (y - fit) * (y - fit)
        }
        return 10 * log10(signal / max(noise, 1e-12))
    }

    /// Gaussian elimination with partial pivoting.
    static func solve(_ m: [[Double]], _ v: [Double]) -> [Double]? {
        var a = m
        var b = v
        let n = b.count
        for col in 0..<n {
            guard let pivot = (col..<n).max(by: { abs(a[$0][col]) < abs(a[$1][col]) }), abs(a[pivot][col]) > 1e-12 else { return nil }
            a.swapAt(col, pivot)
            b.swapAt(col, pivot)
            for row in (col + 1)..<n {
                let f = a[row][col] / a[col][col]
                for k in col..<n { a[row][k] -= f * a[col][k] }
                b[row] -= f * b[col]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for row in stride(from: n - 1, through: 0, by: -1) {
            x[row] = (b[row] - ((row + 1)..<n).map { a[row][$0] * x[$0] }.reduce(0, +)) / a[row][row]
        }
        return x
    }

    /// An output 150 ppm fast, a sender 40 ppm slow: the drift is corrected by resampling, so each stretch of
    /// the output is still where it is due and a pure tone stays pure (no dropped or repeated sample).
    @Test(arguments: [150.0, -150.0]) func driftIsCorrectedByResamplingWithoutAClick(skew: Double) throws {
        let pcm = Self.sweep(seconds: 6)
        let run = try Self.play(pcm, skewPPM: skew, senderDriftPPM: -40, block: 480)
        // Timing from the sweep's first 4 s (up to 3 kHz): higher up, a 50 ms window of a sweep is nearly
        // periodic and a whole-sample search can lock a period off; the tone below covers the top.
        let windows = Self.measure(pcm, run, skewPPM: skew, senderDriftPPM: -40, every: 0.5).filter { $0.at < 4 }
        #expect(windows.count >= 7)
        for window in windows {
            // Settled within 2 s of the start; before that the controller is still catching the skew up.
            // (The sweep's SNR is not asked here: a whole-sample comparison of an output resampled by a
            // fraction of a sample is not one; the tone below measures purity.)
            #expect(abs(window.errorMicroseconds) < (window.at < 2 ? 100 : 15), "\(window)")
        }
        #expect(run.statistics.corrections == 0)
        let rate = try #require(run.statistics.ratePPM)
        // Input read per output frame: (1 − 40 ppm) / (1 + skew).
        #expect(abs(rate - ((1 - 40e-6) / (1 + skew * 1e-6) - 1) * 1e6) < 3, "rate \(rate) ppm")

        let tone = Self.tone(seconds: 5, frequency: 997)
        let played = try Self.play(tone, skewPPM: skew, senderDriftPPM: -40, block: 480)
        let start = try #require(played.left.firstIndex { $0 != 0 })
        // 100 ms windows: each a sine, with no step in it. A repeated or dropped sample shifts the rest of its
        // window by a sample, which a sine fit leaves at about 20 dB. While the controller settles (and when
        // the clock filter first fits a slope, 2 s in) the rate moves by ppm within a window, a slight
        // FM that keeps the fit above 55 dB; settled, the tone is pure to the 16-bit floor.
        for at in stride(from: start + 9600, to: start + 4 * 48000, by: 9600) {
            let seconds = Double(at - start) / 48000
            let snr = Self.sineFitSNR(Array(played.left[at..<(at + 4800)]), frequency: 997 / 48000 / (1 + skew * 1e-6))
            #expect(snr > (seconds >= 3 ? 80 : 55), "tone at \(seconds) s: \(snr) dB")
        }
    }

    /// streaming.md §6.1: an output more than 240 samples (5 ms) off its schedule (a stall, a clock step) jumps
    /// back onto it, counted in `corrections`, and plays on time from there; one less far off is taken out by
    /// the rate alone, with no jump.
    @Test(arguments: [6_000_000.0, -6_000_000.0, 4_000_000.0]) func farOffTheScheduleTheOutputJumpsBackOntoIt(step: Double) throws {
        // (4 s where the rate is read at the end: still catching up then. Windows up to 3.5 s of a 6 s sweep,
        // under 1.2 kHz, where a window is not nearly periodic.)
        let pcm = Self.sweep(seconds: abs(step) > 5_000_000 ? 6 : 4)
        let run = try Self.play(pcm, block: 480, presentationStep: (seconds: 1.5, nanoseconds: step))
        if abs(step) > 5_000_000 {
            #expect(run.statistics.corrections == 1, "\(run.statistics)")
            // Back on time straight after the jump, to the whole sample it restarts on (10.4 µs).
            let after = Self.measure(pcm, run, skewPPM: 0, every: 0.25, from: 1.7).filter { $0.at < 3.5 }
            #expect(after.count >= 4)
            for window in after { #expect(abs(window.errorMicroseconds) < 12, "\(window)") }
        } else {
            #expect(run.statistics.corrections == 0, "\(run.statistics)")
            // The rate takes it out instead, at the controller's bound (+1000 ppm: 4 ms in 4 s), never beyond.
            let rate = try #require(run.statistics.ratePPM)
            #expect(abs(rate - 1000) < 0.01, "rate \(rate) ppm")
            // And nothing was skipped or left out: no run of silence inside the sweep.
            let first = try #require(run.left.firstIndex { $0 != 0 }), last = try #require(run.left.lastIndex { $0 != 0 })
            let longest = Self.longestSilence(run.left[first...last])
            #expect(longest < 8, "\(longest) silent samples in a row")
        }
    }

    /// streaming.md §6.1: through a sound server, whose latency estimate stepped by 18 to 20 ms with nothing
    /// heard moving (`PCMSink.estimatesPresentation`), a step under 50 ms is steered out at the rate's bound,
    /// with nothing cut; a stall of 50 ms and more is jumped, as on a device.
    @Test(arguments: [20_000_000.0, -20_000_000.0, 60_000_000.0]) func throughASoundServerOnlyAStallIsJumped(step: Double) throws {
        let pcm = Self.sweep(seconds: 4)
        let run = try Self.play(pcm, block: 480, presentationStep: (seconds: 1.5, nanoseconds: step), estimated: true)
        if abs(step) < 50_000_000 {
            #expect(run.statistics.corrections == 0, "\(run.statistics)")
            let rate = try #require(run.statistics.ratePPM)
            #expect(abs(rate - 1000 * (step > 0 ? 1 : -1)) < 0.01, "rate \(rate) ppm")
            // Nothing cut or left out: the output is the whole sweep, every sample of it found where the rate
            // put it (the input's length, 1000 ppm at most shorter or longer), with no run of silence inside.
            let first = try #require(run.left.firstIndex { $0 != 0 }), last = try #require(run.left.lastIndex { $0 != 0 })
            let inputFrames = Double(pcm.count / 2)
            #expect(abs(Double(last - first + 1) - inputFrames) <= inputFrames * 0.001 + 2, "\(last - first + 1) frames out")
            let longest = Self.longestSilence(run.left[first...last])
            #expect(longest < 8, "\(longest) silent samples in a row")
        } else {
            #expect(run.statistics.corrections == 1, "\(run.statistics)")
        }
    }

    /// streaming.md §6.1: in tune, the output is the input sample for sample while it stays within two samples
    /// (42 µs) of the schedule; an output whose clock steps by 1.4 samples stays in tune (not one sample
    /// resampled), one that steps by 2.9 leaves it (and is steered back by the rate).
    @Test(arguments: [30_000.0, 60_000.0]) func inTuneHoldsWithinTwoSamplesAndLeavesPastThem(step: Double) throws {
        let pcm = Self.sweep(seconds: 3)
        let run = try Self.play(pcm, block: 480, presentationStep: (seconds: 1.2, nanoseconds: step))
        #expect(run.statistics.corrections == 0)
        let input = stride(from: 0, to: pcm.count, by: 2).map { Double(pcm[$0]) }
        let first = try #require(run.left.firstIndex { $0 != 0 })
        let firstIn = try #require(input.firstIndex { $0 != 0 })
        let copied = Array(run.left[first..<(first + input.count - firstIn)]) == Array(input[firstIn...])
        if step < 2 * 1e9 / Self.rate {
            #expect(run.statistics.tuned == 1 && run.statistics.ratePPM == 0, "\(run.statistics)")
            #expect(copied, "the output was resampled")
        } else {
            #expect(run.statistics.tuned > 1 || run.statistics.ratePPM != 0, "still in tune: \(run.statistics)")
            #expect(!copied, "the output stayed the input sample for sample")
        }
    }
}
