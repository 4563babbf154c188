import LyreWire
import Testing

/// RTSP framing, SDP, RTP and timing packets against streaming.md.
struct StreamingWireTests {
    static let sdp =
        "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=Lyre\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 0 RTP/AVP 96\r\n"
        + "a=rtpmap:96 opus/48000/2\r\na=fmtp:96 sprop-stereo=1\r\na=control:streamid=0\r\n"
    static let announce = Array(
        ("ANNOUNCE rtsp://127.0.0.1:7700/ RTSP/1.0\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nLyre-Latency: 20\r\n"
         + "Content-Length: \(sdp.utf8.count)\r\n\r\n" + sdp).utf8)

    @Test func parsesAndReserializesByteForByte() throws {
        var parser = RTSPParser()
        var buffer = Self.announce
        let frame = try #require(try parser.next(&buffer))
        guard case .message(let message) = frame else { Issue.record("not a message"); return }
        #expect(buffer.isEmpty)
        #expect(message.method == "ANNOUNCE")
        #expect(message.cseq == 2)
        #expect(message.headers["lyre-latency"] == "20")
        #expect(message.serialized() == Self.announce)
        let format = try SessionDescription(parsing: message.bodyText).audioFormat()
        #expect(format == AudioFormat(encoding: .opus, payloadType: 96))
    }

