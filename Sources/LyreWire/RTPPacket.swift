/// Why bytes are not an RTP packet Lyre can use.
public enum RTPError: Error, Equatable, Sendable {
    case truncated
    case badVersion
    case badPadding
    case tooLarge
}

/// An RTP data packet (RFC 3550 §5.1).
public struct RTPPacket: Sendable, Equatable {
    /// The largest packet Lyre reads (streaming.md §2).
    public static let maximumSize = 8192

    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var payload: [UInt8]

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, payload: [UInt8]) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.payload = payload
    }

    /// Parses a packet, skipping CSRCs, the header extension and padding.
    public init(parsing bytes: some Collection<UInt8>) throws(RTPError) {
        let b = Array(bytes)
        guard b.count <= Self.maximumSize else { throw .tooLarge }
        guard b.count >= 12 else { throw .truncated }
        guard b[0] >> 6 == 2 else { throw .badVersion }
        let hasPadding = b[0] & 0x20 != 0
        marker = b[1] & 0x80 != 0
        payloadType = b[1] & 0x7F
        sequenceNumber = UInt16(b[2]) << 8 | UInt16(b[3])
        timestamp = b.readUInt32(at: 4)
        ssrc = b.readUInt32(at: 8)
        guard let start = Self.headerLength(of: b) else { throw .truncated }
        var end = b.count
        if hasPadding {
            let padding = Int(b[b.count - 1])
            guard padding > 0, end - padding >= start else { throw .badPadding }
            end -= padding
        }
        payload = Array(b[start..<end])
    }

    /// The header's length: 12 bytes, the CSRCs, and the header extension when there is one (what SRTP leaves
    /// unencrypted). nil when the packet is not RTP version 2 or shorter than its header says.
    public static func headerLength(of b: [UInt8]) -> Int? {
        guard b.count >= 12, b[0] >> 6 == 2 else { return nil }
        var length = 12 + 4 * Int(b[0] & 0x0F)
        if b[0] & 0x10 != 0 {
            guard b.count >= length + 4 else { return nil }
            length += 4 + 4 * (Int(b[length + 2]) << 8 | Int(b[length + 3]))
        }
        return b.count >= length ? length : nil
    }

    /// The wire form: 12-byte header (no CSRC, no extension, no padding) and payload.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = [0x80, (marker ? 0x80 : 0) | (payloadType & 0x7F), UInt8(sequenceNumber >> 8), UInt8(sequenceNumber & 0xFF)]
        out.reserveCapacity(12 + payload.count)
        out.appendUInt32(timestamp)
        out.appendUInt32(ssrc)
        out += payload
        return out
    }

    /// True when the bytes look like RTCP: packet type 200…206 in the second byte (RFC 5761 §4).
    public static func isRTCP(_ bytes: some Collection<UInt8>) -> Bool {
        guard bytes.count >= 2 else { return false }
        let second = bytes[bytes.index(after: bytes.startIndex)]
        return (200...206).contains(second)
    }
}

/// The timing exchange packet (streaming.md §5): 40 bytes, big-endian.
public struct TimingPacket: Sendable, Equatable {
    public static let size = 40
    public static let magic: [UInt8] = Array("LYRT".utf8)

    public enum Kind: UInt8, Sendable { case request = 1, response = 2 }

    public var kind: Kind
    public var sequence: UInt32
    /// Receiver clock when the request was sent, ns.
    public var t1: UInt64
    /// Sender clock when the request arrived, ns (0 in a request).
    public var t2: UInt64
    /// Sender clock when the response left, ns (0 in a request).
    public var t3: UInt64

    public init(kind: Kind, sequence: UInt32, t1: UInt64, t2: UInt64 = 0, t3: UInt64 = 0) {
        self.kind = kind
        self.sequence = sequence
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
    }

    /// Nil for anything that is not exactly a version-1 timing packet.
    public init?(parsing bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        guard b.count == Self.size, Array(b[0..<4]) == Self.magic, b[4] == 1, let kind = Kind(rawValue: b[5]),
            b[6] == 0, b[7] == 0
        else { return nil }
        self.kind = kind
        sequence = b.readUInt32(at: 8)
        t1 = b.readUInt64(at: 16)
        t2 = b.readUInt64(at: 24)
        t3 = b.readUInt64(at: 32)
    }

    public func serialized() -> [UInt8] {
        var out = Self.magic + [1, kind.rawValue, 0, 0]
        out.appendUInt32(sequence)
        out.appendUInt32(0)
        out.appendUInt64(t1)
        out.appendUInt64(t2)
        out.appendUInt64(t3)
        return out
    }

    /// Offset (sender minus receiver) and round trip, in ns, given t4 (receiver clock at arrival).
    public func offsetAndDelay(t4: UInt64) -> (offset: Int64, delay: Int64) {
        let (a, b, c, d) = (Int64(bitPattern: t1), Int64(bitPattern: t2), Int64(bitPattern: t3), Int64(bitPattern: t4))
        return (offset: ((b &- a) &+ (c &- d)) / 2, delay: (d &- a) &- (c &- b))
    }
}

extension RandomAccessCollection where Element == UInt8, Index == Int {
    /// Big-endian reads at absolute index `i` (a slice keeps its parent's indices).
    func readUInt16(at i: Int) -> UInt16 { UInt16(self[i]) << 8 | UInt16(self[i + 1]) }
    func readUInt32(at i: Int) -> UInt32 {
        UInt32(self[i]) << 24 | UInt32(self[i + 1]) << 16 | UInt32(self[i + 2]) << 8 | UInt32(self[i + 3])
    }
    func readUInt64(at i: Int) -> UInt64 { UInt64(readUInt32(at: i)) << 32 | UInt64(readUInt32(at: i + 4)) }
}

extension Array where Element == UInt8 {
    mutating func appendUInt16(_ v: UInt16) { append(contentsOf: [UInt8(v >> 8), UInt8(v & 0xFF)]) }
    mutating func appendUInt32(_ v: UInt32) { append(contentsOf: [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]) }
    mutating func appendUInt64(_ v: UInt64) {
        appendUInt32(UInt32(v >> 32))
        appendUInt32(UInt32(v & 0xFFFF_FFFF))
    }
}
