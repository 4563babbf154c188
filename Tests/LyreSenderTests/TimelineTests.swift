@testable import LyreSender
import LyreWire
import Testing

/// The sender's timeline without sockets, encoder or waiting (streaming.md §3, §9): what each slot sends, what
/// a pause takes back and a resume primes, where the app's content plays, what a joining room is sent.
struct TimelineTests {
    static let frame = 960  // 20 ms at 48 kHz
    static let ms: UInt64 = 1_000_000
    static let latency = 250 * ms
    /// Opus's look-ahead at 48 kHz (`OpusEncoder.lookahead`).
    static let encoderDelay = 312

    /// A timeline at RTP time `rtp` and sequence number `sequence`, with the encoder's delay set.
    static func timeline(rtp: UInt32 = 4_294_960_000, sequence: UInt16 = 65_530) -> Timeline {
        var t = Timeline(frameSamples: frame, latency: latency, lead: 100 * ms, rtp: rtp, sequence: sequence)
        t.encoderDelay = encoderDelay
        return t
    }

    /// `count` stereo frames numbered from `first`: left is the frame's number, right its negative, so any
    /// sample says where it came from (exact in Float below 2^24).
    static func ramp(_ first: Int, count: Int) -> [Float] {
        (first..<first + count).flatMap { [Float($0), -Float($0)] }
    }

    /// The next slot (macros take no mutating call).
    static func next(_ t: inout Timeline, finishing: Bool = false) throws -> Timeline.Slot {
        let slot = t.nextSlot(finishing: finishing)
        return try #require(slot)
    }

    /// The next slot's frame, which must be one.
    static func nextFrame(_ t: inout Timeline) throws -> ArraySlice<Float> {
        let pcm = try next(&t).pcm
        return try #require(pcm)
    }

    /// The frame numbers a run of interleaved samples holds (its left channel).
    static func numbers(_ pcm: ArraySlice<Float>) -> [Int] {
        stride(from: pcm.startIndex, to: pcm.endIndex, by: 2).map { Int(pcm[$0]) }
    }

    /// Every sample enqueued goes once and in order, the last part frame padded with silence; then one frame
    /// of silence carries the encoder's tail out, and the slots after it pass unsent. Sequence numbers and RTP
    /// times step by one frame across their wrap.
    @Test func everySampleGoesOnceInOrderAndTheEncoderTailIsCarriedOut() throws {
        var t = Self.timeline()
        let count = Self.frame * 5 + 123
        t.enqueue(Self.ramp(1, count: count))
        let start = t.anchor(at: 0, startDelay: 20 * Self.ms, backdate: 0)
        #expect(start.startAt == nil && start.anchor.senderClock == 20 * Self.ms)
        t.began(echoedStart: true)
        var slots: [Timeline.Slot] = []
        for _ in 0..<9 { slots.append(try Self.next(&t, finishing: true)) }
        let sent = slots.compactMap(\.pcm)
        #expect(sent.count == 7, "six frames of audio and one that carries the tail out")
        #expect(Array(sent[0..<6].map(Self.numbers).joined()) == Array(1...count) + Array(repeating: 0, count: Self.frame * 6 - count))
        #expect(sent[6].allSatisfy { $0 == 0 })
        #expect(slots[7].pcm == nil && slots[8].pcm == nil)
        for (i, slot) in slots.enumerated() {
            #expect(slot.index == UInt64(i) && !slot.resetsEncoder)
            #expect(slot.rtp == start.anchor.rtpTime &+ UInt32(i * Self.frame))
        }
        #expect(slots.prefix(7).map(\.sequence) == (0..<7).map { start.sequence &+ UInt16($0) })
        #expect(slots[7].sequence == start.sequence &+ 7, "a slot that passes unsent takes no sequence number")
        #expect(t.queuedSamples == 0 && !t.holdsUnflushedTail)
    }

