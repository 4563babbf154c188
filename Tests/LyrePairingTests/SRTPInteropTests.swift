import CSRTP
@testable import LyreSRTP
import LyreWire
import Testing

/// LyreSRTP's SRTP (swift-crypto's AES-GCM, RFC 7714's framing, RFC 3711's key derivation and replay window)
/// against what nobody here wrote: RFC 7714's and RFC 3711's vectors, libsrtp2's own GCM vector, and libsrtp2
/// itself, packet by packet, both ways, which Lyre linked before (so an old end and a new one read each other).
struct SRTPInteropTests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    // MARK: vectors

    /// RFC 7714 §16.1.1 and §16.1.2: an RTP packet under the session key and salt the RFC gives (no derivation).
    @Test func rfc7714sSRTPVector() throws {
        let session = SRTPSession(.send, sessionKey: Self.bytes("000102030405060708090a0b0c0d0e0f"), sessionSalt: Self.bytes("517569642070726f2071756f"))
        let plain = Self.bytes("""
            8040f17b 8041f8d3 5501a0b2 47616c6c 69612065 7374206f 6d6e6973
            20646976 69736120 696e2070 61727465 73207472 6573
            """)
        let protected = Self.bytes("""
            8040f17b 8041f8d3 5501a0b2 f24de3a3 fb34de6c acba861c 9d7e4bca
            be633bd5 0d294e6f 42a5f47a 51c7d19b 36de3adf 8833899d 7f27beb1
            6a9152cf 765ee439 0cce
            """)
        #expect(SRTPSession.rtpIV(ssrc: 0x5501_a0b2, index: 0xf17b, salt: Self.bytes("517569642070726f2071756f")) == Self.bytes("51753c6580c2726f20718414"))
        #expect(session.protect(plain) == protected)
        let reader = SRTPSession(.receive, sessionKey: Self.bytes("000102030405060708090a0b0c0d0e0f"), sessionSalt: Self.bytes("517569642070726f2071756f"))
        #expect(reader.unprotect(protected) == .success(plain))
    }

    /// RFC 7714 §17.1: an RTCP packet as SRTCP, index 0x5d4: the tag, then the E flag and the index.
    @Test func rfc7714sSRTCPVector() throws {
        let key = Self.bytes("000102030405060708090a0b0c0d0e0f"), salt = Self.bytes("517569642070726f2071756f")
        let plain = Self.bytes("""
            81c8000d 4d617273 4e545031 4e545032 52545020 0000042a 0000e930
            4c756e61 deadbeef deadbeef deadbeef deadbeef deadbeef
            """)
        let protected = Self.bytes("""
            81c8000d 4d617273 63e94885 dcdab67c a727d766 2f6b7e99 7ff5c0f7
            6c06f32d c676a5f1 730d6fda 4ce09b46 86303ded 0bb9275b c84aa458
            96cf4d2f c5abf872 45d9eade 800005d4
            """)
        #expect(SRTPSession.rtcpIV(ssrc: 0x4d61_7273, index: 0x5d4, salt: salt) == Self.bytes("517524055203726f207170bb"))
        #expect(SRTPSession(.send, sessionKey: key, sessionSalt: salt).protectRTCP(plain, index: 0x5d4) == protected)
        #expect(SRTPSession(.receive, sessionKey: key, sessionSalt: salt).unprotectRTCP(protected) == .success(plain))
    }

    /// RFC 3711 Appendix B.3: the AES-CM key derivation (a 112-bit salt there; Lyre's is 96 bits and two zero bytes).
    @Test func rfc3711sKeyDerivationVector() throws {
        let master = Self.bytes("E1F97A0D3E018BE0D64FA32C06DE4139"), salt = Self.bytes("0EC675AD498AFEEBB6960B3AABE6")
        #expect(try SRTPSession.derive(label: 0x00, bytes: 16, master: master, salt: salt) == Self.bytes("C61E7A93744F39EE10734AFE3FF7A087"))
        #expect(try SRTPSession.derive(label: 0x02, bytes: 14, master: master, salt: salt) == Self.bytes("30CBBC08863D8C85D49DB34A9AE1"))
    }

    /// libsrtp2's own GCM check (test/srtp_driver.c, srtp_validate_gcm): a master key and 96-bit salt through the
    /// key derivation, then an RTP and the first RTCP packet, through the public interface.
    @Test func libsrtp2sGCMVector() throws {
        let key = Self.bytes("000102030405060708090a0b0c0d0e0f a0a1a2a3a4a5a6a7a8a9aaab")
        let session = try SRTPSession(.send, key: key)
        #expect(session.protect(Self.bytes("800f1234 decafbad cafebabe abababab abababab abababab abababab")) == Self.bytes("""
            800f1234 decafbad cafebabe c5002ede 04cfdd2e b91159e0 880aa06e
            d2976826 f796b201 df3131a1 27e8a392
            """))
        #expect(session.protectRTCP(Self.bytes("81c8000b cafebabe abababab abababab abababab abababab")) == Self.bytes("""
            81c8000b cafebabe c98b8b5d f0392a55 852b6c21 ac8e7025 c52c6fbe
            a2b3b446 ea31123b a88ce61e 80000001
            """))
    }

    // MARK: libsrtp2, side by side

    /// Packets of two SSRCs (media and FEC), sequence numbers across the 16-bit wrap (the rollover counter), a
    /// header with CSRCs and one with an extension, a resend, and RTCP: protected by Lyre and by libsrtp2 alike,
    /// byte for byte, and each read by the other.
    @Test func theSameBytesAsLibsrtp2AndEachReadsTheOther() throws {
        let key = SRTPSession.makeKey()
        let ours = try SRTPSession(.send, key: key), theirs = try LibSRTP(.send, key: key)
        let ourReader = try SRTPSession(.receive, key: key), theirReader = try LibSRTP(.receive, key: key)
        var generator = SystemRandomNumberGenerator()
        var sent: [[UInt8]] = []
        for n in 0..<400 {
            let sequence = UInt16(truncatingIfNeeded: 65_300 + n)
            let ssrc: UInt32 = n % 5 == 4 ? 0x1234_5678 ^ 0x5A5A_5A5A : 0x1234_5678
            var packet = RTPPacket(payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(n) * 960, ssrc: ssrc,
                                   payload: (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }).serialized()
            if n % 7 == 3 { packet = Self.withCSRCs(packet) }
            if n % 11 == 5 { packet = Self.withExtension(packet) }
            sent.append(packet)
            try Self.expectBoth(packet, ours: ours, theirs: theirs, ourReader: ourReader, theirReader: theirReader)
            if n % 50 == 49 {
                // A resend of a packet 20 back: the same bytes again, and both readers took it already.
                let resend = sent[n - 20]
                let a = try #require(ours.protect(resend)), b = try #require(theirs.protect(resend))
                #expect(a == b)
                #expect(ourReader.unprotect(b) == .failure(.replayed))
                #expect(theirReader.unprotect(a) == .failure(.replayed))
            }
            if n % 10 == 0 {
                let report = RTCPPacket.compound([LyreSentReport(ssrc: ssrc, highestSequence: sequence).serialized()])
                let a = try #require(ours.protectRTCP(report)), b = try #require(theirs.protectRTCP(report))
                #expect(a == b, "SRTCP differs at packet \(n)")
                #expect(ourReader.unprotectRTCP(b) == .success(report))
                #expect(theirReader.unprotectRTCP(a) == .success(report))
            }
        }
    }

    /// What arrives late, twice, far too late or altered is taken or refused by Lyre's reader as by libsrtp2's:
    /// the same verdict for every packet of a shuffled, duplicated stream that crosses the 16-bit wrap.
    @Test func theSameVerdictsAsLibsrtp2() throws {
        let key = SRTPSession.makeKey()
        let sender = try SRTPSession(.send, key: key)
        let ours = try SRTPSession(.receive, key: key), theirs = try LibSRTP(.receive, key: key)
        var generator = SystemRandomNumberGenerator()
        let protected = try (0..<3000).map { n in
            try #require(sender.protect(RTPPacket(payloadType: 96, sequenceNumber: UInt16(truncatingIfNeeded: 64_000 + n),
                                                  timestamp: 0, ssrc: 7, payload: [UInt8(n & 0xFF)]).serialized()))
        }
        // Mostly in order, some late (up to 1,500 back, past the 1,024 window), some twice, some altered.
        var arrivals: [[UInt8]] = []
        for (n, packet) in protected.enumerated() {
            // An altered copy comes before its packet: after it, it would be a replay, refused before its tag is read.
            if n % 29 == 0 { var altered = packet; altered[altered.count - 1] ^= 1; arrivals.append(altered) }
            arrivals.append(packet)
            if n % 13 == 0 { arrivals.append(packet) }
            if n % 17 == 0, n > 0 { arrivals.append(protected[n - Int.random(in: 1...min(n, 1500), using: &generator)]) }
        }
        var verdicts: [String: Int] = [:]
        for (i, packet) in arrivals.enumerated() {
            let a = ours.unprotect(packet), b = theirs.unprotect(packet)
            #expect(a == b, "arrival \(i): Lyre \(a), libsrtp2 \(b)")
            switch a {
            case .success: verdicts["taken", default: 0] += 1
            case .failure(let failure): verdicts[failure.description, default: 0] += 1
            }
        }
        // The stream tried each verdict.
        #expect(verdicts.count == 3, "\(verdicts)")
    }

    static func expectBoth(_ packet: [UInt8], ours: SRTPSession, theirs: LibSRTP, ourReader: SRTPSession, theirReader: LibSRTP,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        let a = try #require(ours.protect(packet), sourceLocation: sourceLocation)
        let b = try #require(theirs.protect(packet), sourceLocation: sourceLocation)
        #expect(a == b, "SRTP differs for sequence \(UInt16(packet[2]) << 8 | UInt16(packet[3]))", sourceLocation: sourceLocation)
        #expect(ourReader.unprotect(b) == .success(packet), sourceLocation: sourceLocation)
        #expect(theirReader.unprotect(a) == .success(packet), sourceLocation: sourceLocation)
    }

    /// The packet with two CSRCs after its 12-byte header (CC = 2).
    static func withCSRCs(_ packet: [UInt8]) -> [UInt8] {
        var out = Array(packet.prefix(12)) + [0, 0, 0, 1, 0, 0, 0, 2] + packet.dropFirst(12)
        out[0] = out[0] & 0xF0 | 2
        return out
    }

    /// The packet with a one-word header extension after its header and CSRCs (X = 1).
    static func withExtension(_ packet: [UInt8]) -> [UInt8] {
        let header = 12 + 4 * Int(packet[0] & 0x0F)
        var out = Array(packet.prefix(header)) + [0xBE, 0xDE, 0, 1, 0x10, 0xAA, 0, 0] + packet.dropFirst(header)
        out[0] |= 0x10
        return out
    }
}

/// libsrtp2 as Lyre used it until LyreSRTP replaced it: AEAD_AES_128_GCM, `ssrc_any_*`, a 1,024-packet window,
/// repeats allowed when sending.
final class LibSRTP {
    private static let initialized: Bool = srtp_init() == srtp_err_status_ok
    private var context: srtp_t?

    init(_ direction: SRTPSession.Direction, key: [UInt8]) throws {
        guard Self.initialized else { throw SRTPSession.Failure.setup("srtp_init failed") }
        var policy = srtp_policy_t()
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        policy.ssrc.type = direction == .send ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = 1024
        policy.allow_repeat_tx = direction == .send ? 1 : 0
        var master = key
        var created: srtp_t?
        let status = master.withUnsafeMutableBufferPointer { buffer in
            policy.key = buffer.baseAddress
            return srtp_create(&created, &policy)
        }
        guard status == srtp_err_status_ok, let created else { throw SRTPSession.Failure.setup("srtp_create: \(status.rawValue)") }
        context = created
    }

    deinit { if let context { srtp_dealloc(context) } }

    func protect(_ packet: [UInt8]) -> [UInt8]? { run(packet, room: Int(SRTP_MAX_TRAILER_LEN)) { srtp_protect(self.context, $0, $1) } }
    func protectRTCP(_ packet: [UInt8]) -> [UInt8]? { run(packet, room: Int(SRTP_MAX_TRAILER_LEN) + 4) { srtp_protect_rtcp(self.context, $0, $1) } }

    func unprotect(_ packet: [UInt8]) -> Result<[UInt8], SRTPSession.Failure> {
        guard packet.count >= 12 + SRTPSession.overhead else { return .failure(.malformed) }
        return verdict(packet) { srtp_unprotect(self.context, $0, $1) }
    }

    func unprotectRTCP(_ packet: [UInt8]) -> Result<[UInt8], SRTPSession.Failure> {
        guard packet.count >= 8 + 4 + SRTPSession.overhead else { return .failure(.malformed) }
        return verdict(packet) { srtp_unprotect_rtcp(self.context, $0, $1) }
    }

    private func run(_ packet: [UInt8], room: Int, _ call: (UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) -> [UInt8]? {
        var buffer = packet + [UInt8](repeating: 0, count: room)
        var length = Int32(packet.count)
        let status = buffer.withUnsafeMutableBytes { call($0.baseAddress, &length) }
        return status == srtp_err_status_ok ? Array(buffer.prefix(Int(length))) : nil
    }

    private func verdict(_ packet: [UInt8], _ call: (UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>) -> srtp_err_status_t)
        -> Result<[UInt8], SRTPSession.Failure>
    {
        var buffer = packet
        var length = Int32(packet.count)
        let status = buffer.withUnsafeMutableBytes { call($0.baseAddress, &length) }
        switch status {
        case srtp_err_status_ok: return .success(Array(buffer.prefix(Int(length))))
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: return .failure(.replayed)
        case srtp_err_status_auth_fail, srtp_err_status_cipher_fail: return .failure(.unauthentic)
        default: return .failure(.malformed)
        }
    }
}
