import Crypto
import CryptoExtras
import LyreWire
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One direction of SRTP for one session (RFC 3711), with AEAD_AES_128_GCM (RFC 7714): the sender protects
/// every RTP packet it sends on a link (media, resends, FEC), the receiver unprotects what comes in and drops
/// what is replayed or altered. RTCP goes as SRTCP, each way, under the same master key (the two ends' SSRCs
/// differ, so their keystreams do). Keys are made by the sender per link and travel inside TLS (`a=crypto` in
/// the ANNOUNCE SDP, Protocol/pairing.md §6).
///
/// The cipher is swift-crypto's AES-GCM and AES block function (BoringSSL, which the TLS of the same session
/// already uses); this file is only RFC 7714's framing and RFC 3711's key derivation and replay window.
/// libsrtp2 did this before: through Debian's build it loads NSS, 2.1 MB of a receiver's memory for the
/// one cipher Lyre uses (Tools/bench footprint). SRTPInteropTests checks the framing against RFC 7714's vectors and
/// every packet both ways against libsrtp2 itself, so that old and new ends read each other.
///
/// Each SSRC is a stream of its own, with its own index and replay window, as libsrtp2's `ssrc_any_*` policies
/// made them: the sender's media and FEC streams, and each end's RTCP.
public final class SRTPSession: Sendable {
    public enum Direction: Sendable { case send, receive }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case setup(String)
        /// A packet seen before, or older than the replay window.
        case replayed
        /// A packet whose tag does not verify: altered, or not from the key's holder.
        case unauthentic
        case malformed