    /// A pause takes back exactly what no room played: the room stopped at RTP position `stop` of the decoded
    /// stream, which is the encoder's input `encoderDelay` samples earlier. The resume sends a fresh encoder's
    /// priming (the 20 ms of input before that point) first, tells the rooms to start after it
    /// (`Lyre-Start-At`), and then the audio from the first sample not played, with nothing lost or doubled.
    @Test func aPauseTakesBackWhatNoRoomPlayedAndTheResumePrimesAFreshEncoder() throws {
        var t = Self.timeline()
        t.enqueue(Self.ramp(0, count: Self.frame * 40))
        let first = t.anchor(at: 0, startDelay: 0, backdate: 0)
        t.began(echoedStart: true)
        for _ in 0..<20 { _ = try Self.next(&t) }
        // Five and a half frames have played at the outputs.
        let now = Self.latency + 110 * Self.ms
        let paused = t.pause(at: now)
        #expect(paused.due == first.anchor.rtpTime &+ UInt32(5 * Self.frame))
        #expect(paused.rtp == first.anchor.rtpTime &+ UInt32(20 * Self.frame) && paused.sequence == first.sequence &+ 20)
        let none = t.nextSlot(finishing: false)
        #expect(none == nil, "nothing goes while paused")
        // The room's output stopped 100 samples into frame 5 of the decoded stream: a sample from the frame
        // before's tail, which only frame 5's packet carried out.
        let stop = paused.due &+ 100
        t.takeBack(from: stop)
        let resumeAt = 5 * Self.frame + 100 - Self.encoderDelay
        #expect(t.queuedSamples == (Self.frame * 40 - resumeAt) * 2)

        let resumed = t.anchor(at: now, startDelay: 20 * Self.ms, backdate: 0)
        #expect(resumed.sequence == paused.sequence && resumed.anchor.rtpTime == paused.rtp)
        #expect(resumed.startAt == resumed.anchor.rtpTime &+ UInt32(Timeline.primingSamples + Self.encoderDelay))
        t.began(echoedStart: true)
        let priming = try Self.next(&t)
        #expect(priming.resetsEncoder)
        #expect(Self.numbers(try #require(priming.pcm)) == Array(resumeAt - Timeline.primingSamples..<resumeAt))
        let next = try Self.next(&t)
        let after = try #require(next.pcm)
        #expect(!next.resetsEncoder && Self.numbers(after) == Array(resumeAt..<resumeAt + Self.frame))
    }

    /// Ten frames of a ramp sent, then paused where frame 3 was due, and taken back from there.
    static func pausedAfterTenFrames() -> Timeline {
        var t = Self.timeline()
        t.enqueue(Self.ramp(0, count: Self.frame * 20))
        _ = t.anchor(at: 0, startDelay: 0, backdate: 0)
        t.began(echoedStart: true)
        for _ in 0..<10 { _ = t.nextSlot(finishing: false) }
        let due = t.pause(at: Self.latency + 60 * Self.ms).due
        t.takeBack(from: due)
        return t
    }

    /// A receiver that does not echo `Lyre-Start-At` (version 1) would play the priming: it is silence then.
    @Test func aRoomThatWouldPlayThePrimingHearsSilence() throws {
        var t = Self.pausedAfterTenFrames()
        _ = t.anchor(at: 0, startDelay: 0, backdate: 0)
        t.began(echoedStart: false)
        let priming = try Self.nextFrame(&t)
        #expect(priming.count == Timeline.primingSamples * 2 && priming.allSatisfy { $0 == 0 })
    }

    /// Dropped audio (a seek) is not what the priming preceded: the next resume primes with silence, and the
    /// content count goes back by what was dropped.
    @Test func aSeekDropsTheQueueAndPrimesWithSilence() throws {
        var t = Self.pausedAfterTenFrames()
        t.dropQueued()
        #expect(t.queuedSamples == 0 && t.contentEnqueued == t.playedFrames(at: 0))
        t.enqueue(Self.ramp(100_000, count: Self.frame * 2))
        _ = t.anchor(at: 0, startDelay: 0, backdate: 0)
        t.began(echoedStart: true)
        #expect(try Self.nextFrame(&t).allSatisfy { $0 == 0 })
        #expect(Self.numbers(try Self.nextFrame(&t)).first == 100_000)
    }

