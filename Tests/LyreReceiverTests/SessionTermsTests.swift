import Foundation
import LyreSRTP
import LyreWire
import Testing

@testable import LyreReceiver

/// What an ANNOUNCE asks of a session, and each refusal (streaming.md §3, §7; pairing.md §6), without a
/// connection: the status, the `Lyre-Error` reason, and whether it counts as bad input.
@Suite struct SessionTermsTests {
    static let opus = AudioFormat(encoding: .opus, payloadType: 96)

    static func announce(_ headers: [(String, String)] = [], crypto: SDPCrypto? = nil, body: String? = nil) -> RTSPMessage {
        let sdp = body ?? SessionDescription(audio: opus, crypto: crypto).serialized()
        return .request("ANNOUNCE", uri: "rtsp://127.0.0.1/", cseq: 2, headers: [("Content-Type", "application/sdp")] + headers,
                        body: Array(sdp.utf8))
    }

    static func read(_ request: RTSPMessage, overTLS: Bool = false) -> Result<AnnounceTerms, SessionRefusal> {
        AnnounceTerms.read(request, overTLS: overTLS, latency: 250, duckDB: -12)
    }

    static func refusal(_ request: RTSPMessage, overTLS: Bool = false) -> SessionRefusal? {
        if case .failure(let refusal) = read(request, overTLS: overTLS) { return refusal }
        return nil
    }

    @Test func aPlainAnnounceTakesTheReceiversOwnTerms() throws {
        let terms = try Self.read(Self.announce([("User-Agent", "ffmpeg")])).get()
        #expect(terms == AnnounceTerms(format: Self.opus, latencyMilliseconds: 250, duckDB: -12, senderName: "ffmpeg"))
        #expect(terms.channels == .stereo)
    }

    @Test func theHeadersSetTheTerms() throws {
        let id = String(repeating: "ab", count: 16)
        let terms = try Self.read(Self.announce([
            ("Lyre-Sender-Name", String(repeating: "n", count: 100)), ("User-Agent", "ignored"), ("Lyre-Sender-ID", id),
            ("Lyre-Channels", "left"), ("Lyre-Latency", "20"), ("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-20"),
            ("Lyre-Mode", "spokenAudio"), ("Lyre-Interrupt", "spokenAudio"),
        ])).get()
        #expect(terms.senderName == String(repeating: "n", count: 64))
        #expect(terms.senderID == DeviceID(id))
        #expect(terms.channels == .left)
        #expect(terms.latencyMilliseconds == 20)
        #expect(terms.mix == .duck && terms.duckDB == -20)
        #expect(terms.spokenAudio && terms.interrupts)
        // A sender id that is not one is left out; the name falls back to "RTSP sender".
        let plain = try Self.read(Self.announce([("Lyre-Sender-ID", "nope")])).get()
        #expect(plain.senderID == nil && plain.senderName == "RTSP sender")
    }

