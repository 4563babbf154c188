/// RTCP transport-layer feedback: the generic NACK of RFC 4585 §6.2.1, which a receiver sends to ask the
/// sender for RTP packets it has not received (streaming.md §4.1). Sent on its own (reduced-size RTCP,
/// RFC 5506): no receiver report needs to go with it.
///
/// ```
///  0                   1                   2                   3
///  V=2|P|  FMT=1  |    PT=205     |          length (words − 1)
///                  SSRC of packet sender (the receiver)
///                  SSRC of media source (the stream)
///  PID (first lost sequence)      |  BLP (bit i: PID+i+1 lost too)
///  … more PID/BLP pairs
/// ```
public struct RTCPGenericNACK: Sendable, Equatable {
    public static let payloadType: UInt8 = 205
    public static let format: UInt8 = 1
    /// At most this many sequence numbers in one NACK (a NACK for more is truncated to the newest).
    public static let maximumSequences = 512

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    /// The sequence numbers asked for, ascending in the order given.
    public var sequences: [UInt16]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, sequences: [UInt16]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.sequences = Array(sequences.suffix(Self.maximumSequences))
    }

    /// The packet: sequence numbers within 16 of a pair's PID share its bitmask.
    public func serialized() -> [UInt8] {
        var pairs: [(pid: UInt16, blp: UInt16)] = []
        for sequence in sequences {
            if let last = pairs.last {
                let distance = sequence &- last.pid
                if distance == 0 { continue }
                if distance <= 16 {
                    pairs[pairs.count - 1].blp |= 1 << (distance - 1)
                    continue
                }
            }
            pairs.append((sequence, 0))
        }
        var bytes: [UInt8] = [0x80 | Self.format, Self.payloadType]
        bytes.appendUInt16(UInt16(2 + pairs.count))
        bytes.appendUInt32(senderSSRC)
        bytes.appendUInt32(mediaSSRC)
        for pair in pairs {
            bytes.appendUInt16(pair.pid)
            bytes.appendUInt16(pair.blp)
        }
        return bytes
    }

    /// Every generic NACK in a compound RTCP datagram; other RTCP packets in it are skipped. Throws when the
    /// datagram is not well-formed RTCP (RFC 3550 §6.4: version 2, lengths that add up).
    public static func all(in datagram: [UInt8]) throws(RTCPParseError) -> [RTCPGenericNACK] {
        var found: [RTCPGenericNACK] = []
        var offset = 0
        guard !datagram.isEmpty else { throw .truncated }
        while offset < datagram.count {
            guard datagram.count - offset >= 4 else { throw .truncated }
            guard datagram[offset] >> 6 == 2 else { throw .badVersion }
            let length = (Int(datagram[offset + 2]) << 8 | Int(datagram[offset + 3]) + 1) * 4
            guard datagram.count - offset >= length else { throw .truncated }
            let format = datagram[offset] & 0x1F
            if datagram[offset + 1] == payloadType, format == Self.format {
                guard length >= 12 else { throw .truncated }
                var sequences: [UInt16] = []
                var at = offset + 12
                while at < offset + length {
                    let (pid, blp) = (datagram.readUInt16(at: at), datagram.readUInt16(at: at + 2))
                    sequences.append(pid)
                    for bit in 0..<16 where blp & (1 << bit) != 0 { sequences.append(pid &+ UInt16(bit + 1)) }
                    at += 4
                }
                found.append(RTCPGenericNACK(
                    senderSSRC: datagram.readUInt32(at: offset + 4), mediaSSRC: datagram.readUInt32(at: offset + 8),
                    sequences: sequences))
            }
            offset += length
        }
        return found
    }
}

public enum RTCPParseError: Error, Sendable, Equatable {
    case truncated
    case badVersion
}

/// `Lyre-Retransmit` (streaming.md §4.1): in SETUP, the sender says it resends packets asked for by NACK to
/// its second client port; the receiver echoes it when it will ask.
public enum RetransmitHeader {
    public static let name = "Lyre-Retransmit"
    public static let nack = "nack"

    /// True when the header's comma-separated list has `nack`.
    public static func offersNACK(_ value: String?) -> Bool {
        value?.split(separator: ",").contains { String($0).trimmingSpaces.lowercased() == nack } ?? false
    }
}

/// The sender's limits on answering NACKs (streaming.md §4.1), so that retransmission never becomes an
/// amplifier: each packet is resent at most `maximumPerPacket` times, and the bytes resent are capped by a
/// token bucket that refills at `bytesPerSecond` (the stream's own bitrate) and holds at most `burst` bytes.
/// Sans I/O: the clock is given.
public struct RetransmissionBudget: Sendable {
    public enum Verdict: Sendable, Equatable { case send, tooOften, overBudget }

    public let bytesPerSecond: Double
    public let burst: Double
    public let maximumPerPacket: Int
    private var tokens: Double
    private var refilled: UInt64?
    /// How often each recent sequence number was resent; numbers far behind the newest are forgotten.
    private var resent: [UInt16: Int] = [:]
    private var newest: UInt16?

    public init(bytesPerSecond: Double, burst: Double? = nil, maximumPerPacket: Int = 5) {
        self.bytesPerSecond = bytesPerSecond
        self.burst = burst ?? bytesPerSecond
        self.maximumPerPacket = maximumPerPacket
        tokens = self.burst
    }

    /// May `bytes` of packet `sequence` be resent at `now` (ns)? Counts it when it may.
    public mutating func allow(sequence: UInt16, bytes: Int, now: UInt64) -> Verdict {
        if let refilled, now > refilled { tokens = min(burst, tokens + Double(now - refilled) * 1e-9 * bytesPerSecond) }
        refilled = max(refilled ?? now, now)
        guard resent[sequence, default: 0] < maximumPerPacket else { return .tooOften }
        guard tokens >= Double(bytes) else { return .overBudget }
        tokens -= Double(bytes)
        resent[sequence, default: 0] += 1
        if newest.map({ Int16(bitPattern: sequence &- $0) > 0 }) ?? true { newest = sequence }
        if resent.count > 1024, let newest {
            resent = resent.filter { Int16(bitPattern: newest &- $0.key) < 1024 && Int16(bitPattern: newest &- $0.key) >= 0 }
        }
        return .send
    }
}
