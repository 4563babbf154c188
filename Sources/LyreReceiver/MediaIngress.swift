import LyreSRTP
import LyreWire
import NIOCore

/// What each packet of a session's media is, as it came: from where, under which SRTP, in which stream (the
/// one SSRC the session locks to), as media, FEC parity or the sender's RTCP (streaming.md §2, §4; pairing.md
/// §6). Sans-I/O: it takes bytes and their source address and returns what to do with them; the connection
/// handler reads the sockets, counts the drops and hands the media to the playout.
struct MediaIngress {
    enum Dropped: Equatable { case foreign, malformed, replayed, unauthentic }

    enum Outcome: Equatable {
        /// A media packet of the session's stream.
        case media(RTPPacket)
        /// FEC parity for the session's stream (§4.3).
        case parity(FECPacket)
        /// The sender's RTCP sender report (§4.2).
        case senderReport(RTCPSenderReport)
        /// Lyre's report of what the sender sent (§4.1), taken when the sender takes NACKs.
        case senderSent(LyreSentReport)
        case dropped(Dropped)
        /// Accepted and ignored: RTCP that Lyre does not read, or that is not for this stream (§4).
        case ignored
    }

    /// The sender's address: media from any other is foreign, whatever its port.
    let sender: SocketAddress?
    /// The session's SRTP, when it is paired: the sender's RTP and RTCP, under one key.
    let srtp: SRTPSession?
    /// The payload type of the sender's FEC, when it sends it.
    let fec: FECHeader?
    /// The sender's RTCP port, the one address whose RTCP is read.
    let feedbackTarget: SocketAddress?
    /// The feedback the sender takes (NACKs, reports).
    let feedback: Set<FeedbackHeader.Kind>
    /// The session's interleaved channels, when its media comes over the RTSP connection.
    let interleaved: (rtp: UInt8, rtcp: UInt8)?
    /// The stream's SSRC: the one SETUP named, or else the first packet's.
    private(set) var ssrc: UInt32?

    init(sender: SocketAddress?, srtp: SRTPSession?, ssrc: UInt32?, fec: FECHeader? = nil,
         feedbackTarget: SocketAddress? = nil, feedback: Set<FeedbackHeader.Kind> = [],
         interleaved: (rtp: UInt8, rtcp: UInt8)? = nil) {
        self.sender = sender
        self.srtp = srtp
        self.ssrc = ssrc
        self.fec = fec
        self.feedbackTarget = feedbackTarget
        self.feedback = feedback
        self.interleaved = interleaved
    }

    /// A UDP datagram on the session's RTP port (`rtcp` false) or RTCP port. Its bytes are copied out only
    /// after its source and size are checked, so a flood from a stranger costs no copy.
    mutating func datagram(_ buffer: ByteBuffer, from source: SocketAddress, rtcp: Bool) -> [Outcome] {
        guard Self.sameHost(source, sender) else { return [.dropped(.foreign)] }
        // The sender's reports (§4.2) from its RTCP port; other RTCP is accepted and ignored (§4).
        if rtcp, source != feedbackTarget { return [.ignored] }
        guard buffer.readableBytes <= RTPPacket.maximumSize else { return [.dropped(.malformed)] }
        let bytes = Array(buffer.readableBytesView)
        guard rtcp else { return [media(bytes)] }
        let packets: [RTCPPacket]
        switch RTCPPacket.read(bytes, through: srtp) {
        case .success(let read): packets = read
        case .failure(let failure): return [.dropped(Self.dropped(failure))]
        }
        return packets.map { packet in
            switch packet {
            case .senderReport(let report) where report.ssrc == ssrc: .senderReport(report)
            case .lyreSent(let sent) where sent.ssrc == ssrc && feedback.contains(.nack): .senderSent(sent)
            default: .ignored
            }
        }
    }

    /// Interleaved data on the RTSP connection (streaming.md §2), on a session that asked for it.
    mutating func interleaved(channel: UInt8, _ payload: [UInt8]) -> Outcome {
        guard let interleaved else { return .dropped(.foreign) }
        if channel == interleaved.rtp { return media(payload) }
        return channel == interleaved.rtcp ? .ignored : .dropped(.foreign)
    }

    /// An RTP packet (or FEC parity) as it came, through SRTP when the session is paired: what does not
    /// verify, or came before, is dropped.
    mutating func media(_ received: [UInt8]) -> Outcome {
        if RTPPacket.isRTCP(received) { return .ignored }
        let bytes: [UInt8]
        switch srtp.map({ $0.unprotect(received) }) ?? .success(received) {
        case .success(let plain): bytes = plain
        case .failure(let failure): return .dropped(Self.dropped(failure))
        }
        if let fec, bytes.count >= 2, bytes[1] & 0x7F == fec.payloadType {
            // FEC for the locked stream only (its CSRC).
            guard let parity = try? FECPacket(parsing: bytes) else { return .dropped(.malformed) }
            return parity.protectedSSRC == ssrc ? .parity(parity) : .dropped(.foreign)
        }
        guard let packet = try? RTPPacket(parsing: bytes) else { return .dropped(.malformed) }
        if let ssrc, packet.ssrc != ssrc { return .dropped(.foreign) }
        ssrc = packet.ssrc
        return .media(packet)
    }

    static func dropped(_ failure: SRTPSession.Failure) -> Dropped {
        switch failure {
        case .replayed: .replayed
        case .malformed: .malformed
        default: .unauthentic
        }
    }

    /// True when `a` and `b` are the same IP address (whatever their ports; for IPv6, and the same scope).
    static func sameHost(_ a: SocketAddress, _ b: SocketAddress?) -> Bool {
        guard var b, let port = a.port, b.port != nil else { return false }
        b.port = port
        return a == b
    }
}
