import LyreWire
import Testing

/// RTCP generic NACK (RFC 4585 §6.2.1) and the sender's limits on answering them.
struct RTCPTests {
    /// Lost 100, 101, 103 and 116 share one PID/BLP pair (116 is bit 15); 200 needs its own.
    @Test func nackPacksNearbyLossesIntoOnePair() throws {
        let nack = RTCPGenericNACK(senderSSRC: 0x0102_0304, mediaSSRC: 0xA0B0_C0D0, sequences: [100, 101, 103, 116, 200])
        let bytes = nack.serialized()
        #expect(bytes == [0x81, 205, 0, 4, 1, 2, 3, 4, 0xA0, 0xB0, 0xC0, 0xD0, 0, 100, 0x80, 0x05, 0, 200, 0, 0])
        #expect(try RTCPGenericNACK.all(in: bytes) == [nack])
    }

    @Test func sequenceNumbersWrapInsideAPair() throws {
        let nack = RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, sequences: [65535, 0, 1])
        #expect(try RTCPGenericNACK.all(in: nack.serialized()).first?.sequences == [65535, 0, 1])
    }

    /// In a compound datagram after a receiver report, the NACK is found; other packets are skipped.
    @Test func nackAfterAReceiverReport() throws {
        let report: [UInt8] = [0x80, 201, 0, 1, 9, 9, 9, 9]
        let nack = RTCPGenericNACK(senderSSRC: 5, mediaSSRC: 6, sequences: [7])
        #expect(try RTCPGenericNACK.all(in: report + nack.serialized()) == [nack])
        #expect(try RTCPGenericNACK.all(in: report).isEmpty)
    }

    @Test func malformedRTCPIsRefused() {
        let nack = RTCPGenericNACK(senderSSRC: 5, mediaSSRC: 6, sequences: [7]).serialized()
        #expect(throws: RTCPParseError.truncated) { try RTCPGenericNACK.all(in: Array(nack.dropLast())) }
        #expect(throws: RTCPParseError.truncated) { try RTCPGenericNACK.all(in: []) }
        #expect(throws: RTCPParseError.badVersion) { try RTCPGenericNACK.all(in: [0x41] + nack.dropFirst()) }
        // A length that points past the end.
        #expect(throws: RTCPParseError.truncated) { try RTCPGenericNACK.all(in: [0x81, 205, 0, 9] + nack.dropFirst(4)) }
        // A NACK too short to hold its two SSRCs.
        #expect(throws: RTCPParseError.truncated) { try RTCPGenericNACK.all(in: [0x81, 205, 0, 1, 0, 0, 0, 5]) }
    }

    @Test func theFeedbackHeaderListsKinds() {
        #expect(FeedbackHeader.kinds("nack") == [.nack])
        #expect(FeedbackHeader.kinds("fec, NACK , report") == [.nack, .report])
        #expect(FeedbackHeader.kinds("fec").isEmpty)
        #expect(FeedbackHeader.kinds(nil).isEmpty)
        #expect(FeedbackHeader.value([.report, .nack]) == "nack, report")
    }

    /// A sender report and a receiver report with a Lyre reception report, round trip through the codec,
    /// with the bytes of RFC 3550's layout.
    @Test func reportsRoundTrip() throws {
        let block = RTCPReportBlock(ssrc: 0xA0B0_C0D0, fractionLost: 13, cumulativeLost: -2, extendedHighestSequence: 0x1_0005,
                                    jitter: 96, lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 0x8000)
        let rr = RTCPReceiverReport(ssrc: 7, blocks: [block])
        let bytes = rr.serialized()
        #expect(bytes.count == 32 && Array(bytes[0..<4]) == [0x81, 201, 0, 7])
        // Fraction lost, then the 24-bit two's complement count.
        #expect(Array(bytes[12..<16]) == [13, 0xFF, 0xFF, 0xFE])
        let app = LyreReceptionReport(ssrc: 7, mediaSSRC: 0xA0B0_C0D0, missed: 50, recoveredByRetransmission: 40,
                                      recoveredByFEC: 9, lost: 1, concealedFrames: 960)
        let sr = RTCPSenderReport(ssrc: 0xA0B0_C0D0, ntpTime: NTPTime.from(nanoseconds: 1_500_000_000), rtpTime: 4, packetCount: 5, octetCount: 6)
        #expect(sr.serialized().count == 28)
        #expect(try RTCPPacket.all(in: RTCPPacket.compound([rr.serialized(), app.serialized(), sr.serialized()]))
            == [.receiverReport(rr), .lyreReception(app), .senderReport(sr)])
        // Another application's APP packet is not Lyre's.
        var other = app.serialized()
        other[8] = UInt8(ascii: "X")
        #expect(try RTCPPacket.all(in: other) == [.other(payloadType: 204)])
        // A report that says it has more blocks than it holds.
        var short = rr.serialized()
        short[0] = 0x82
        #expect(throws: RTCPParseError.truncated) { try RTCPPacket.all(in: short) }
    }

    /// NTP format of a nanosecond clock: 1.5 s is 1 s and a half fraction; the compact form and durations.
    /// Lyre's sent report (streaming.md §4.1) after a sender report, in one datagram; the receiver's own
    /// reception report is told apart from it by the subtype.
    @Test func theSentReportRidesWithTheSenderReport() throws {
        let sent = LyreSentReport(ssrc: 0xCAFE_F00D, highestSequence: 65535)
        let bytes = sent.serialized()
        #expect(bytes == [0x81, 204, 0, 3, 0xCA, 0xFE, 0xF0, 0x0D] + Array("LYRE".utf8) + [0, 0, 0xFF, 0xFF])
        let report = RTCPSenderReport(ssrc: 0xCAFE_F00D, ntpTime: 1 << 32, rtpTime: 7, packetCount: 3, octetCount: 300)
        let packets = try RTCPPacket.all(in: RTCPPacket.compound([report.serialized(), bytes]))
        #expect(packets == [.senderReport(report), .lyreSent(sent)])
        #expect(throws: RTCPParseError.truncated) { try RTCPPacket.all(in: Array(bytes.prefix(12)) ) }
    }

    @Test func ntpTimes() {
        #expect(NTPTime.from(nanoseconds: 1_500_000_000) == 1 << 32 | 1 << 31)
        #expect(NTPTime.compact(nanoseconds: 1_500_000_000) == 0x0001_8000)
        #expect(NTPTime.nanoseconds(compact: 0x8000) == 500_000_000)
        #expect(NTPTime.compact(duration: 250_000_000) == 0x4000)
    }

    /// streaming.md §4.1 as the sender builds it (`RetransmissionBudget(bytesPerSecond: bitrate / 8)`): each
    /// packet at most 5 times, and a bucket that holds one second of the stream.
    @Test func theDefaultBudgetIsFiveTimesAndOneSecond() {
        var budget = RetransmissionBudget(bytesPerSecond: 128_000 / 8)
        #expect(budget.maximumPerPacket == 5 && budget.burst == 16_000)
        for _ in 0..<5 { #expect(budget.allow(sequence: 9, bytes: 100, now: 0) == .send) }
        #expect(budget.allow(sequence: 9, bytes: 100, now: 0) == .tooOften)
        // 16,000 bytes at once, less the 500 just sent, and not one more.
        var sent = 500
        for sequence in 10..<200 where budget.allow(sequence: UInt16(sequence), bytes: 100, now: 0) == .send { sent += 100 }
        #expect(sent == 16_000)
    }

    /// Each packet at most `maximumPerPacket` times; bytes within the bucket, which refills at the rate.
    @Test func theBudgetLimitsRepeatsAndBandwidth() {
        var budget = RetransmissionBudget(bytesPerSecond: 16_000, burst: 1_000, maximumPerPacket: 2)
        #expect(budget.allow(sequence: 1, bytes: 300, now: 0) == .send)
        #expect(budget.allow(sequence: 1, bytes: 300, now: 0) == .send)
        #expect(budget.allow(sequence: 1, bytes: 300, now: 0) == .tooOften)
        #expect(budget.allow(sequence: 2, bytes: 300, now: 0) == .send)
        #expect(budget.allow(sequence: 3, bytes: 300, now: 0) == .overBudget)
        // 25 ms at 16 kB/s refills 400 bytes: 500 in the bucket.
        #expect(budget.allow(sequence: 3, bytes: 300, now: 25_000_000) == .send)
        #expect(budget.allow(sequence: 4, bytes: 300, now: 25_000_000) == .overBudget)
        // A flood asking for everything over and over: what is resent stays within the rate.
        var sent = 0
        for i in 0..<100_000 {
            let now = UInt64(i) * 100_000  // 10 s
            if budget.allow(sequence: UInt16(truncatingIfNeeded: i % 3000), bytes: 200, now: now) == .send { sent += 200 }
        }
        #expect(sent <= 16_000 * 10 + 1_000, "\(sent) bytes resent in 10 s")
    }
}
