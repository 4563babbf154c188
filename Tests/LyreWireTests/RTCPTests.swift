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

    @Test func theHeaderOffersNACK() {
        #expect(RetransmitHeader.offersNACK("nack"))
        #expect(RetransmitHeader.offersNACK("fec, NACK "))
        #expect(!RetransmitHeader.offersNACK("fec"))
        #expect(!RetransmitHeader.offersNACK(nil))
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