    @Test func framesTheSameWhenFedOneByteAtATime() throws {
        let interleaved: [UInt8] = [0x24, 0, 0, 3, 1, 2, 3]
        let stream = Self.announce + interleaved + Array("OPTIONS * RTSP/1.0\nCSeq: 3\n\n".utf8)
        var parser = RTSPParser()
        var buffer: [UInt8] = []
        var frames: [RTSPFrame] = []
        for byte in stream {
            buffer.append(byte)
            while let frame = try parser.next(&buffer) { frames.append(frame) }
        }
        #expect(frames.count == 3)
        #expect(frames[1] == .interleaved(channel: 0, payload: [1, 2, 3]))
        if case .message(let options) = frames[2] { #expect(options.method == "OPTIONS" && options.cseq == 3) }
    }

    /// A `$` frame is only valid between messages (§2): inside a body, `$` and what follows are the body's.
    @Test func aDollarInsideABodyIsTheBodys() throws {
        let body: [UInt8] = [0x24, 0, 0, 2, 0x61, 0x62]
        var buffer = Array("SET_PARAMETER rtsp://h/ RTSP/1.0\r\nCSeq: 5\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        var parser = RTSPParser()
        guard case .message(let message) = try parser.next(&buffer) else { Issue.record("not one message"); return }
        #expect(message.body == body && buffer.isEmpty)
    }

    @Test func limitsGiveTheDocumentedStatus() {
        func error(_ text: String) -> RTSPParseError? {
            var parser = RTSPParser()
            var buffer = Array(text.utf8)
            do { _ = try parser.next(&buffer); return nil } catch { return error }
        }
        #expect(error("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 99999999999\r\n\r\n")?.status == 413)
        #expect(error("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 67108865\r\n\r\n")?.status == 413)
        #expect(error("OPTIONS * RTSP/1.0\r\nContent-Length: -1\r\n\r\n")?.status == 400)
        #expect(error("OPTIONS " + String(repeating: "a", count: 2000))?.status == 400)
        #expect(error("OPTIONS * RTSP/1.0\r\n" + String(repeating: "X-A: b\r\n", count: 70) + "\r\n")?.status == 431)
        #expect(error("OPTIONS * HTTP/1.1\r\n\r\n")?.status == 400)
        #expect(error("OPTIONS * RTSP/2.0\r\n\r\n")?.status == 505)
        #expect(error("\u{1}\u{2}garbage\r\n\r\n")?.status == 400)
        #expect(error("M-SEARCH * RTSP/1.0\r\nCSeq: 4000000000\r\n\r\n") == nil)
    }

    @Test func oversizedBodiesAreSkippedAndTheConnectionStaysUsable() throws {
        var parser = RTSPParser()
        let body = [UInt8](repeating: 0x41, count: 10 * 1024 * 1024)
        var buffer = Array("SET_PARAMETER rtsp://h/ RTSP/1.0\r\nCSeq: 7\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        let head = try parser.next(&buffer)
        guard case .oversizedMessage(let message, let length) = head else {
            Issue.record("expected the head of an oversized message, got \(String(describing: head))")
            return
        }
        #expect(message.cseq == 7 && length == body.count && message.body.isEmpty)
        // The body arrives in pieces and is skipped; the next request parses.
        var frames: [RTSPFrame] = []
        for start in stride(from: 0, to: body.count, by: 65536) {
            buffer += body[start..<min(start + 65536, body.count)]
            while let frame = try parser.next(&buffer) { frames.append(frame) }
        }
        #expect(frames.isEmpty && buffer.isEmpty)
        buffer += Array("OPTIONS * RTSP/1.0\r\nCSeq: 8\r\n\r\n".utf8)
        if case .message(let options) = try parser.next(&buffer) { #expect(options.cseq == 8) } else { Issue.record("no OPTIONS after the skipped body") }
    }

    @Test func oversizedInterleavedFramesAreSkipped() throws {
        var parser = RTSPParser()
        var buffer: [UInt8] = [0x24, 0, 0x27, 0x10] + [UInt8](repeating: 7, count: 10000) + Array("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n".utf8)
        #expect(try parser.next(&buffer) == .oversizedInterleaved(channel: 0, length: 10000))
        if case .message(let m) = try parser.next(&buffer) { #expect(m.method == "OPTIONS") } else { Issue.record("lost framing") }
    }

    @Test func sdpRefusals() {
        func refusal(_ sdp: String) -> SDPError? {
            do { _ = try SessionDescription(parsing: sdp).audioFormat(); return nil } catch { return error }
        }
        let head = "v=0\r\no=- 0 0 IN IP4 1.2.3.4\r\ns=x\r\nt=0 0\r\n"
        #expect(refusal(head + "m=audio 0 RTP/AVP 0\r\n") == .unsupported("payload type 0 without rtpmap"))
        #expect(refusal(head + "m=audio 0 RTP/AVP 11\r\na=rtpmap:11 L16/44100/1\r\n") == .unsupported("static payload type 11"))
        #expect(refusal(head + "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 PCMU/8000\r\n") == .unsupported("PCMU/8000"))
        #expect(refusal(head + "m=video 0 RTP/AVP 96\r\n") == .malformed("no m=audio line"))
        #expect(refusal("s=no version\r\n") == .malformed("does not start with v=0"))
        #expect(refusal(head + "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/48000/2\r\n") == nil)
        #expect(refusal(head + "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/48000/1\r\n") == nil)  // mono too (§3)
        // Only the first m=audio counts (§3): a second one that could not be played changes nothing.
        let two = head + "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 opus/48000/2\r\nm=audio 0 RTP/AVP 97\r\na=rtpmap:97 PCMU/8000\r\n"
        #expect(refusal(two) == nil)
        #expect((try? SessionDescription(parsing: two).audioFormat())?.encoding == .opus)
        #expect(refusal(head + "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/44100/2\r\n") != nil)
        // Found by Tools/fuzz: a port of only "/" read past the end of its parts and crashed the receiver.
        #expect(refusal(head + "m=audio / RTP/AVP 96\r\n") == .malformed("bad m= line 'audio / RTP/AVP 96'"))
    }

    @Test func rtpRoundTripAndRefusals() throws {
        let packet = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 65535, timestamp: 0xDEAD_BEEF, ssrc: 42, payload: [1, 2, 3])
        #expect(try RTPPacket(parsing: packet.serialized()) == packet)
        #expect(throws: RTPError.truncated) { try RTPPacket(parsing: [0x80, 96, 0]) }
        #expect(throws: RTPError.badVersion) { try RTPPacket(parsing: [UInt8](repeating: 0, count: 12)) }
        #expect(throws: RTPError.tooLarge) { try RTPPacket(parsing: [UInt8](repeating: 0x80, count: 9000)) }
        // CSRC count 15 with no CSRCs present.
        #expect(throws: RTPError.truncated) { try RTPPacket(parsing: [0x8F] + [UInt8](repeating: 0, count: 20)) }
    }

    /// streaming.md §4: a receiver skips CSRCs, the header extension and padding: the payload is exactly what
    /// lies between them.
    @Test func csrcsTheExtensionAndPaddingAreSkipped() throws {
        let header: [UInt8] = [0x80 | 0x20 | 0x10 | 0x01, 96, 0x01, 0x02, 0, 0, 0, 9, 0, 0, 0, 42]
        let csrc: [UInt8] = [0, 0, 0, 7]
        let extensionHeader: [UInt8] = [0xBE, 0xDE, 0, 1, 1, 2, 3, 4]  // one 32-bit word of extension
        let payload: [UInt8] = [10, 20, 30, 40, 50]
        let padding: [UInt8] = [0, 2]  // the last byte counts the padding, itself included
        let packet = try RTPPacket(parsing: header + csrc + extensionHeader + payload + padding)
        #expect(packet.payload == payload && packet.sequenceNumber == 0x0102 && packet.timestamp == 9 && packet.ssrc == 42)
        // Padding that claims more than there is, and an extension longer than the packet, are refused.
        #expect(throws: RTPError.badPadding) { try RTPPacket(parsing: header + csrc + extensionHeader + payload + [0, 40]) }
        #expect(throws: RTPError.truncated) { try RTPPacket(parsing: header + csrc + [0xBE, 0xDE, 0, 9] + payload) }
    }

    /// streaming.md §5: anything but exactly a version-1 timing packet (magic, version, type, length) is nothing.
    @Test func aTimingPacketWithAWrongMagicVersionOrTypeIsNothing() {
        let good = TimingPacket(kind: .request, sequence: 3, t1: 5).serialized()
        #expect(TimingPacket(parsing: good) != nil)
        for (index, value) in [(0, UInt8(ascii: "X")), (3, 0), (4, 2), (4, 0), (5, 0), (5, 9)] {
            var bad = good
            bad[index] = value
            #expect(TimingPacket(parsing: bad) == nil, "byte \(index) = \(value)")
        }
        #expect(TimingPacket(parsing: good + [0]) == nil)
    }

    @Test func timingPacketsAndOffset() throws {
        let reply = TimingPacket(kind: .response, sequence: 7, t1: 1_000, t2: 1_000_500 + 100, t3: 1_000_500 + 200)
        let bytes = reply.serialized()
        #expect(bytes.count == 40 && Array(bytes[0..<4]) == Array("LYRT".utf8))
        #expect(TimingPacket(parsing: bytes) == reply)
        #expect(TimingPacket(parsing: bytes.dropLast()) == nil)
        // 300 µs round trip of which 100 µs inside the sender: 100 µs each way.
        let (offset, delay) = reply.offsetAndDelay(t4: 1_000 + 300)
        #expect(offset == 999_500)
        #expect(delay == 200)
    }

    @Test func headerValues() throws {
        let udp = try #require(TransportSpec(parsing: "RTP/AVP/UDP;unicast;client_port=5000-5001;mode=record"))
        #expect(udp.lower == .udp(client: (5000, 5001), server: nil) && udp.modeRecord)
        // RTP/AVP alone means UDP too (§3).
        #expect(TransportSpec(parsing: "RTP/AVP;unicast;client_port=5000-5001;mode=record")?.lower == .udp(client: (5000, 5001), server: nil))
        let tcp = try #require(TransportSpec(parsing: "RTP/AVP/TCP;unicast;interleaved=0-1;mode=record"))
        #expect(tcp.lower == .tcp(channels: (0, 1)))
        #expect(TransportSpec(parsing: "RTP/AVP;multicast;port=5000-5001") == nil)
        // Found by Tools/fuzz: a parameter that is "=" alone crashed the receiver's SETUP.
        #expect(TransportSpec(parsing: "RTP/AVP;=;client_port=5000-5001") == TransportSpec(parsing: "RTP/AVP;client_port=5000-5001"))
        #expect(RTPInfo(parsing: "url=rtsp://x/streamid=0;seq=12;rtptime=345") == RTPInfo(sequence: 12, rtpTime: 345))
        #expect(PlaybackAnchor(parsing: "rtptime=1;clock=99") == PlaybackAnchor(rtpTime: 1, senderClock: 99))
        #expect(TextParameters(parsing: "volume: -12.5\r\nstats\r\n")["volume"] == "-12.5")
    }
}

/// HOST:PORT in both families, as `--host`, logs and RTSP URLs write it.
struct HostPortTests {
    @Test func ipv6IsBracketedAndParsedBack() {
        #expect(HostPort.text("::1", 7700) == "[::1]:7700")
        #expect(HostPort.text("192.0.2.7", 7700) == "192.0.2.7:7700")
        #expect(HostPort.text("kitchen.local", UInt16(7700)) == "kitchen.local:7700")
        for (host, port) in [("::1", UInt16(7700)), ("fd00:1::2", 1), ("192.0.2.7", 65535), ("kitchen.local", 7700)] {
            let parsed = HostPort.parse(HostPort.text(host, port))
            #expect(parsed?.host == host && parsed?.port == port)
        }
    }

    /// A link-local address keeps its zone: `%` for users and logs, `%25` in URLs (RFC 6874); both are read.
    @Test func aZoneIsKeptAndEscapedInURLs() {
        #expect(HostPort.text("fe80::1%eth0", 7700) == "[fe80::1%eth0]:7700")
        #expect(HostPort.uri("fe80::1%eth0", 7700) == "[fe80::1%25eth0]:7700")
        #expect(HostPort.uri("fd00::2", 7700) == "[fd00::2]:7700")
        for text in ["[fe80::1%eth0]:7700", "[fe80::1%25eth0]:7700"] {
            let parsed = HostPort.parse(text)
            #expect(parsed?.host == "fe80::1%eth0" && parsed?.port == 7700, "\(text)")
        }
        #expect(HostPort.isLinkLocal("fe80::1%eth0") && HostPort.isLinkLocal("FEBF::1") && HostPort.isLinkLocal("fe80::1"))
        #expect(HostPort.lacksZone("fe80::1") && !HostPort.lacksZone("fe80::1%eth0") && !HostPort.lacksZone("fd77::1"))
        #expect(!HostPort.isLinkLocal("fec0::1") && !HostPort.isLinkLocal("fd77::1") && !HostPort.isLinkLocal("10.0.0.1")
                && !HostPort.isLinkLocal("fe80.local"))
        let sdp = SessionDescription(audio: AudioFormat(encoding: .opus, payloadType: 96), origin: "fe80::1%eth0").serialized()
        #expect(sdp.contains("c=IN IP6 fe80::1\r\n") && !sdp.contains("%"))
    }

    @Test(arguments: ["::1", "::1:7700", "[::1]", "[::1]7700", "[]:7700", "host", ":7700", "host:", "host:70000", "a:b:c", "[::1]:x"])
    func malformedIsRefused(text: String) {
        #expect(HostPort.parse(text) == nil)
    }

    @Test func anIPv6OriginIsWrittenAsIP6() {
        let sdp = SessionDescription(audio: AudioFormat(encoding: .opus, payloadType: 96), origin: "fd00::2").serialized()
        #expect(sdp.contains("o=- 0 0 IN IP6 fd00::2\r\n") && sdp.contains("c=IN IP6 fd00::2\r\n"))
        let v4 = SessionDescription(audio: AudioFormat(encoding: .opus, payloadType: 96), origin: "192.0.2.7").serialized()
        #expect(v4.contains("c=IN IP4 192.0.2.7\r\n"))
    }

    /// streaming.md §7 and §9.1: a peer silent for over 10 s is gone, at either end; a stamp later than now
    /// (which no caller reads today: the receiver stamps and checks on its event loop) is not silence.
    @Test func aPeerSilentForOverTenSecondsIsGone() {
        #expect(SessionSilence.limit == 10_000_000_000)
        #expect(!SessionSilence.isOver(10_000_000_000) && SessionSilence.isOver(10_000_000_001))
        #expect(!SessionSilence.isOver(SessionSilence.silence(since: 5_000_000_000, now: 15_000_000_000)))
        #expect(SessionSilence.isOver(SessionSilence.silence(since: 5_000_000_000, now: 15_000_000_001)))
        #expect(!SessionSilence.isOver(SessionSilence.silence(since: 15_000_000_001, now: 5_000_000_000)))
    }
}
