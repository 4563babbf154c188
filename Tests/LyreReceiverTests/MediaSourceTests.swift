import LyreSRTP
import LyreWire
import NIOCore
import Testing

@testable import LyreReceiver

/// What the receiver makes of each packet of a session's media (`MediaIngress`): only its sender's, only its
/// stream, only what verifies under its SRTP key, and the sender's RTCP only from its RTCP port.
@Suite struct MediaSourceTests {
    static let sender = try! SocketAddress(ipAddress: "10.77.0.1", port: 554)
    static let senderRTCP = try! SocketAddress(ipAddress: "10.77.0.1", port: 6001)

    static func packet(_ sequence: UInt16, ssrc: UInt32 = 0x1234) -> RTPPacket {
        RTPPacket(payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(sequence) * 480, ssrc: ssrc, payload: Array(repeating: UInt8(sequence & 0xFF), count: 40))
    }

    @Test func theSameAddressOnAnotherPortIsTheSender() throws {
        #expect(MediaIngress.sameHost(try SocketAddress(ipAddress: "10.77.0.1", port: 40000), Self.sender))
        #expect(!MediaIngress.sameHost(try SocketAddress(ipAddress: "10.77.0.2", port: 554), Self.sender))
        let sender6 = try SocketAddress(ipAddress: "fd77::1", port: 554)
        #expect(MediaIngress.sameHost(try SocketAddress(ipAddress: "fd77::1", port: 40000), sender6))
        #expect(!MediaIngress.sameHost(try SocketAddress(ipAddress: "fd77::2", port: 554), sender6))
    }

    @Test func anotherFamilyOrNoSenderIsNot() throws {
        #expect(!MediaIngress.sameHost(try SocketAddress(ipAddress: "::ffff:10.77.0.1", port: 1), try SocketAddress(ipAddress: "10.77.0.1", port: 1)))
        #expect(!MediaIngress.sameHost(try SocketAddress(ipAddress: "10.77.0.1", port: 1), nil))
    }