        public var description: String {
            switch self {
            case .setup(let why): "cannot set up SRTP: \(why)"
            case .replayed: "replayed SRTP packet"
            case .unauthentic: "SRTP packet failed authentication"
            case .malformed: "malformed SRTP packet"
            }
        }
    }

    /// The RFC 4568 / RFC 7714 name of the one suite Lyre uses.
    public static let suite = "AEAD_AES_128_GCM"
    /// Master key and salt, bytes: 16 + 12.
    public static let keyLength = 28
    /// Bytes SRTP adds to each packet: the GCM tag.
    public static let overhead = 16
    /// How far back (packets) a packet may arrive and still be taken: room for resends and reordering.
    static let replayWindow = 1024
    /// The same for SRTCP, whose reports come a few a second (libsrtp2's 128).
    static let rtcpReplayWindow = 128

    /// A fresh random master key and salt.
    public static func makeKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// A session key and salt, for RTP or for RTCP.
    struct SessionKeys: Sendable {
        let key: SymmetricKey
        let salt: [UInt8]
    }

    let rtp: SessionKeys
    let rtcp: SessionKeys
    private let direction: Direction

    private struct Streams {
        var rtp: [UInt32: ReplayWindow] = [:]
        var rtcp: [UInt32: ReplayWindow] = [:]
        /// The last SRTCP index each SSRC sent.
        var rtcpSent: [UInt32: UInt32] = [:]
    }
    private let streams = Mutex(Streams())

    public init(_ direction: Direction, key: [UInt8]) throws(Failure) {
        guard key.count == Self.keyLength else { throw .setup("a key is \(Self.keyLength) bytes") }
        let master = Array(key[0..<16])
        let salt = Array(key[16..<28])
        do {
            rtp = SessionKeys(key: SymmetricKey(data: try Self.derive(label: 0x00, bytes: 16, master: master, salt: salt)),
                              salt: try Self.derive(label: 0x02, bytes: 12, master: master, salt: salt))
            rtcp = SessionKeys(key: SymmetricKey(data: try Self.derive(label: 0x03, bytes: 16, master: master, salt: salt)),
                               salt: try Self.derive(label: 0x05, bytes: 12, master: master, salt: salt))
        } catch {
            throw .setup("key derivation: \(error)")
        }
        self.direction = direction
    }

    /// A session with its session key and salt given (for RTP and RTCP alike), not derived: RFC 7714's
    /// vectors are given so.
    init(_ direction: Direction, sessionKey: [UInt8], sessionSalt: [UInt8]) {
        rtp = SessionKeys(key: SymmetricKey(data: sessionKey), salt: sessionSalt)
        rtcp = rtp
        self.direction = direction
    }

    /// RFC 3711 §4.3's AES-CM PRF with a key derivation rate of 0, for the 96-bit master salt of RFC 7714 as its
    /// erratum 4938 and libsrtp2 take it (the salt times 2^16, so a 112-bit one ending in two zero bytes):
    /// the first `bytes` of AES(master, x · 2^16), where x is that salt with `label` XORed into its eighth byte
    /// (key_id = label || 48-bit index, right-aligned). At most one block is ever needed.
    static func derive(label: UInt8, bytes: Int, master: [UInt8], salt: [UInt8]) throws -> [UInt8] {
        var block = salt + [UInt8](repeating: 0, count: 16 - salt.count)
        block[7] ^= label
        try AES.permute(&block, key: SymmetricKey(data: master))
        return Array(block.prefix(bytes))
    }

    // MARK: RTP

    /// `packet` (an RTP packet) protected: the header as it is, the payload encrypted, then the tag. nil for
    /// something that is not an RTP packet, or for an index older than the window (a resend that late).
    public func protect(_ packet: [UInt8]) -> [UInt8]? {
        guard let header = RTPPacket.headerLength(of: packet) else { return nil }
        let ssrc = Self.word(packet, at: 8)
        let sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        // A resend is the same packet again: a sending session may protect an index twice (libsrtp2's
        // allow_repeat_tx), and the same packet under the same IV is the same ciphertext.
        let repeats = direction == .send
        let index: UInt64? = streams.withLock { s in
            let window = s.rtp[ssrc] ?? ReplayWindow(length: Self.replayWindow)
            let (index, delta) = window.estimate(sequence)
            let verdict = window.check(delta)
            guard verdict == .fresh || (verdict == .replayed && repeats) else { return nil }
            // In place: the window's words are not copied for each packet.
            s.rtp[ssrc, default: window].take(delta)
            return index
        }
        guard let index else { return nil }
        return seal(packet, header: header, keys: rtp, iv: Self.rtpIV(ssrc: ssrc, index: index, salt: rtp.salt))
    }

    /// The RTP packet inside `packet`, or why it was refused.
    public func unprotect(_ packet: [UInt8]) -> Result<[UInt8], Failure> {
        guard let header = RTPPacket.headerLength(of: packet), packet.count >= header + Self.overhead else { return .failure(.malformed) }
        let ssrc = Self.word(packet, at: 8)
        let sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        return openOnce(\.rtp, ssrc: ssrc, length: Self.replayWindow, index: { $0.estimate(sequence).index }) { index in
            open(packet, header: header, trailer: 0, keys: rtp, iv: Self.rtpIV(ssrc: ssrc, index: index, salt: rtp.salt))
        }
    }

    /// `open(index)` for a packet of stream `ssrc`, whose index `index(window)` reads from that stream's window,
    /// when the window takes the index: checked before the tag, so that a replay costs no AES, and taken only
    /// once the tag verified, against the window as it is then (another thread may have moved it meanwhile).
    private func openOnce(_ windows: WritableKeyPath<Streams, [UInt32: ReplayWindow]>, ssrc: UInt32, length: Int,
                          index: (ReplayWindow) -> UInt64, _ open: (UInt64) -> [UInt8]?) -> Result<[UInt8], Failure> {
        let window = streams.withLock { $0[keyPath: windows][ssrc] } ?? ReplayWindow(length: length)
        let index = index(window)
        guard window.check(window.delta(of: index)) == .fresh else { return .failure(.replayed) }
        guard let plain = open(index) else { return .failure(.unauthentic) }
        let taken = streams.withLock { s -> Bool in
            let window = s[keyPath: windows][ssrc] ?? ReplayWindow(length: length)
            let delta = window.delta(of: index)
            guard window.check(delta) == .fresh else { return false }
            s[keyPath: windows][ssrc, default: window].take(delta)
            return true
        }
        return taken ? .success(plain) : .failure(.replayed)
    }

    /// RFC 7714 §8.1: 00 00 || SSRC || ROC || SEQ, XORed with the session salt.
    static func rtpIV(ssrc: UInt32, index: UInt64, salt: [UInt8]) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: 12)
        put(ssrc, into: &iv, at: 2)
        put(UInt32(truncatingIfNeeded: index >> 16), into: &iv, at: 6)
        iv[10] = UInt8(truncatingIfNeeded: index >> 8)
        iv[11] = UInt8(truncatingIfNeeded: index)
        for i in 0..<12 { iv[i] ^= salt[i] }
        return iv
    }

    // MARK: RTCP

    /// `packet` (an RTCP compound packet) protected as SRTCP (RFC 7714 §9): its first 8 bytes as they are,
    /// the rest encrypted, the tag, then the E flag and the packet's SRTCP index.
    public func protectRTCP(_ packet: [UInt8]) -> [UInt8]? {
        guard packet.count >= 8 else { return nil }
        let ssrc = Self.word(packet, at: 4)
        // libsrtp2 numbered each SSRC's SRTCP packets from 1; an index past 2^31 - 1 needs a new key.
        let index: UInt32? = streams.withLock { s in
            let next = (s.rtcpSent[ssrc] ?? 0) + 1
            guard next <= 0x7FFF_FFFF else { return nil }
            s.rtcpSent[ssrc] = next
            return next
        }
        guard let index else { return nil }
        return protectRTCP(packet, index: index)
    }

    /// `packet` protected as SRTCP packet number `index`.
    func protectRTCP(_ packet: [UInt8], index: UInt32) -> [UInt8]? {
        var word = [UInt8](repeating: 0, count: 4)
        Self.put(0x8000_0000 | index, into: &word, at: 0)
        return seal(packet, header: 8, extraAAD: word, keys: rtcp, iv: Self.rtcpIV(ssrc: Self.word(packet, at: 4), index: index, salt: rtcp.salt))
            .map { $0 + word }
    }

    /// The RTCP packet inside an SRTCP `packet`, or why it was refused.
    public func unprotectRTCP(_ packet: [UInt8]) -> Result<[UInt8], Failure> {
        guard packet.count >= 8 + 4 + Self.overhead else { return .failure(.malformed) }
        let ssrc = Self.word(packet, at: 4)
        let word = Array(packet.suffix(4))
        // Lyre encrypts every SRTCP packet: one without the E flag is not from a Lyre peer.
        guard word[0] & 0x80 != 0 else { return .failure(.unauthentic) }
        let index = Self.word(word, at: 0) & 0x7FFF_FFFF
        return openOnce(\.rtcp, ssrc: ssrc, length: Self.rtcpReplayWindow, index: { _ in UInt64(index) }) { _ in
            open(packet, header: 8, trailer: 4, extraAAD: word, keys: rtcp, iv: Self.rtcpIV(ssrc: ssrc, index: index, salt: rtcp.salt))
        }
    }

    /// RFC 7714 §9.1: 00 00 || SSRC || 00 00 || 0 || SRTCP index (31 bits), XORed with the session salt.
    static func rtcpIV(ssrc: UInt32, index: UInt32, salt: [UInt8]) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: 12)
        put(ssrc, into: &iv, at: 2)
        put(index & 0x7FFF_FFFF, into: &iv, at: 8)
        for i in 0..<12 { iv[i] ^= salt[i] }
        return iv
    }

    // MARK: AES-GCM

    /// The first `header` bytes as they are (and authenticated, with `extraAAD` after them), the rest encrypted,
    /// then the tag.
    private func seal(_ packet: [UInt8], header: Int, extraAAD: [UInt8] = [], keys: SessionKeys, iv: [UInt8]) -> [UInt8]? {
        guard let nonce = try? AES.GCM.Nonce(data: iv),
            let sealed = try? AES.GCM.seal(Array(packet[header...]), using: keys.key, nonce: nonce,
                                           authenticating: Array(packet[..<header]) + extraAAD)
        else { return nil }
        return Array(packet[..<header]) + Array(sealed.ciphertext) + Array(sealed.tag)
    }

    /// The first `header` bytes and the plain text of what follows up to the tag (and `trailer` bytes after it),
    /// or nil when the tag does not verify.
    private func open(_ packet: [UInt8], header: Int, trailer: Int, extraAAD: [UInt8] = [], keys: SessionKeys, iv: [UInt8]) -> [UInt8]? {
        let tagStart = packet.count - trailer - Self.overhead
        guard tagStart >= header, let nonce = try? AES.GCM.Nonce(data: iv),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: Array(packet[header..<tagStart]),
                                             tag: Array(packet[tagStart..<(tagStart + Self.overhead)])),
            let plain = try? AES.GCM.open(box, using: keys.key, authenticating: Array(packet[..<header]) + extraAAD)
        else { return nil }
        return Array(packet[..<header]) + Array(plain)
    }

    private static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    private static func put(_ value: UInt32, into bytes: inout [UInt8], at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[offset + 3] = UInt8(truncatingIfNeeded: value)
    }
}