    @Test func theBodyMustBeAPlayableSDPOfAReadableSize() {
        #expect(Self.refusal(.request("ANNOUNCE", uri: "/", cseq: 2, headers: [("Content-Type", "text/plain")], body: Array("v=0".utf8)))
            == SessionRefusal(415))
        #expect(Self.refusal(Self.announce(body: String(repeating: "a", count: SessionRefusal.maximumTextBody + 1)))
            == SessionRefusal(413, "a ANNOUNCE text body is at most 65536 bytes", counted: true))
        let head = "v=0\r\no=- 0 0 IN IP4 1.2.3.4\r\ns=x\r\nt=0 0\r\n"
        let pcmu = Self.refusal(Self.announce(body: head + "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 PCMU/8000\r\n"))
        #expect(pcmu?.status == 415 && pcmu?.counted == true && pcmu?.reason == nil)
        let broken = Self.refusal(Self.announce(body: "s=no version\r\n"))
        #expect(broken?.status == 400 && broken?.counted == true && broken?.detail != nil)
    }

    @Test func anSRTPKeyIsTakenOnlyOverTLSInLyresSuiteAndOfItsLength() throws {
        let key = SDPCrypto(suite: SRTPSession.suite, key: Array(repeating: 7, count: 28))
        #expect(Self.refusal(Self.announce(crypto: key)) == SessionRefusal(400, "an SRTP key is taken only over TLS", counted: true))
        #expect(try Self.read(Self.announce(crypto: key), overTLS: true).get().crypto == key)
        let other = SDPCrypto(suite: "AES_CM_128_HMAC_SHA1_80", key: key.key)
        #expect(Self.refusal(Self.announce(crypto: other), overTLS: true)
            == SessionRefusal(415, "SRTP suite AES_CM_128_HMAC_SHA1_80 is not supported; use \(SRTPSession.suite)"))
        // A key of another length is refused with the terms, before the session would take a place.
        let short = SDPCrypto(suite: SRTPSession.suite, key: Array(repeating: 7, count: 16))
        #expect(Self.refusal(Self.announce(crypto: short), overTLS: true) == SessionRefusal(400, "an SRTP key is 28 bytes", counted: true))
    }

    @Test func eachBadHeaderIsRefusedWithItsReason() {
        #expect(Self.refusal(Self.announce([("Lyre-Channels", "middle")]))
            == SessionRefusal(400, "Lyre-Channels must be one of \(ChannelMap.choices)"))
        // streaming.md §3: 10…2000 ms.
        for latency in ["9", "2001", "soon"] {
            #expect(Self.refusal(Self.announce([("Lyre-Latency", latency)])) == SessionRefusal(400), "\(latency)")
        }
        for latency in [10, 2000] {
            guard case .success(let terms) = Self.read(Self.announce([("Lyre-Latency", String(latency))])) else {
                Issue.record("Lyre-Latency: \(latency) refused")
                continue
            }
            #expect(terms.latencyMilliseconds == latency)
        }
        #expect(Self.refusal(Self.announce([("Lyre-Mix", "loud")])) == SessionRefusal(400, "Lyre-Mix must be one of \(MixRequest.choices)", counted: true))
        #expect(Self.refusal(Self.announce([("Lyre-Mix", "mix"), ("Lyre-Duck-DB", "-20")]))
            == SessionRefusal(400, "Lyre-Duck-DB goes with Lyre-Mix: duck", counted: true))
        #expect(Self.refusal(Self.announce([("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-200")]))?.reason?.hasPrefix("Lyre-Duck-DB must be a number of dB from") == true)
        #expect(Self.refusal(Self.announce([("Lyre-Mode", "shouting")]))?.reason?.hasPrefix("Lyre-Mode must be one of") == true)
        // Interrupting goes with mixing: a plain session takes the other over instead.
        #expect(Self.refusal(Self.announce([("Lyre-Interrupt", "spokenAudio")]))
            == SessionRefusal(400, "Lyre-Interrupt must be \(MixRequest.spokenAudio), with Lyre-Mix", counted: true))
        #expect(Self.refusal(Self.announce([("Lyre-Mix", "mix"), ("Lyre-Interrupt", "everything")])) != nil)
    }

    @Test func theFirstRefusalInTheSpecsOrderIsTheOneSent() {
        // A body over the limit is refused before it is parsed, and a bad SDP before any header.
        let long = Self.announce([("Lyre-Latency", "1")], body: String(repeating: "a", count: SessionRefusal.maximumTextBody + 1))
        #expect(Self.refusal(long)?.status == 413)
        #expect(Self.refusal(Self.announce([("Lyre-Mix", "loud")], body: "s=no version\r\n"))?.detail != nil)
        #expect(Self.refusal(Self.announce([("Lyre-Channels", "middle"), ("Lyre-Mix", "loud")]))?.reason?.hasPrefix("Lyre-Channels") == true)
    }

    static func setup(_ headers: [(String, String)]) -> RTSPMessage {
        .request("SETUP", uri: "rtsp://127.0.0.1/streamid=0", cseq: 3, headers: headers)
    }

    static func setupRefusal(_ request: RTSPMessage, overTLS: Bool = false) -> SessionRefusal? {
        if case .failure(let refusal) = SetupTerms.read(request, overTLS: overTLS, format: opus) { return refusal }
        return nil
    }

    static let udp = ("Transport", "RTP/AVP/UDP;unicast;client_port=6000-6001;mode=record")

    @Test func aSetupNamesItsTransportTimingFeedbackAndFEC() throws {
        let key = Data(repeating: 9, count: 32).base64EncodedString()
        let terms = try SetupTerms.read(Self.setup([
            Self.udp, ("Lyre-Timing-Port", "6002"), ("Lyre-Timing-Key", key), ("Lyre-Feedback", "nack, report"), ("Lyre-FEC", "pt=97;row=10"),
        ]), overTLS: true, format: Self.opus).get()
        guard case .udp(let client?, nil) = terms.transport.lower else { Issue.record("\(terms.transport)"); return }
        #expect(client == (6000, 6001))
        #expect(terms.timingPort == 6002 && terms.timingAuthenticator != nil)
        #expect(terms.feedback == [.nack, .report])
        #expect(terms.fec == FECHeader(payloadType: 97, row: 10))
        // FEC on the media's own payload type is not FEC; without a timing port the session plays on its own clock.
        let plain = try SetupTerms.read(Self.setup([Self.udp, ("Lyre-FEC", "pt=96;row=10")]), overTLS: false, format: Self.opus).get()
        #expect(plain.fec == nil && plain.timingPort == nil && plain.timingAuthenticator == nil && plain.feedback.isEmpty)
    }

    @Test func eachBadSetupHeaderIsRefused() {
        #expect(Self.setupRefusal(Self.setup([])) == SessionRefusal(461))
        #expect(Self.setupRefusal(Self.setup([("Transport", "RTP/AVP;multicast;port=5000-5001")])) == SessionRefusal(461))
        for port in ["0", "65536", "x"] {
            #expect(Self.setupRefusal(Self.setup([Self.udp, ("Lyre-Timing-Port", port)])) == SessionRefusal(400), "\(port)")
        }
        let key = Data(repeating: 9, count: 32).base64EncodedString()
        #expect(Self.setupRefusal(Self.setup([Self.udp, ("Lyre-Timing-Key", key)]))
            == SessionRefusal(400, "a timing key is taken only over TLS", counted: true))
        #expect(Self.setupRefusal(Self.setup([Self.udp, ("Lyre-Timing-Key", Data(repeating: 9, count: 16).base64EncodedString())]), overTLS: true)
            == SessionRefusal(400, "Lyre-Timing-Key must be 32 bytes in base64", counted: true))
    }

    static func parameters(_ body: String) -> RTSPMessage {
        .request("SET_PARAMETER", uri: "rtsp://127.0.0.1/", cseq: 4, headers: [("Content-Type", "text/parameters")], body: Array(body.utf8))
    }

    static func update(_ body: String) -> Result<ParameterUpdate, SessionRefusal> { ParameterUpdate.read(parameters(body)) }

    @Test func aParameterRequestIsReadWhole() throws {
        let update = try Self.update("volume: -20.0\r\nroom: Kitchen\r\nroom: Hall\r\nremote-commands: play, pause\r\nvolume: -12.5\r\n").get()
        #expect(update.volume == -12.5)
        #expect(update.rooms?.names == ["Kitchen", "Hall"])
        #expect(update.commands?.commands == [.play, .pause])
        #expect(try Self.update("volume: -144\r\n").get() == ParameterUpdate(volume: -144))
    }

    @Test func oneRefusedParameterRefusesTheWholeRequest() {
        // RFC 2326 §10.9: the volume before the unknown name is not set either (the handler applies only a whole update).
        #expect(Self.update("volume: -20.0\r\nloudness: 3\r\n") == .failure(SessionRefusal(451, "unknown parameter 'loudness'")))
        #expect(Self.update("volume: -20.0\r\nvolume: -30.1\r\n") == .failure(SessionRefusal(451, "volume must be -30 to 0 dB, or -144 for mute")))
        #expect(Self.update("volume: -20.0\r\nremote-command: play\r\n")
            == .failure(SessionRefusal(403, "remote commands go from the receiver to the sender, not to a receiver", counted: true)))
        guard case .failure(let commands) = Self.update("volume: -20.0\r\nremote-commands: dance\r\n") else { Issue.record("taken"); return }
        #expect(commands.status == 451 && commands.counted)
        guard case .failure(let utf8) = ParameterUpdate.read(.request("SET_PARAMETER", uri: "/", cseq: 4, body: [0x76, 0xFF, 0x0A])) else {
            Issue.record("taken"); return
        }
        #expect(utf8.status == 400 && utf8.counted)
        #expect((try? Self.update(String(repeating: "volume: 0\r\n", count: 7000)).get()) == nil)
    }

    static func setParameter(_ type: String?, _ body: [UInt8]) -> Result<ParameterChange, SessionRefusal> {
        ParameterChange.read(.request("SET_PARAMETER", uri: "rtsp://127.0.0.1/", cseq: 4, headers: type.map { [("Content-Type", $0)] } ?? [], body: body))
    }

    /// streaming.md §3, now-playing.md §2–3: the Content-Type says what a SET_PARAMETER changes, text/parameters
    /// when it names none; each kind is refused as its own rules say, counted as bad input where the sender erred.
    @Test func aSetParameterIsReadByItsContentType() throws {
        #expect(try Self.setParameter(nil, Array("volume: -12.5\r\n".utf8)).get() == .parameters(ParameterUpdate(volume: -12.5)))
        #expect(try Self.setParameter("text/parameters", Array("volume: -12.5\r\n".utf8)).get() == .parameters(ParameterUpdate(volume: -12.5)))
        let json = Array(#"{"title":"One","elapsed":3.5,"rate":1,"anchor":1000}"#.utf8)
        #expect(try Self.setParameter("application/json", json).get() == .nowPlaying(try NowPlayingInfo(parsing: json)))
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8)
        #expect(try Self.setParameter("image/jpeg", jpeg).get() == .artwork(try Artwork(bytes: jpeg)))
        // An empty cover clears it, whichever image type it names.
        #expect(try Self.setParameter("image/png", []).get() == .artwork(nil))
        #expect(try Self.setParameter("image/jpeg", []).get() == .artwork(nil))
        // Refusals: the type, a cover that is not what it says, now playing that is not JSON.
        #expect(Self.setParameter("text/plain", Array("volume: 0\r\n".utf8))
            == .failure(SessionRefusal(415, "SET_PARAMETER takes text/parameters, application/json or image/jpeg|png")))
        guard case .failure(let cover) = Self.setParameter("image/png", jpeg), case .failure(let notJSON) = Self.setParameter("application/json", Array("{".utf8)),
              case .failure(let text) = Self.setParameter(nil, Array("loudness: 3\r\n".utf8))
        else { Issue.record("taken"); return }
        #expect(cover.status == 415 && cover.counted && cover.reason?.hasPrefix("artwork refused: ") == true, "\(cover)")
        #expect(notJSON.status == 400 && notJSON.counted && notJSON.reason?.hasPrefix("now playing refused: ") == true, "\(notJSON)")
        #expect(text == SessionRefusal(451, "unknown parameter 'loudness'"))
    }

    static func query(_ body: String) -> Result<[ParameterQuery.Name], SessionRefusal> {
        ParameterQuery.read(.request("GET_PARAMETER", uri: "rtsp://127.0.0.1/", cseq: 4, headers: [("Content-Type", "text/parameters")], body: Array(body.utf8)))
    }

    /// streaming.md §3: a GET_PARAMETER's names are answered once each, in the order first asked, however often a
    /// body repeats them; an empty one is a keep-alive; one unknown name refuses it (451); a long body is 413.
    @Test func aGetParameterAsksEachNameOnce() throws {
        #expect(try Self.query("").get() == [])
        #expect(try Self.query("stats\r\nvolume\r\noutput-delay\r\nvolume\r\noutput-latency\r\nstats\r\n").get()
            == [.stats, .volume, .outputDelay, .outputLatency])
        #expect(try Self.query(String(repeating: "volume\r\n", count: 6000)).get() == [.volume])
        #expect(Self.query("volume\r\nloudness\r\n") == .failure(SessionRefusal(451)))
        #expect(Self.query(String(repeating: "volume\r\n", count: 9000))
            == .failure(SessionRefusal(413, "a GET_PARAMETER text body is at most 65536 bytes", counted: true)))
    }

    @Test func onlyAPairedKeyStartsASessionOnAPairedOnlyReceiver() {
        let key = [UInt8](repeating: 7, count: 32)
        let paired = { (asked: [UInt8]) in asked == key }
        #expect(ReceiverAccess.open.admits(key: nil, isPaired: paired, receiverName: "Kitchen") == nil)
        #expect(ReceiverAccess.open.admits(key: [1], isPaired: paired, receiverName: "Kitchen") == nil)
        #expect(ReceiverAccess.paired.admits(key: key, isPaired: paired, receiverName: "Kitchen") == nil)
        let reason = "not paired: this receiver plays only paired senders; pair with 'lyre pair Kitchen'"
        #expect(ReceiverAccess.paired.admits(key: nil, isPaired: paired, receiverName: "Kitchen")
                == SessionRefusal(403, reason, detail: "plain RTSP"))
        #expect(ReceiverAccess.paired.admits(key: [1], isPaired: paired, receiverName: "Kitchen")
                == SessionRefusal(403, reason, detail: "TLS, unknown key"))
    }
}
