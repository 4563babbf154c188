@testable import LyreSender
import LyreSRTP
import LyreWire
import NIOCore
import Synchronization
import Testing

/// A room's RTCP feedback at the sender (streaming.md §4.1, §4.2), without sockets: what it takes, from whom,
/// and what it drops and counts.
struct LinkFeedbackTests {
    static let ssrc: UInt32 = 0x1234_5678
    static let receiverSSRC: UInt32 = 0x0BAD_CAFE
    static let second: UInt64 = 1_000_000_000

    /// Feedback from the receiver at 127.0.0.1:6001, keeping packets 10…19; what it resends is collected.
    final class Sent: Sendable {
        let packets = Mutex<[[UInt8]]>([])
        func withLock<T>(_ body: ([[UInt8]]) -> T) -> T { packets.withLock { body($0) } }
    }

    static func started(srtcp: SRTPSession? = nil) throws -> (LinkFeedback, SocketAddress, Sent) {
        let feedback = LinkFeedback(ssrc: ssrc, bitrate: 128_000)
        let receiver = try SocketAddress(ipAddress: "127.0.0.1", port: 6001)
        let sent = Sent()
        feedback.start(receiver: receiver, lookup: { (10..<20).contains($0) ? [UInt8(truncatingIfNeeded: $0), 0xAA] : nil }, srtcp: srtcp,
                       now: 100 * second) { packet in
            sent.packets.withLock { $0.append(packet) }
        }
        return (feedback, receiver, sent)
    }

    static func nack(_ sequences: [UInt16], for media: UInt32 = ssrc) -> [UInt8] {
        RTCPGenericNACK(senderSSRC: receiverSSRC, mediaSSRC: media, sequences: sequences).serialized()
    }

    /// NACKs are taken only from the receiver's RTCP address and for this stream's SSRC; a packet no longer
    /// kept is counted `unavailable`; everything else is dropped and counted.
    @Test func nacksAreTakenOnlyFromTheReceiverForItsOwnStream() throws {
        let (feedback, receiver, sent) = try Self.started()
        feedback.received(Self.nack([12, 13]), from: receiver, now: 101 * Self.second)
        #expect(sent.withLock { $0 } == [[12, 0xAA], [13, 0xAA]])
        // From another port of the same host, or another host: dropped, nothing resent.
        feedback.received(Self.nack([14]), from: try SocketAddress(ipAddress: "127.0.0.1", port: 6002), now: 101 * Self.second)
        feedback.received(Self.nack([14]), from: try SocketAddress(ipAddress: "127.0.0.2", port: 6001), now: 101 * Self.second)
        // For another stream: dropped.
        feedback.received(Self.nack([15], for: Self.ssrc &+ 1), from: receiver, now: 101 * Self.second)
        // A packet no longer kept: asked for, unavailable.
        feedback.received(Self.nack([30]), from: receiver, now: 101 * Self.second)
        #expect(sent.withLock { $0.count } == 2)
        let report = feedback.report
        #expect(report.requested == 3 && report.resent == 2 && report.unavailable == 1 && report.dropped == 3, "\(report)")
    }

    /// A resend looks the packet up without the feedback's lock held: the lookup takes the playback's lock,
    /// under which the playback reads this feedback (a lyre play crashed on the two locks taken in both orders,
    /// in a fresh run's loss test). Here the lookup reads the feedback itself, which under its lock would be a
    /// recursive lock and a crash.
    @Test func aResendLooksUpWithoutTheFeedbacksLock() throws {
        let feedback = LinkFeedback(ssrc: Self.ssrc, bitrate: 128_000)
        let receiver = try SocketAddress(ipAddress: "127.0.0.1", port: 6001)
        let sent = Sent()
        feedback.start(receiver: receiver, lookup: { sequence in
            _ = feedback.quality
            _ = feedback.report
            return [UInt8(truncatingIfNeeded: sequence), 0xAA]
        }, now: 100 * Self.second) { packet in sent.packets.withLock { $0.append(packet) } }
        feedback.received(Self.nack([12, 13]), from: receiver, now: 101 * Self.second)
        #expect(sent.withLock { $0 } == [[12, 0xAA], [13, 0xAA]])
        let report = feedback.report
        #expect(report.requested == 2 && report.resent == 2, "\(report)")
    }