    @Test func mediaIsTakenOnlyFromTheSendersAddress() throws {
        var ingress = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234)
        let bytes = Self.packet(1).serialized()
        #expect(ingress.datagram(ByteBuffer(bytes: bytes), from: try SocketAddress(ipAddress: "10.77.0.2", port: 6000), rtcp: false) == [.dropped(.foreign)])
        #expect(ingress.datagram(ByteBuffer(bytes: bytes), from: try SocketAddress(ipAddress: "10.77.0.1", port: 6000), rtcp: false) == [.media(Self.packet(1))])
        #expect(ingress.datagram(ByteBuffer(bytes: Array(repeating: 0x80, count: RTPPacket.maximumSize + 1)), from: Self.sender, rtcp: false) == [.dropped(.malformed)])
        #expect(ingress.datagram(ByteBuffer(bytes: [0x80, 0x60, 0]), from: Self.sender, rtcp: false) == [.dropped(.malformed)])
    }

    @Test func theStreamLocksToItsFirstSSRCWhenSetupNamedNone() {
        var ingress = MediaIngress(sender: Self.sender, srtp: nil, ssrc: nil)
        #expect(ingress.media(Self.packet(1, ssrc: 7).serialized()) == .media(Self.packet(1, ssrc: 7)))
        #expect(ingress.ssrc == 7)
        #expect(ingress.media(Self.packet(2, ssrc: 8).serialized()) == .dropped(.foreign))
        #expect(ingress.media(Self.packet(3, ssrc: 7).serialized()) == .media(Self.packet(3, ssrc: 7)))
        var named = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 9)
        #expect(named.media(Self.packet(1, ssrc: 7).serialized()) == .dropped(.foreign))
    }

    @Test func parityIsTakenForTheSessionsStreamOnly() {
        let fec = FECHeader(payloadType: 127, row: 2)
        var ingress = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234, fec: fec)
        let parity = FECPacket(protecting: [Self.packet(1), Self.packet(2)])
        #expect(ingress.media(parity.serialized(payloadType: 127, sequenceNumber: 1, timestamp: 0, ssrc: 0x1234)) == .parity(parity))
        let other = FECPacket(protecting: [Self.packet(1, ssrc: 5), Self.packet(2, ssrc: 5)])
        #expect(ingress.media(other.serialized(payloadType: 127, sequenceNumber: 2, timestamp: 0, ssrc: 0x1234)) == .dropped(.foreign))
        #expect(ingress.media([0x80, 127, 0, 1, 0, 0]) == .dropped(.malformed))
        // Without FEC, that payload type is media like any other.
        var plain = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234)
        if case .parity = plain.media(parity.serialized(payloadType: 127, sequenceNumber: 1, timestamp: 0, ssrc: 0x1234)) { Issue.record("parity without FEC") }
    }

    @Test func aPairedSessionTakesOnlyWhatVerifiesAndOnlyOnce() throws {
        let key = SRTPSession.makeKey()
        let room = try SRTPSession(.send, key: key)
        var ingress = MediaIngress(sender: Self.sender, srtp: try SRTPSession(.receive, key: key), ssrc: 0x1234)
        let protected = try #require(room.protect(Self.packet(1).serialized()))
        #expect(ingress.media(protected) == .media(Self.packet(1)))
        #expect(ingress.media(protected) == .dropped(.replayed))
        let stranger = try SRTPSession(.send, key: SRTPSession.makeKey())
        #expect(ingress.media(try #require(stranger.protect(Self.packet(2).serialized()))) == .dropped(.unauthentic))
        var altered = try #require(room.protect(Self.packet(3).serialized()))
        altered[20] ^= 1
        #expect(ingress.media(altered) == .dropped(.unauthentic))
        // Plain RTP on a paired session does not verify either.
        #expect(ingress.media(Self.packet(4).serialized()) != .media(Self.packet(4)))
        #expect(ingress.media(try #require(room.protect(Self.packet(5).serialized()))) == .media(Self.packet(5)))
    }

    @Test func theSendersRTCPIsReadOnlyFromItsRTCPPortAndForItsStream() throws {
        var ingress = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234, feedbackTarget: Self.senderRTCP, feedback: [.nack, .report])
        let report = RTCPSenderReport(ssrc: 0x1234, ntpTime: 1 << 32, rtpTime: 480, packetCount: 1, octetCount: 40)
        let sent = LyreSentReport(ssrc: 0x1234, highestSequence: 9)
        let compound = report.serialized() + sent.serialized() + RTCPSenderReport(ssrc: 5, ntpTime: 0, rtpTime: 0, packetCount: 0, octetCount: 0).serialized()
        #expect(ingress.datagram(ByteBuffer(bytes: compound), from: Self.senderRTCP, rtcp: true) == [.senderReport(report), .senderSent(sent), .ignored])
        #expect(ingress.datagram(ByteBuffer(bytes: compound), from: try SocketAddress(ipAddress: "10.77.0.1", port: 6003), rtcp: true) == [.ignored])
        #expect(ingress.datagram(ByteBuffer(bytes: compound), from: try SocketAddress(ipAddress: "10.77.0.9", port: 6001), rtcp: true) == [.dropped(.foreign)])
        #expect(ingress.datagram(ByteBuffer(bytes: [0x80, 200, 0, 9]), from: Self.senderRTCP, rtcp: true) == [.dropped(.malformed)])
        // What the sender sent is read only from a sender that takes NACKs.
        var reportsOnly = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234, feedbackTarget: Self.senderRTCP, feedback: [.report])
        #expect(reportsOnly.datagram(ByteBuffer(bytes: sent.serialized()), from: Self.senderRTCP, rtcp: true) == [.ignored])
    }

    @Test func aPairedSessionsRTCPMustVerify() throws {
        let key = SRTPSession.makeKey()
        let room = try SRTPSession(.send, key: key)
        var ingress = MediaIngress(sender: Self.sender, srtp: try SRTPSession(.receive, key: key), ssrc: 0x1234, feedbackTarget: Self.senderRTCP, feedback: [.report])
        let report = RTCPSenderReport(ssrc: 0x1234, ntpTime: 1 << 32, rtpTime: 480, packetCount: 1, octetCount: 40)
        #expect(ingress.datagram(ByteBuffer(bytes: report.serialized()), from: Self.senderRTCP, rtcp: true) != [.senderReport(report)])
        let protected = try #require(room.protectRTCP(report.serialized()))
        #expect(ingress.datagram(ByteBuffer(bytes: protected), from: Self.senderRTCP, rtcp: true) == [.senderReport(report)])
        #expect(ingress.datagram(ByteBuffer(bytes: protected), from: Self.senderRTCP, rtcp: true) == [.dropped(.replayed)])
    }

    @Test func interleavedDataIsTakenOnTheSessionsChannelsOnly() {
        var ingress = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234, interleaved: (rtp: 0, rtcp: 1))
        #expect(ingress.interleaved(channel: 0, Self.packet(1).serialized()) == .media(Self.packet(1)))
        #expect(ingress.interleaved(channel: 1, [0x80, 200, 0, 0]) == .ignored)
        #expect(ingress.interleaved(channel: 2, Self.packet(2).serialized()) == .dropped(.foreign))
        var udp = MediaIngress(sender: Self.sender, srtp: nil, ssrc: 0x1234)
        #expect(udp.interleaved(channel: 0, Self.packet(1).serialized()) == .dropped(.foreign))
    }
}
