import LyreWire
import Testing

@testable import LyreSender

/// RECORD and FLUSH between the sender's `Timeline` and the receiver's reading of them (streaming.md §3,
/// §9.3), in process: a start, a pause, a resume that starts where the output stopped, a room that joins
/// late, and a version 1 receiver.
@Suite struct PlaybackControlTests {
    static func message(_ method: String, _ headers: [(String, String)]) -> RTSPMessage {
        RTSPMessage.request(method, uri: "rtsp://10.77.0.2:7700/", cseq: 1, headers: headers)
    }

    static func answer(_ headers: [(String, String)]) -> RTSPMessage { RTSPMessage.response(200, cseq: 1, headers: headers) }

    @Test func aStartAPauseAndAResumeMeanTheSameAtBothEnds() throws {
        var timeline = Timeline(frameSamples: 960, latency: 400_000_000, lead: 100_000_000, rtp: 4_294_960_000, sequence: 65_530)
        timeline.encoderDelay = 312
        let now: UInt64 = 5_000_000_000

        // Start: the anchor and the first frame, no start point (nothing to prime).
        let (anchor, sequence, start) = timeline.anchor(at: now, startDelay: 20_000_000, backdate: 0)
        #expect(start == nil)
        let record = RecordRequest(anchor: anchor, info: RTPInfo(sequence: sequence, rtpTime: anchor.rtpTime), startAt: start)
        let read = try #require(RecordRequest.read(Self.message("RECORD", record.headers), timed: true))
        #expect(read == record && !read.joins)
        #expect(read.anchor == PlaybackAnchor(rtpTime: 4_294_960_000, senderClock: now + 20_000_000))
        let answered = RecordAnswer.read(Self.answer(RecordAnswer(outputLatency: 12_345_678, outputDelayMilliseconds: 30, echoing: read).headers))
        #expect(answered.outputLatency == 12_345_000, "to the microsecond")
        #expect(answered.outputLatencyMilliseconds == 12.345 && answered.outputDelayMilliseconds == 30)
        #expect(answered.info == record.info && answered.startAt == nil)
        timeline.began(echoedStart: answered.startAt == start)

        // Pause 2 s later: FLUSH names the next frame, the room answers where its output stopped.
        let paused = timeline.pause(at: now + 2_000_000_000)
        let flush = Self.message("FLUSH", FlushTerms.request(next: RTPInfo(sequence: paused.sequence, rtpTime: paused.rtp)))
        #expect(FlushTerms.nextSequence(flush) == paused.sequence)
        let stoppedAt = paused.due &+ 123
        #expect(FlushTerms.stoppedAt(Self.answer(FlushTerms.answer(stoppedAt: stoppedAt))) == stoppedAt)
        #expect(FlushTerms.stoppedAt(Self.answer(FlushTerms.answer(stoppedAt: nil))) == nil, "a version 1 receiver")

        // Resume: the rooms start where the output stopped, after the priming; they echo it.
        timeline.takeBack(from: stoppedAt)
        let resumed = timeline.anchor(at: now + 3_000_000_000, startDelay: 20_000_000, backdate: 0)
        let again = RecordRequest(anchor: resumed.anchor, info: RTPInfo(sequence: resumed.sequence, rtpTime: resumed.anchor.rtpTime), startAt: resumed.startAt)
        let readAgain = try #require(RecordRequest.read(Self.message("RECORD", again.headers), timed: true))
        #expect(readAgain.startAt == resumed.anchor.rtpTime &+ UInt32(Timeline.primingSamples + 312))
        let echo = RecordAnswer.read(Self.answer(RecordAnswer(outputLatency: 0, outputDelayMilliseconds: 0, echoing: readAgain).headers))
        #expect(echo.startAt == resumed.startAt)
        // A version 1 receiver echoes no start: the sender primes with silence, which that room plays.
        let v1 = RecordAnswer.read(Self.answer([("RTP-Info", again.info!.serialized)]))
        #expect(v1.startAt == nil && v1.outputLatency == 0 && v1.outputDelayMilliseconds == 0)
        #expect(v1.startAt != resumed.startAt)
    }

    @Test func aRoomThatJoinsGetsTheAnchorAndNoRTPInfo() throws {
        var timeline = Timeline(frameSamples: 240, latency: 150_000_000, lead: 100_000_000, rtp: 77, sequence: 1)
        _ = timeline.anchor(at: 1_000, startDelay: 20_000_000, backdate: 0)
        timeline.began(echoedStart: true)
        // As `StreamSession.addRoom` asks a room that joins the running playback.
        let join = RecordRequest(anchor: timeline.anchor, info: nil, startAt: timeline.startAt)
        let read = try #require(RecordRequest.read(Self.message("RECORD", join.headers), timed: true))
        #expect(read.joins && read.anchor == timeline.anchor && read.info == nil)
    }

    @Test func aTimedSessionNeedsAnAnchorAndAnUntimedOneIgnoresIt() {
        let anchor = PlaybackAnchor(rtpTime: 1, senderClock: 2)
        #expect(RecordRequest.read(Self.message("RECORD", [("RTP-Info", "seq=1;rtptime=1")]), timed: true) == nil)
        #expect(RecordRequest.read(Self.message("RECORD", [("Lyre-Anchor", "rtptime=x;clock=2")]), timed: true) == nil)
        let untimed = RecordRequest.read(Self.message("RECORD", [("Lyre-Anchor", anchor.serialized), ("RTP-Info", "seq=1;rtptime=1")]), timed: false)
        #expect(untimed?.anchor == nil && untimed?.joins == false)
        #expect(RecordRequest.read(Self.message("RECORD", []), timed: false) == RecordRequest(anchor: nil, info: nil, startAt: nil))
    }
}
