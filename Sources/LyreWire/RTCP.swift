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
        try RTCPPacket.all(in: datagram).compactMap { if case .nack(let nack) = $0 { nack } else { nil } }
    }

    init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let at = packet.startIndex
        guard packet.count >= 12 else { throw .truncated }
        var sequences: [UInt16] = []
        for pair in stride(from: at + 12, to: packet.endIndex, by: 4) {
            let (pid, blp) = (packet.readUInt16(at: pair), packet.readUInt16(at: pair + 2))
            sequences.append(pid)
            for bit in 0..<16 where blp & (1 << bit) != 0 { sequences.append(pid &+ UInt16(bit + 1)) }
        }
        self.init(senderSSRC: packet.readUInt32(at: at + 4), mediaSSRC: packet.readUInt32(at: at + 8), sequences: sequences)
    }
}

/// One RTCP packet of a compound datagram (RFC 3550 §6): the kinds Lyre reads, and the rest by type.
public enum RTCPPacket: Sendable, Equatable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case nack(RTCPGenericNACK)
    case lyreReception(LyreReceptionReport)
    case lyreSent(LyreSentReport)
    case other(payloadType: UInt8)

    /// The packets of a compound RTCP datagram. Throws when the datagram is not well-formed RTCP (RFC 3550
    /// §6.4: version 2, lengths that add up) or a packet Lyre reads is too short for what it says it holds.
    public static func all(in datagram: [UInt8]) throws(RTCPParseError) -> [RTCPPacket] {
        var found: [RTCPPacket] = []
        var offset = 0
        guard !datagram.isEmpty else { throw .truncated }
        while offset < datagram.count {
            guard datagram.count - offset >= 4 else { throw .truncated }
            guard datagram[offset] >> 6 == 2 else { throw .badVersion }
            let length = (Int(datagram[offset + 2]) << 8 | Int(datagram[offset + 3]) + 1) * 4
            guard datagram.count - offset >= length else { throw .truncated }
            let packet = datagram[offset..<offset + length]
            let count = datagram[offset] & 0x1F
            let lyre = packet.count >= 12 && Array(packet.dropFirst(8).prefix(4)) == LyreReceptionReport.name
            switch datagram[offset + 1] {
            case RTCPSenderReport.payloadType: found.append(.senderReport(try RTCPSenderReport(parsing: packet)))
            case RTCPReceiverReport.payloadType: found.append(.receiverReport(try RTCPReceiverReport(parsing: packet)))
            case RTCPGenericNACK.payloadType where count == RTCPGenericNACK.format: found.append(.nack(try RTCPGenericNACK(parsing: packet)))
            case LyreReceptionReport.payloadType where lyre && count == LyreReceptionReport.subtype:
                found.append(.lyreReception(try LyreReceptionReport(parsing: packet)))
            case LyreSentReport.payloadType where lyre && count == LyreSentReport.subtype:
                found.append(.lyreSent(try LyreSentReport(parsing: packet)))
            case let other: found.append(.other(payloadType: other))
            }
            offset += length
        }
        return found
    }

    /// A compound datagram of `packets`, each already serialized.
    public static func compound(_ packets: [[UInt8]]) -> [UInt8] { packets.flatMap { $0 } }
}

/// A reception report block (RFC 3550 §6.4.1): what one receiver saw of one source.
public struct RTCPReportBlock: Sendable, Equatable {
    public var ssrc: UInt32
    /// Packets lost since the last report, as a fraction of those expected, ×256.
    public var fractionLost: UInt8
    /// Packets expected and not received since reception began (24 bits, signed: duplicates can make it
    /// negative).
    public var cumulativeLost: Int32
    /// The highest sequence number received, extended with the count of wrap-arounds.
    public var extendedHighestSequence: UInt32
    /// Interarrival jitter, in RTP timestamp units (RFC 3550 §6.4.1, A.8).
    public var jitter: UInt32
    /// The middle 32 bits of the NTP timestamp of the last sender report, 0 if none.
    public var lastSenderReport: UInt32
    /// From receiving that sender report to sending this block, in 1/65536 s.
    public var delaySinceLastSenderReport: UInt32

    public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequence: UInt32, jitter: UInt32,
                lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static let size = 24

    func append(to bytes: inout [UInt8]) {
        bytes.appendUInt32(ssrc)
        bytes.appendUInt32(UInt32(fractionLost) << 24 | UInt32(bitPattern: cumulativeLost) & 0xFF_FFFF)
        bytes.appendUInt32(extendedHighestSequence)
        bytes.appendUInt32(jitter)
        bytes.appendUInt32(lastSenderReport)
        bytes.appendUInt32(delaySinceLastSenderReport)
    }

