/// Packet-level forward error correction (streaming.md §4.3): one parity packet protects a row of up to 15
/// consecutive media packets, so that any one of them lost can be rebuilt without asking the sender. The
/// parity is the XOR of the packets' recoverable fields, laid out as RFC 8627 (FlexFEC) in flexible-mask
/// mode with one protected stream:
///
/// ```
/// RTP header: V=2, CC=1, PT = the FEC payload type, its own sequence numbers and SSRC;
///             CSRC = the SSRC of the protected stream
///  0 |R=0|F=0|P|X|  CC   |M| PT recovery |        length recovery        |
///  4 |                          TS recovery                          |
///  8 |           SN base             |k=1|       mask (15 bits)        |
/// 12 |  payload recovery …
/// ```
///
/// Mask bit i (from the most significant, after k) set: packet `SN base + i` is protected. Lyre's media
/// packets have no CSRC, extension or padding, so the recoverable header fields are the marker, payload
/// type, payload length and timestamp; the SSRC is the CSRC's and the sequence number comes from the mask.
public struct FECPacket: Sendable, Equatable {
    /// The most packets one parity packet protects (a 15-bit mask).
    public static let maximumRow = 15

    public var protectedSSRC: UInt32
    public var base: UInt16
    /// Bits 14…0: packets base+0 … base+14.
    public var mask: UInt16
    /// XORs of the protected packets' second header byte (marker and payload type), payload lengths,
    /// timestamps and payloads (zero-padded to the longest).
    public var markerAndTypeRecovery: UInt8
    public var lengthRecovery: UInt16
    public var timestampRecovery: UInt32
    public var payloadRecovery: [UInt8]

    /// The sequence numbers protected.
    public var protected: [UInt16] { (0..<Self.maximumRow).filter { mask & (1 << (14 - $0)) != 0 }.map { base &+ UInt16($0) } }

    /// The parity of `packets` (1 to 15 of one stream with consecutive sequence numbers, in order).
    public init(protecting packets: [RTPPacket]) {
        precondition((1...Self.maximumRow).contains(packets.count), "a row is 1 to 15 packets")
        protectedSSRC = packets[0].ssrc
        base = packets[0].sequenceNumber
        mask = 0
        markerAndTypeRecovery = 0
        lengthRecovery = 0
        timestampRecovery = 0
        payloadRecovery = []
        for packet in packets {
            mask |= 1 << (14 - Int(packet.sequenceNumber &- base))
            absorb(packet)
        }
    }

    /// XORs one packet's recoverable fields in.
    private mutating func absorb(_ packet: RTPPacket) {
        markerAndTypeRecovery ^= (packet.marker ? 0x80 : 0) | packet.payloadType
        lengthRecovery ^= UInt16(truncatingIfNeeded: packet.payload.count)
        timestampRecovery ^= packet.timestamp
        if payloadRecovery.count < packet.payload.count {
            payloadRecovery += repeatElement(0, count: packet.payload.count - payloadRecovery.count)
        }
        for (i, byte) in packet.payload.enumerated() { payloadRecovery[i] ^= byte }
    }

    /// The one protected packet missing from `others` (every other protected packet), rebuilt; nil when
    /// `others` are not exactly the rest of the row or the result is inconsistent.
    public func recover(from others: [RTPPacket]) -> RTPPacket? {
        let protected = protected
        let have = Set(others.map(\.sequenceNumber))
        let missing = protected.filter { !have.contains($0) }
        guard missing.count == 1, others.count == protected.count - 1,
            others.allSatisfy({ $0.ssrc == protectedSSRC && protected.contains($0.sequenceNumber) })
        else { return nil }
        var sum = self
        for packet in others { sum.absorb(packet) }
        let length = Int(sum.lengthRecovery)
        guard length <= sum.payloadRecovery.count else { return nil }
        return RTPPacket(marker: sum.markerAndTypeRecovery & 0x80 != 0, payloadType: sum.markerAndTypeRecovery & 0x7F,
                         sequenceNumber: missing[0], timestamp: sum.timestampRecovery, ssrc: protectedSSRC,
                         payload: Array(sum.payloadRecovery.prefix(length)))
    }

