import CSRTP
import Dispatch
import Synchronization

/// One direction of SRTP for one session (RFC 3711), with AEAD_AES_128_GCM (RFC 7714), through libsrtp2:
/// the sender protects every RTP packet it sends on a link (media, resends, FEC), the receiver unprotects what
/// comes in and drops what is replayed or altered. RTCP goes as SRTCP, each way, under the same master key
/// (the two ends' SSRCs differ, so their keystreams do). Keys are made by the sender per link and travel inside TLS
/// (`a=crypto` in the ANNOUNCE SDP, Protocol/pairing.md §6).
///
/// `@unchecked Sendable`: the libsrtp2 context is only touched under `lock` (the sender's pacing thread and
/// its event loop both send).
public final class SRTPSession: @unchecked Sendable {
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
    static let replayWindow: UInt = 1024

    private static let initialized: Bool = srtp_init() == srtp_err_status_ok

    /// Initializes libsrtp2 now (its crypto backend, NSS, takes about 25 ms the first time), so that the first
    /// session does not wait for it. Idempotent.
    public static func prepare() { _ = initialized }

    /// ``prepare()`` on another thread; a session made meanwhile waits for it to finish.
    public static func prepareInBackground() {
        DispatchQueue.global(qos: .utility).async { prepare() }
    }

    private let lock = Mutex<Void>(())
    private var context: srtp_t?

    /// A fresh random master key and salt.
    public static func makeKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    public init(_ direction: Direction, key: [UInt8]) throws(Failure) {
        guard Self.initialized else { throw .setup("srtp_init failed") }
        guard key.count == Self.keyLength else { throw .setup("a key is \(Self.keyLength) bytes") }
        var policy = srtp_policy_t()
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        policy.ssrc.type = direction == .send ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = Self.replayWindow
        // A resend is the same packet again: the sender must be allowed to protect a sequence number twice.
        policy.allow_repeat_tx = direction == .send ? 1 : 0
        var master = key
        var created: srtp_t?
        let status = master.withUnsafeMutableBufferPointer { buffer in
            policy.key = buffer.baseAddress
            return srtp_create(&created, &policy)
        }
        guard status == srtp_err_status_ok, let created else { throw .setup("srtp_create: status \(status.rawValue)") }
        context = created
    }

    deinit {
        if let context { srtp_dealloc(context) }
    }

    /// `packet` (an RTP packet) protected: encrypted, with its tag.
    public func protect(_ packet: [UInt8]) -> [UInt8]? {
        guard packet.count >= 12 else { return nil }
        var buffer = packet + [UInt8](repeating: 0, count: Int(SRTP_MAX_TRAILER_LEN))
        var length = Int32(packet.count)
        let status = lock.withLock { _ in buffer.withUnsafeMutableBytes { srtp_protect(context, $0.baseAddress, &length) } }
        guard status == srtp_err_status_ok else { return nil }
        buffer.removeSubrange(Int(length)...)
        return buffer
    }

    /// `packet` (an RTCP compound packet) protected as SRTCP: encrypted, with its index and tag.
    public func protectRTCP(_ packet: [UInt8]) -> [UInt8]? {
        guard packet.count >= 8 else { return nil }
        // SRTCP adds its 4-byte index to what SRTP adds.
        var buffer = packet + [UInt8](repeating: 0, count: Int(SRTP_MAX_TRAILER_LEN) + 4)
        var length = Int32(packet.count)
        let status = lock.withLock { _ in buffer.withUnsafeMutableBytes { srtp_protect_rtcp(context, $0.baseAddress, &length) } }
        guard status == srtp_err_status_ok else { return nil }
        buffer.removeSubrange(Int(length)...)
        return buffer
    }

    /// The RTCP packet inside an SRTCP `packet`, or why it was refused.
    public func unprotectRTCP(_ packet: [UInt8]) -> Result<[UInt8], Failure> {
        guard packet.count >= 8 + 4 + Self.overhead else { return .failure(.malformed) }
        var buffer = packet
        var length = Int32(packet.count)
        let status = lock.withLock { _ in buffer.withUnsafeMutableBytes { srtp_unprotect_rtcp(context, $0.baseAddress, &length) } }
        return Self.result(status, buffer, length)
    }

    private static func result(_ status: srtp_err_status_t, _ buffer: [UInt8], _ length: Int32) -> Result<[UInt8], Failure> {
        switch status {
        case srtp_err_status_ok: return .success(Array(buffer.prefix(Int(length))))
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: return .failure(.replayed)
        case srtp_err_status_auth_fail, srtp_err_status_cipher_fail: return .failure(.unauthentic)
        default: return .failure(.malformed)
        }
    }

    /// The RTP packet inside `packet`, or why it was refused.
    public func unprotect(_ packet: [UInt8]) -> Result<[UInt8], Failure> {
        guard packet.count >= 12 + Self.overhead else { return .failure(.malformed) }
        var buffer = packet
        var length = Int32(packet.count)
        let status = lock.withLock { _ in buffer.withUnsafeMutableBytes { srtp_unprotect(context, $0.baseAddress, &length) } }
        return Self.result(status, buffer, length)
    }
}