    static func receiverReport(lastSenderReport: UInt32, delay: UInt32, ssrc: UInt32 = ssrc) -> [UInt8] {
        RTCPReceiverReport(ssrc: receiverSSRC, blocks: [
            RTCPReportBlock(ssrc: ssrc, fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: 100, jitter: 96,
                            lastSenderReport: lastSenderReport, delaySinceLastSenderReport: delay),
        ]).serialized()
    }

    /// A receiver report gives the round trip (arrival − LSR − DLSR) and the jitter; reports from elsewhere or
    /// about another stream are not taken, and a round trip over a minute is ignored.
    @Test func theRoundTripComesFromTheReceiversReportsAndOverAMinuteIsIgnored() throws {
        let (feedback, receiver, _) = try Self.started()
        let sentAt = 200 * Self.second
        let lsr = NTPTime.compact(nanoseconds: sentAt)
        // Answered 5 ms after the report left, held 2 ms at the receiver: a 3 ms round trip.
        feedback.received(Self.receiverReport(lastSenderReport: lsr, delay: NTPTime.compact(duration: 2_000_000)),
                          from: try SocketAddress(ipAddress: "127.0.0.1", port: 6009), now: sentAt + 5_000_000)
        feedback.received(Self.receiverReport(lastSenderReport: lsr, delay: NTPTime.compact(duration: 2_000_000), ssrc: 99),
                          from: receiver, now: sentAt + 5_000_000)
        #expect(feedback.quality?.roundTripMilliseconds == nil)
        feedback.received(Self.receiverReport(lastSenderReport: lsr, delay: NTPTime.compact(duration: 2_000_000)), from: receiver, now: sentAt + 5_000_000)
        let trip = try #require(feedback.quality?.roundTripMilliseconds)
        #expect(abs(trip - 3) < 0.05, "round trip \(trip) ms")
        #expect(feedback.quality?.jitterMilliseconds == 2)  // 96 at 48 kHz
        // 61 s after the report it answers: no round trip from it; the last one stands.
        feedback.received(Self.receiverReport(lastSenderReport: lsr, delay: 0), from: receiver, now: sentAt + 61 * Self.second)
        #expect(abs((feedback.quality?.roundTripMilliseconds ?? 0) - 3) < 0.05, "\(String(describing: feedback.quality))")
        // 59 s is taken.
        feedback.received(Self.receiverReport(lastSenderReport: lsr, delay: 0), from: receiver, now: sentAt + 59 * Self.second)
        #expect(abs((feedback.quality?.roundTripMilliseconds ?? 0) - 59_000) < 1, "\(String(describing: feedback.quality))")
    }

    /// pairing.md §6.3: on a paired link the feedback is SRTCP; a sender drops what does not verify (altered, under
    /// another key, sent plain, or replayed) and counts it with its other dropped feedback.
    @Test func srtcpThatDoesNotVerifyIsDroppedAndCounted() throws {
        let key = SRTPSession.makeKey()
        let (feedback, receiver, sent) = try Self.started(srtcp: try SRTPSession(.receive, key: key))
        let room = try SRTPSession(.send, key: key)
        let stranger = try SRTPSession(.send, key: SRTPSession.makeKey())
        func compound(_ sequence: UInt16) -> [UInt8] { RTCPPacket.compound([Self.nack([sequence])]) }

        let good = try #require(room.protectRTCP(compound(11)))
        feedback.received(good, from: receiver, now: 101 * Self.second)
        #expect(sent.withLock { $0 } == [[11, 0xAA]])

        var altered = try #require(room.protectRTCP(compound(12)))
        altered[12] ^= 0x01
        for bad in [altered, try #require(stranger.protectRTCP(compound(13))), compound(14), good] {
            feedback.received(bad, from: receiver, now: 102 * Self.second)
        }
        #expect(sent.withLock { $0.count } == 1, "nothing that failed was resent")
        let report = feedback.report
        #expect(report.requested == 1 && report.resent == 1 && report.dropped == 4, "\(report)")
    }
}