    init(parsing b: ArraySlice<UInt8>, at i: Int) {
        let word = b.readUInt32(at: i + 4)
        // Sign-extend the 24-bit count.
        let lost = Int32(bitPattern: word << 8) >> 8
        self.init(ssrc: b.readUInt32(at: i), fractionLost: UInt8(word >> 24), cumulativeLost: lost,
                  extendedHighestSequence: b.readUInt32(at: i + 8), jitter: b.readUInt32(at: i + 12),
                  lastSenderReport: b.readUInt32(at: i + 16), delaySinceLastSenderReport: b.readUInt32(at: i + 20))
    }

    static func blocks(_ count: UInt8, in packet: ArraySlice<UInt8>, from start: Int) throws(RTCPParseError) -> [RTCPReportBlock] {
        guard packet.endIndex - start >= Int(count) * size else { throw .truncated }
        return (0..<Int(count)).map { RTCPReportBlock(parsing: packet, at: start + $0 * size) }
    }
}

/// NTP-format time (RFC 3550 §4) of a nanosecond clock: seconds in the high 32 bits, fraction in the low.
/// Lyre puts its own monotonic clock here (streaming.md §4.2): only the sender reads it back.
public enum NTPTime {
    public static func from(nanoseconds: UInt64) -> UInt64 {
        let seconds = nanoseconds / 1_000_000_000
        let fraction = ((nanoseconds % 1_000_000_000) << 32) / 1_000_000_000
        return seconds << 32 | fraction
    }

    /// The middle 32 bits (RFC 3550's "compact" form: 16.16 seconds), as LSR and round trips use.
    public static func compact(nanoseconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: from(nanoseconds: nanoseconds) >> 16) }

    /// A compact duration (1/65536 s units) in nanoseconds.
    public static func nanoseconds(compact: UInt32) -> UInt64 { (UInt64(compact) * 1_000_000_000) >> 16 }

    /// A duration in nanoseconds, compact (1/65536 s units).
    public static func compact(duration nanoseconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: (nanoseconds << 16) / 1_000_000_000) }
}

/// A sender report (RFC 3550 §6.4.1, PT 200). Lyre's sender sends one a second to each room, without
/// report blocks; receivers answer with its time in their reports, which gives the sender the round trip.
public struct RTCPSenderReport: Sendable, Equatable {
    public static let payloadType: UInt8 = 200
    public var ssrc: UInt32
    public var ntpTime: UInt64
    public var rtpTime: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var blocks: [RTCPReportBlock]

    public init(ssrc: UInt32, ntpTime: UInt64, rtpTime: UInt32, packetCount: UInt32, octetCount: UInt32, blocks: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.ntpTime = ntpTime
        self.rtpTime = rtpTime
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.blocks = Array(blocks.prefix(31))
    }

    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = [0x80 | UInt8(blocks.count), Self.payloadType]
        bytes.appendUInt16(UInt16(6 + blocks.count * 6))
        bytes.appendUInt32(ssrc)
        bytes.appendUInt64(ntpTime)
        bytes.appendUInt32(rtpTime)
        bytes.appendUInt32(packetCount)
        bytes.appendUInt32(octetCount)
        for block in blocks { block.append(to: &bytes) }
        return bytes
    }

    init(parsing p: ArraySlice<UInt8>) throws(RTCPParseError) {
        let at = p.startIndex
        guard p.count >= 28 else { throw .truncated }
        self.init(ssrc: p.readUInt32(at: at + 4), ntpTime: p.readUInt64(at: at + 8), rtpTime: p.readUInt32(at: at + 16),
                  packetCount: p.readUInt32(at: at + 20), octetCount: p.readUInt32(at: at + 24),
                  blocks: try RTCPReportBlock.blocks(p[at] & 0x1F, in: p, from: at + 28))
    }
}

/// A receiver report (RFC 3550 §6.4.2, PT 201).
public struct RTCPReceiverReport: Sendable, Equatable {
    public static let payloadType: UInt8 = 201
    public var ssrc: UInt32
    public var blocks: [RTCPReportBlock]

    public init(ssrc: UInt32, blocks: [RTCPReportBlock]) {
        self.ssrc = ssrc
        self.blocks = Array(blocks.prefix(31))
    }

    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = [0x80 | UInt8(blocks.count), Self.payloadType]
        bytes.appendUInt16(UInt16(1 + blocks.count * 6))
        bytes.appendUInt32(ssrc)
        for block in blocks { block.append(to: &bytes) }
        return bytes
    }

    init(parsing p: ArraySlice<UInt8>) throws(RTCPParseError) {
        let at = p.startIndex
        guard p.count >= 8 else { throw .truncated }
        self.init(ssrc: p.readUInt32(at: at + 4), blocks: try RTCPReportBlock.blocks(p[at] & 0x1F, in: p, from: at + 8))
    }
}

