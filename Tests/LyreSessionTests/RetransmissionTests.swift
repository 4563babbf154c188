import LyreWire
import NIOCore
import Synchronization
import Testing

@testable import LyreReceiver
@testable import LyreSender

/// Loss repaired by retransmission (streaming.md §4.1), the sender's feedback (`LinkFeedback`) against the
/// receiver's media path (`MediaIngress`, `Playout` and its `RetransmissionRequests`), in process: packets lost
/// in the middle of the stream and at its very end (which only the sender's sent report shows) are asked for,
/// resent byte for byte, taken and counted.
@Suite struct RetransmissionTests {
    static let ssrc: UInt32 = 0x1234_5678
    static let format = AudioFormat(encoding: .l16, payloadType: 96)

    @Test func lostPacketsAreAskedForResentByteForByteAndTaken() throws {
        let senderRTP = try SocketAddress(ipAddress: "10.77.0.1", port: 6000)
        let senderRTCP = try SocketAddress(ipAddress: "10.77.0.1", port: 6001)
        let receiverRTCP = try SocketAddress(ipAddress: "10.77.0.2", port: 7001)
        // 20 packets of 10 ms, their sequence numbers wrapping through 0.
        let packets: [[UInt8]] = (0..<20).map { index in
            let payload = (0..<1920).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
            return RTPPacket(payloadType: 96, sequenceNumber: 65_530 &+ UInt16(index), timestamp: 1_000 &+ UInt32(index * 480),
                             ssrc: Self.ssrc, payload: payload).serialized()
        }
        let kept = Dictionary(uniqueKeysWithValues: packets.enumerated().map { (65_530 &+ UInt16($0.offset), $0.element) })

        // The sender: what it sent, and its feedback from the receiver's RTCP address.
        let feedback = LinkFeedback(ssrc: Self.ssrc, bitrate: 1_536_000)
        let resent = Mutex<[[UInt8]]>([])
        feedback.start(receiver: receiverRTCP, lookup: { kept[$0] }, now: 0) { packet in resent.withLock { $0.append(packet) } }
        for packet in packets { feedback.sent(sequence: try RTPPacket(parsing: packet).sequenceNumber, payloadBytes: packet.count - 12) }

        // The receiver: a session that takes NACKs, as SETUP agreed.
        var ingress = MediaIngress(sender: senderRTP, srtp: nil, ssrc: Self.ssrc, feedbackTarget: senderRTCP, feedback: [.nack, .report])
        var playout = try Playout(format: Self.format, latency: 200_000_000, timed: false)
        playout.record(anchor: nil)
        var asked: [UInt16] = []
        func arrive(_ bytes: [UInt8], at now: UInt64) {
            guard case .media(let packet) = ingress.datagram(ByteBuffer(bytes: bytes), from: senderRTP, rtcp: false).first else {
                Issue.record("not taken as media"); return
            }
            asked += playout.receive(packet, arrival: now)
        }
        /// The receiver's NACK for what it asks, as `SessionMedia` sends it, taken by the sender.
        func askAgain(at now: UInt64) {
            guard !asked.isEmpty else { return }
            feedback.received(RTCPGenericNACK(senderSSRC: 99, mediaSSRC: Self.ssrc, sequences: asked).serialized(), from: receiverRTCP, now: now)
            asked = []
        }

        // Lost: two across the wrap (65535 and 0) and the last two.
        let lost: Set<Int> = [5, 6, 18, 19]
        for (index, packet) in packets.enumerated() where !lost.contains(index) { arrive(packet, at: UInt64(index) * 10_000_000) }
        #expect(asked == [65_535, 0], "the gap is asked for when the next packet shows it")
        askAgain(at: 180_000_000)
        // (Compared as a Bool: a failure prints two booleans, not 4 KiB of bytes.)
        #expect(resent.withLock { $0 == [packets[5], packets[6]] }, "resent byte for byte")
        for packet in resent.withLock({ $0 }) { arrive(packet, at: 190_000_000) }
        #expect(asked.isEmpty && playout.statistics.recovered == 2)

        // The stream's end: only the sender's report of what it sent shows the last two missing.
        let report = try #require(feedback.reports(now: 200_000_000, rtpTime: 0, kinds: [.nack]))
        guard case .senderSent(let sent) = ingress.datagram(ByteBuffer(bytes: report), from: senderRTCP, rtcp: true).first else {
            Issue.record("the sent report is not taken"); return
        }
        #expect(sent.highestSequence == 65_530 &+ 19)
        playout.senderSent(sent, arrival: 200_000_000)
        asked += playout.retransmissionsDue(now: 260_000_000)
        #expect(asked == [65_530 &+ 18, 65_530 &+ 19])
        askAgain(at: 260_000_000)
        #expect(resent.withLock { $0.count == 4 && $0.suffix(2) == [packets[18], packets[19]] }, "resent byte for byte")

        for packet in resent.withLock({ $0.suffix(2) }) { arrive(packet, at: 270_000_000) }
        #expect(asked.isEmpty)
        #expect(playout.retransmissionsDue(now: 400_000_000).isEmpty, "nothing is asked for again")
        #expect(playout.statistics.recovered == 4)
        #expect(feedback.report.requested == 4 && feedback.report.resent == 4 && feedback.report.unavailable == 0)

        // A NACK from anywhere but the receiver's RTCP address is dropped, and resends nothing.
        let stranger = try SocketAddress(ipAddress: "10.77.0.9", port: 7001)
        feedback.received(RTCPGenericNACK(senderSSRC: 99, mediaSSRC: Self.ssrc, sequences: [0]).serialized(), from: stranger, now: 300_000_000)
        #expect(resent.withLock { $0.count } == 4 && feedback.report.dropped == 1)
    }
}