    /// The app's content plays on the clock, and slots that passed in silence (its audio ran dry) push what
    /// follows later: `playTime` and `playedFrames` agree with the slots actually sent.
    @Test func contentPositionsFollowTheSlotsSent() throws {
        var t = Self.timeline()
        t.enqueue(Self.ramp(0, count: Self.frame * 2))
        _ = t.anchor(at: 1_000 * Self.ms, startDelay: 0, backdate: 0)
        #expect(t.playTime(ofFrame: 0) == nil, "no time while not playing")
        t.began(echoedStart: true)
        let start = 1_000 * Self.ms + Self.latency
        #expect(t.playTime(ofFrame: 0) == start)
        for _ in 0..<4 { _ = t.nextSlot(finishing: false) }  // two frames, the tail, one empty slot
        t.enqueue(Self.ramp(0, count: Self.frame))
        #expect(try Self.next(&t).pcm != nil)
        // The third frame enqueued went in slot 4, 80 ms after the anchor.
        #expect(t.playTime(ofFrame: UInt64(Self.frame * 2)) == start + 80 * Self.ms)
        #expect(t.playedFrames(at: start + 90 * Self.ms) == UInt64(Self.frame * 2 + 480))
        #expect(t.playedFrames(at: start + 500 * Self.ms) == UInt64(Self.frame * 3), "never more than was sent")
        #expect(t.sentUntil == start + 100 * Self.ms)
    }

    /// A room that joins gets at once the packets sent that it can still play: those due at least a frame
    /// from now (streaming.md §9.3). Sent packets are kept by sequence number for resends, across its wrap,
    /// and a packet taken before a pause is not sent.
    @Test func aJoiningRoomGetsWhatIsNotYetDueAndResendsFindTheirPacket() throws {
        var t = Self.timeline()
        t.enqueue(Self.ramp(0, count: Self.frame * 12))
        _ = t.anchor(at: 0, startDelay: 0, backdate: 0)
        t.began(echoedStart: true)
        var sequences: [UInt16] = []
        for i in 0..<10 {
            let slot = try Self.next(&t)
            let sent = t.sent([UInt8(i)], for: slot)
            #expect(sent)
            sequences.append(slot.sequence)
        }
        // 70 ms after the outputs started: frame 4 plays in 10 ms, too soon; frame 5 in 30 ms.
        #expect(t.packetsStillDue(at: Self.latency + 70 * Self.ms) == (5..<10).map { [UInt8($0)] })
        #expect(t.packetsStillDue(at: 0) == (0..<10).map { [UInt8($0)] })
        #expect(t.keptPacket(sequences[7]) == [7] && t.keptPacket(sequences[0]) == [0])
        #expect(t.keptPacket(sequences[9] &+ 1) == nil && t.keptPacket(sequences[0] &- 1) == nil)

        let late = try Self.next(&t)
        _ = t.pause(at: Self.latency)
        let sent = t.sent([10], for: late)
        #expect(!sent, "taken back by the pause")
        #expect(t.keptPacket(late.sequence) == nil && t.packetsStillDue(at: 0).isEmpty)
    }

    /// A live source's audio recorded while the rooms connected (`backdate`) moves the anchor earlier, by at
    /// most the latency, so that it plays as long after it was recorded as the rest.
    @Test func backdatingMovesTheAnchorByAtMostTheLatency() {
        var t = Self.timeline()
        let some = t.anchor(at: 1_000 * Self.ms, startDelay: 20 * Self.ms, backdate: 60 * Self.ms).anchor
        let most = t.anchor(at: 1_000 * Self.ms, startDelay: 20 * Self.ms, backdate: 900 * Self.ms).anchor
        #expect(some.senderClock == 960 * Self.ms && most.senderClock == 770 * Self.ms)
    }
}
