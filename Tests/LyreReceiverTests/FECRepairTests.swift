import LyreReceiver
import LyreWire
import Testing

/// The receiver's FEC window (streaming.md §4.3): it keeps the last 64 media packets and the last 16 parity
/// packets that still protect something missing, so a parity rebuilds a packet only while the rest of its
/// row is in that window.
struct FECRepairTests {
    static func packet(_ sequence: UInt16) -> RTPPacket {
        RTPPacket(payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, ssrc: 1,
                  payload: (0..<40).map { UInt8(truncatingIfNeeded: Int(sequence) &* 31 &+ $0) })
    }

    static func parity(_ sequences: [UInt16]) throws -> FECPacket {
        try FECPacket(parsing: FECPacket(protecting: sequences.map(packet)).serialized(payloadType: 97, sequenceNumber: 0, timestamp: 0, ssrc: 2))
    }

    /// Packet 0 came, 1 was lost; `others` media packets came after 0, then the parity of (0, 1).
    @Test(arguments: [63, 64]) func aParityRebuildsFromTheLast64MediaPackets(others: Int) throws {
        var repair = FECRepair()
        #expect(repair.media(Self.packet(0)).isEmpty)
        for sequence in 0..<others { #expect(repair.media(Self.packet(UInt16(1000 + sequence))).isEmpty) }
        let rebuilt = repair.parity(try Self.parity([0, 1]))
        if others < 64 {
            #expect(rebuilt == [Self.packet(1)])
        } else {
            #expect(rebuilt.isEmpty, "packet 0 is 65 packets old, forgotten")
        }
    }

    /// The parity of (0, 1) came while both were missing; `others` parities of rows still missing two came
    /// after it; then packet 0.
    @Test(arguments: [15, 16]) func aParityWaitsAmongTheLast16(others: Int) throws {
        var repair = FECRepair()
        #expect(repair.parity(try Self.parity([0, 1])).isEmpty)
        for row in 0..<others {
            let first = UInt16(2000 + 2 * row)
            #expect(repair.parity(try Self.parity([first, first + 1])).isEmpty)
        }
        let rebuilt = repair.media(Self.packet(0))
        if others < 16 {
            #expect(rebuilt == [Self.packet(1)])
        } else {
            #expect(rebuilt.isEmpty, "the parity is 17 parities old, forgotten")
        }
    }
}
