import Foundation
import LyreWire
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import LyreReceiver
@testable import LyreSender

/// The sender's handshake (`SenderHandshake`) against the receiver's rules (`ReceiverSession`, `AnnounceTerms`,
/// `SetupTerms`), in process and without a socket: every request the sender makes is one the receiver takes,
/// with the terms the sender meant, and every answer the receiver makes is one the sender reads as meant.
@Suite struct HandshakeTests {
    static let srtpKey = (0..<28).map { UInt8($0) }
    static let timingKey = (0..<32).map { UInt8(100 + $0) }

    /// A sender that asks for everything a session can have: TLS keys, a channel map, ducking, FEC, NACKs.
    static func offer(channels: ChannelMap = .left, paired: Bool = true) -> SenderHandshake.Offer {
        var configuration = StreamConfiguration()
        configuration.senderName = "Kitchen laptop"
        configuration.senderID = String(repeating: "5a", count: 16)
        configuration.latencyMilliseconds = 400
        configuration.mixing = .duck
        configuration.duckDB = -20
        configuration.interruptsSpokenAudio = true
        configuration.mode = .spokenAudio
        return SenderHandshake.Offer(
            route: OutputRoute(host: "10.77.0.2", port: 7700, name: "Speaker", id: "0123456789abcdef0123456789abcdef", channels: channels),
            configuration: configuration, local: "10.77.0.1", ssrc: 0x1234_5678, ports: (6000, 6001), timingPort: 6002,
            fec: FECHeader(payloadType: 97, row: 10), srtpKey: paired ? srtpKey : nil, timingKey: paired ? timingKey : nil)
    }

    /// The receiver's side, as `RTSPConnectionHandler` answers, for a request the sender sent: its rules
    /// decide, and only the ports and the volume are this test's.
    struct Receiver {
        var session: ReceiverSession?
        var terms: AnnounceTerms?
        var setup: SetupTerms?
        let overTLS: Bool
        /// A version 1 receiver: it does not echo `Lyre-Channels`.
        var echoesChannels = true

        mutating func answer(_ sent: SenderHandshake.Request) -> RTSPMessage {
            let request = RTSPMessage.request(sent.method, uri: sent.uri, cseq: 1, headers: sent.headers, body: sent.body)
            let named = SessionHeader.id(request.headers[SessionHeader.name])
            let taken: ReceiverSession.Request
            switch ReceiverSession.route(sent.method, naming: named, on: session) {
            case .take(let request): taken = request
            case .refuse(let refusal, _): return .response(refusal.status, cseq: 1)
            }
            switch taken {
            case .options:
                return .response(200, cseq: 1, headers: [(ReceiverIDHeader.name, "0123456789ABCDEF0123456789ABCDEF")])
            case .announce:
                switch AnnounceTerms.read(request, overTLS: overTLS, latency: 250, duckDB: -12) {
                case .failure(let refusal): return .response(refusal.status, cseq: 1, headers: refusal.reason.map { [("Lyre-Error", $0)] } ?? [])
                case .success(let read):
                    terms = read
                    session = ReceiverSession(id: "C0FFEE", phase: .announced)
                    return .response(200, cseq: 1, headers: echoesChannels ? read.answer : [])
                }
            case .setup:
                guard let terms else { return .response(455, cseq: 1) }
                switch SetupTerms.read(request, overTLS: overTLS, format: terms.format) {
                case .failure(let refusal): return .response(refusal.status, cseq: 1)
                case .success(let read):
                    setup = read
                    session?.phase = .ready
                    guard case .udp(let client, _) = read.transport.lower else { return .response(461, cseq: 1) }
                    let spec = TransportSpec(lower: .udp(client: client, server: (7000, 7001)), ssrc: read.transport.ssrc)
                    return .response(200, cseq: 1, headers: SetupTerms.answer(session: "C0FFEE", transport: spec, feedback: read.feedback, fec: read.fec))
                }
            case .getParameter:
                return .response(200, cseq: 1, headers: [("Content-Type", "text/parameters")], body: Array("volume: -12.5\r\n".utf8))
            default:
                return .response(501, cseq: 1)
            }
        }
    }

    /// A receiver behind a lock, so that a handshake can be driven against it as `Link.connect` drives one:
    /// over futures, on a real event loop, with no thread blocked but the test's.
    final class Answering: Sendable {
        let receiver: Mutex<Receiver>
        let methods = Mutex<[String]>([])
        init(_ receiver: Receiver) { self.receiver = Mutex(receiver) }
        var terms: AnnounceTerms? { receiver.withLock { $0.terms } }
        var setup: SetupTerms? { receiver.withLock { $0.setup } }

        /// `offer`'s handshake to the end, each request answered by this receiver, or by `instead` where it answers.
        func handshake(_ offer: SenderHandshake.Offer, instead: @escaping @Sendable (SenderHandshake.Request) -> RTSPMessage? = { _ in nil })
            throws -> SenderHandshake.Agreed
        {
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            return try SenderHandshake(offer).drive { [self] request in
                methods.withLock { $0.append(request.method) }
                return loop.makeSucceededFuture(instead(request) ?? receiver.withLock { $0.answer(request) })
            }.wait()
        }
    }