/// What a Lyre receiver did about loss (streaming.md §4.2), in an RTCP APP packet (RFC 3550 §6.7: PT 204,
/// subtype 0, name `LYRE`) sent with each receiver report. A receiver report counts a resent packet as
/// received, so it shows only what stayed lost; this shows what the network lost and what was repaired.
/// Counts are since the session began.
public struct LyreReceptionReport: Sendable, Equatable {
    public static let payloadType: UInt8 = 204
    public static let subtype: UInt8 = 0
    static let name: [UInt8] = Array("LYRE".utf8)

    public var ssrc: UInt32
    public var mediaSSRC: UInt32
    /// Packets that did not come the first time (gaps noticed on arrival).
    public var missed: UInt32
    /// Of those, packets that came when asked for again (§4.1).
    public var recoveredByRetransmission: UInt32
    /// Of those, packets rebuilt from FEC (§4.3).
    public var recoveredByFEC: UInt32
    /// Packets never played (concealed instead).
    public var lost: UInt32
    /// Frames (48 kHz) of concealment played.
    public var concealedFrames: UInt32

    public init(ssrc: UInt32, mediaSSRC: UInt32, missed: UInt32, recoveredByRetransmission: UInt32, recoveredByFEC: UInt32,
                lost: UInt32, concealedFrames: UInt32) {
        self.ssrc = ssrc
        self.mediaSSRC = mediaSSRC
        self.missed = missed
        self.recoveredByRetransmission = recoveredByRetransmission
        self.recoveredByFEC = recoveredByFEC
        self.lost = lost
        self.concealedFrames = concealedFrames
    }

    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = [0x80 | Self.subtype, Self.payloadType]
        bytes.appendUInt16(8)
        bytes.appendUInt32(ssrc)
        bytes += Self.name
        for value in [mediaSSRC, missed, recoveredByRetransmission, recoveredByFEC, lost, concealedFrames] { bytes.appendUInt32(value) }
        return bytes
    }

    init(parsing p: ArraySlice<UInt8>) throws(RTCPParseError) {
        let at = p.startIndex
        guard p.count >= 36 else { throw .truncated }
        let v = (0..<6).map { p.readUInt32(at: at + 12 + 4 * $0) }
        self.init(ssrc: p.readUInt32(at: at + 4), mediaSSRC: v[0], missed: v[1], recoveredByRetransmission: v[2],
                  recoveredByFEC: v[3], lost: v[4], concealedFrames: v[5])
    }
}

/// What a Lyre sender has sent (streaming.md §4.1), in an RTCP APP packet (PT 204, subtype 1, the reception
/// report's name `LYRE`): the highest sequence number of the stream sent to this receiver. It goes with each
/// sender report and right after a stream's last packet, so that a receiver notices lost packets that no
/// later packet shows missing (the end of a stream).
public struct LyreSentReport: Sendable, Equatable {
    public static let payloadType: UInt8 = 204
    public static let subtype: UInt8 = 1
    /// The stream's SSRC.
    public var ssrc: UInt32
    public var highestSequence: UInt16

    public init(ssrc: UInt32, highestSequence: UInt16) {
        self.ssrc = ssrc
        self.highestSequence = highestSequence
    }

    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = [0x80 | Self.subtype, Self.payloadType]
        bytes.appendUInt16(3)
        bytes.appendUInt32(ssrc)
        bytes += LyreReceptionReport.name
        bytes.appendUInt32(UInt32(highestSequence))
        return bytes
    }

    init(parsing p: ArraySlice<UInt8>) throws(RTCPParseError) {
        let at = p.startIndex
        guard p.count >= 16 else { throw .truncated }
        self.init(ssrc: p.readUInt32(at: at + 4), highestSequence: UInt16(truncatingIfNeeded: p.readUInt32(at: at + 12)))
    }
}

public enum RTCPParseError: Error, Sendable, Equatable {
    case truncated
    case badVersion
}

/// `Lyre-Feedback` (streaming.md §4.1, §4.2): in a UDP SETUP, the RTCP feedback a sender takes on its second
/// client port: `nack` (it resends packets asked for) and `report` (receiver reports and Lyre's reception
/// report, which it shows as the room's link quality). The receiver's answer lists those it will send.
public enum FeedbackHeader {
    public static let name = "Lyre-Feedback"

    public enum Kind: String, Sendable, CaseIterable { case nack, report }

    /// The kinds a header's comma-separated list names; unknown ones are ignored.
    public static func kinds(_ value: String?) -> Set<Kind> {
        Set(value?.split(separator: ",").compactMap { Kind(rawValue: String($0).trimmingSpaces.lowercased()) } ?? [])
    }

    public static func value(_ kinds: Set<Kind>) -> String {
        Kind.allCases.filter(kinds.contains).map(\.rawValue).joined(separator: ", ")
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