    /// The whole RTP packet that carries this parity.
    public func serialized(payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32) -> [UInt8] {
        var out: [UInt8] = [0x81, payloadType & 0x7F]
        out.appendUInt16(sequenceNumber)
        out.appendUInt32(timestamp)
        out.appendUInt32(ssrc)
        out.appendUInt32(protectedSSRC)
        out += [0, markerAndTypeRecovery]
        out.appendUInt16(lengthRecovery)
        out.appendUInt32(timestampRecovery)
        out.appendUInt16(base)
        out.appendUInt16(0x8000 | mask)
        return out + payloadRecovery
    }

    /// Reads the parity from the RTP packet that carries it: one CSRC (the protected stream), an FEC header
    /// in flexible-mask mode with a 15-bit mask. Other layouts (RFC 8627's longer masks, fixed L/D mode,
    /// several streams) are not what Lyre sends and are refused.
    public init(parsing bytes: [UInt8]) throws(RTPError) {
        guard bytes.count <= RTPPacket.maximumSize else { throw .tooLarge }
        guard bytes.count >= 28 else { throw .truncated }
        guard bytes[0] >> 6 == 2, bytes[0] & 0x3F == 0x01, bytes[16] & 0xC0 == 0, bytes[26] & 0x80 != 0 else { throw .badVersion }
        protectedSSRC = bytes.readUInt32(at: 12)
        markerAndTypeRecovery = bytes[17]
        lengthRecovery = bytes.readUInt16(at: 18)
        timestampRecovery = bytes.readUInt32(at: 20)
        base = bytes.readUInt16(at: 24)
        mask = bytes.readUInt16(at: 26) & 0x7FFF
        payloadRecovery = Array(bytes[28...])
        guard mask != 0 else { throw .truncated }
    }
}

/// The sender's side of FEC (streaming.md §4.3), sans I/O: takes each media packet as it is sent and, after
/// every `row` consecutive ones, gives the parity packet to send after them.
public struct FECEncoder: Sendable {
    public let row: Int
    public let payloadType: UInt8
    public let ssrc: UInt32
    private var sequence: UInt16
    private var pending: [RTPPacket] = []

    public init(row: Int, payloadType: UInt8, ssrc: UInt32, firstSequence: UInt16 = .random(in: 0...UInt16.max)) {
        precondition((2...FECPacket.maximumRow).contains(row), "a row is 2 to 15 packets")
        self.row = row
        self.payloadType = payloadType
        self.ssrc = ssrc
        sequence = firstSequence
    }

    /// A media packet was sent: the parity packet to send now, when it completes a row. A packet that does
    /// not follow the last (a pause took packets back) starts a new row.
    public mutating func add(_ packet: RTPPacket) -> [UInt8]? {
        if let last = pending.last, packet.sequenceNumber != last.sequenceNumber &+ 1 || packet.ssrc != last.ssrc { pending.removeAll() }
        pending.append(packet)
        guard pending.count == row else { return nil }
        defer {
            pending.removeAll()
            sequence &+= 1
        }
        return FECPacket(protecting: pending).serialized(payloadType: payloadType, sequenceNumber: sequence,
                                                         timestamp: packet.timestamp, ssrc: ssrc)
    }
}

/// `Lyre-FEC` (streaming.md §4.3): in a UDP SETUP, `pt=P;row=N`: the sender sends FEC packets with payload
/// type P, one per N media packets. The receiver echoes it when it will use them; without the echo the sender
/// sends that room none.
public struct FECHeader: Sendable, Equatable {
    public static let name = "Lyre-FEC"
    public var payloadType: UInt8
    public var row: Int

    public init(payloadType: UInt8, row: Int) {
        self.payloadType = payloadType
        self.row = row
    }

    public init?(parsing value: String?) {
        guard let value else { return nil }
        var fields: [String: Int] = [:]
        for part in value.split(separator: ";") {
            let kv = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces.lowercased() }
            if kv.count == 2, let number = Int(kv[1]) { fields[kv[0]] = number }
        }
        guard let pt = fields["pt"], (96...127).contains(pt), let row = fields["row"], (2...FECPacket.maximumRow).contains(row) else { return nil }
        self.init(payloadType: UInt8(pt), row: row)
    }

    public var serialized: String { "pt=\(payloadType);row=\(row)" }
}