    @Test func whatTheSenderAsksIsWhatTheReceiverTakes() throws {
        let offer = Self.offer()
        let receiver = Answering(Receiver(overTLS: true))
        let agreed = try receiver.handshake(offer)
        #expect(receiver.methods.withLock { $0 } == ["OPTIONS", "ANNOUNCE", "SETUP", "GET_PARAMETER"])
        // The ANNOUNCE's terms, as the receiver read them: each one the sender meant.
        let terms = try #require(receiver.terms)
        #expect(terms.format == AudioFormat(encoding: .opus, payloadType: FrameEncoder.payloadType))
        #expect(terms.crypto == SDPCrypto(suite: "AEAD_AES_128_GCM", key: Self.srtpKey))
        #expect(terms.channels == .left && terms.latencyMilliseconds == 400)
        #expect(terms.mix == .duck && terms.duckDB == -20 && terms.spokenAudio && terms.interrupts)
        #expect(terms.senderName == "Kitchen laptop" && terms.senderID?.description == String(repeating: "5a", count: 16))
        // The SETUP's, likewise.
        let setup = try #require(receiver.setup)
        guard case .udp(let client?, nil) = setup.transport.lower else { Issue.record("\(setup.transport)"); return }
        #expect(client == (6000, 6001) && setup.transport.ssrc == 0x1234_5678)
        #expect(setup.timingPort == 6002 && setup.timingAuthenticator != nil)
        #expect(setup.feedback == [.nack, .report] && setup.fec == offer.fec)
        // And what the sender read from the receiver's answers.
        #expect(agreed == SenderHandshake.Agreed(receiverID: "0123456789abcdef0123456789abcdef", sessionID: "C0FFEE", server: .init(rtp: 7000, rtcp: 7001),
                                                 feedback: [.nack, .report], takesFEC: true, volume: -12.5))
    }

    @Test func aPlainSenderAsksForNoKeysAndNoResends() throws {
        var offer = Self.offer(channels: .stereo, paired: false)
        offer.configuration = StreamConfiguration()
        offer.fec = nil
        offer.configuration.resend = false
        let receiver = Answering(Receiver(overTLS: false))
        let agreed = try receiver.handshake(offer)
        let terms = try #require(receiver.terms)
        #expect(terms.crypto == nil && terms.mix == nil && !terms.spokenAudio && terms.latencyMilliseconds == 250 && terms.channels == .stereo)
        #expect(receiver.setup?.timingAuthenticator == nil && receiver.setup?.fec == nil)
        #expect(agreed.feedback == [.report] && !agreed.takesFEC)
    }

    @Test func keysOverAPlainConnectionAreRefusedAndTheSenderSaysWhy() {
        // A sender that sends its keys where the connection is not TLS: the receiver refuses, and the sender's
        // error carries the method, the status and the receiver's reason. It asks nothing after.
        let receiver = Answering(Receiver(overTLS: false))
        #expect(throws: LyreSenderError.refused(what: "ANNOUNCE", status: 400, reason: "an SRTP key is taken only over TLS")) {
            try receiver.handshake(Self.offer())
        }
        #expect(receiver.methods.withLock { $0 } == ["OPTIONS", "ANNOUNCE"])
    }

    @Test func aVersion1ReceiverIsRefusedOnlyAChannelMapItCannotApply() throws {
        #expect(throws: LyreSenderError.failed("it cannot play only the left channel (a version 1 receiver: update its lyred)")) {
            try Answering(Receiver(overTLS: true, echoesChannels: false)).handshake(Self.offer(channels: .left))
        }
        let stereo = try Answering(Receiver(overTLS: true, echoesChannels: false)).handshake(Self.offer(channels: .stereo))
        #expect(stereo.sessionID == "C0FFEE")
    }

    @Test func aRouteFoundByIdMustReachThatReceiver() {
        var offer = Self.offer()
        offer.route.id = "ffffffffffffffffffffffffffffffff"
        #expect(throws: LyreSenderError.failed(
            "10.77.0.2:7700 is now another receiver (id 0123456789abcdef0123456789abcdef, not ffffffffffffffffffffffffffffffff)")) {
            try Answering(Receiver(overTLS: true)).handshake(offer)
        }
    }

    @Test func aSetupAnswerWithoutSessionOrPortsEndsTheLink() throws {
        #expect(throws: LyreSenderError.failed("the receiver's SETUP answer has no Session or server_port")) {
            try Answering(Receiver(overTLS: true)).handshake(Self.offer()) { request in
                request.method == "SETUP" ? .response(200, cseq: 1, headers: [("Transport", "RTP/AVP/UDP;unicast")]) : nil
            }
        }
        // A receiver whose output is gone answers 503: the sender says so, not the status.
        #expect(throws: LyreSenderError.refused(what: "OPTIONS", status: 503, reason: "its audio output is unavailable")) {
            try Answering(Receiver(overTLS: true)).handshake(Self.offer()) { _ in .response(503, cseq: 1) }
        }
    }
}
