import LyreWire
import Testing

/// Packet FEC (streaming.md §4.3): XOR parity over a row, in RFC 8627's flexible-mask layout.
struct FECTests {
    /// Packets of different lengths, markers and timestamps across a sequence wrap.
    static func row(_ count: Int, first: UInt16 = 65533) -> [RTPPacket] {
        (0..<count).map { (i: Int) -> RTPPacket in
            let length: Int = 40 + (37 * i) % 200
            let payload: [UInt8] = (0..<length).map { (j: Int) -> UInt8 in UInt8(truncatingIfNeeded: j * 7 + i * 13) }
            return RTPPacket(marker: i == 1, payloadType: 96, sequenceNumber: first &+ UInt16(i),
                             timestamp: 4_294_967_000 &+ UInt32(i * 960), ssrc: 0xCAFE_F00D, payload: payload)
        }
    }

    /// Any one packet of the row is rebuilt exactly from the parity (through its wire form) and the rest.
    @Test(arguments: [2, 5, 15]) func anyOneLossIsRebuilt(count: Int) throws {
        let packets = Self.row(count)
        let wire = FECPacket(protecting: packets).serialized(payloadType: 97, sequenceNumber: 7, timestamp: 99, ssrc: 0x1111)
        let parity = try FECPacket(parsing: wire)
        #expect(parity.protected == packets.map(\.sequenceNumber) && parity.protectedSSRC == 0xCAFE_F00D)
        for lost in packets.indices {
            var others = packets
            others.remove(at: lost)
            #expect(parity.recover(from: others) == packets[lost])
        }
        // Two missing, or none: nothing to rebuild.
        #expect(parity.recover(from: Array(packets.dropFirst(2))) == nil)
        #expect(parity.recover(from: packets) == nil)
    }

    /// The wire layout: an RTP header with the protected SSRC as its one CSRC, then R=F=0, the recovery
    /// fields, SN base and k=1 with a 15-bit mask whose first bits are the row.
    @Test func wireLayout() throws {
        let packets = Self.row(3, first: 10)
        let wire = FECPacket(protecting: packets).serialized(payloadType: 97, sequenceNumber: 0x0102, timestamp: 5, ssrc: 0x1111)
        #expect(Array(wire[0..<2]) == [0x81, 97] && Array(wire[12..<16]) == [0xCA, 0xFE, 0xF0, 0x0D])
        #expect(wire[16] & 0xC0 == 0 && Array(wire[24..<28]) == [0, 10, 0xF0, 0x00])
        // Malformed: too short, no CSRC, fixed-mode bits, a longer mask (k=0).
        #expect(throws: RTPError.truncated) { try FECPacket(parsing: Array(wire.prefix(20))) }
        var bad = wire
        bad[0] = 0x80
        #expect(throws: RTPError.badVersion) { try FECPacket(parsing: bad) }
        bad = wire
        bad[16] |= 0x40
        #expect(throws: RTPError.badVersion) { try FECPacket(parsing: bad) }
        bad = wire
        bad[26] &= 0x7F
        #expect(throws: RTPError.badVersion) { try FECPacket(parsing: bad) }
    }

    /// The encoder sends a parity after every `row` packets, and starts a new row after a discontinuity.
    @Test func encoderRows() throws {
        var encoder = FECEncoder(row: 3, payloadType: 97, ssrc: 5, firstSequence: 100)
        let packets = Self.row(7, first: 1)
        let parities = packets.map { encoder.add($0) }
        #expect(parities.map { $0 != nil } == [false, false, true, false, false, true, false])
        #expect(try FECPacket(parsing: parities[5]!).protected == [4, 5, 6])
        // A jump back (a pause took packets back): the row starts again.
        #expect(encoder.add(Self.row(1, first: 5)[0]) == nil)
        #expect(encoder.add(Self.row(1, first: 6)[0]) == nil)
        #expect(try FECPacket(parsing: encoder.add(Self.row(1, first: 7)[0])!).protected == [5, 6, 7])
    }

    @Test func theHeader() {
        #expect(FECHeader(parsing: "pt=97;row=4") == FECHeader(payloadType: 97, row: 4))
        #expect(FECHeader(parsing: " PT=100 ; ROW=15") == FECHeader(payloadType: 100, row: 15))
        #expect(FECHeader(parsing: "pt=97;row=16") == nil && FECHeader(parsing: "pt=12;row=4") == nil && FECHeader(parsing: nil) == nil)
        #expect(FECHeader(payloadType: 97, row: 4).serialized == "pt=97;row=4")
    }
}
