import Crypto

/// Authenticates the timing exchange of a paired session (Protocol/pairing.md §6.4): each timing packet is
/// followed by a 16-byte HMAC-SHA-256 tag under a key the sender makes per link and sends inside TLS
/// (`Lyre-Timing-Key` in SETUP). A reply that does not verify is dropped, so a third host that can see and
/// forge packets still cannot move a receiver's clock.
public struct TimingAuthenticator: Sendable {
    public static let keyLength = 32
    public static let tagLength = 16

    /// The key's bytes (swift-crypto's `SymmetricKey` is not `Sendable`; one is made per packet).
    private let keyBytes: [UInt8]

    public init?(key: [UInt8]) {
        guard key.count == Self.keyLength else { return nil }
        keyBytes = key
    }

    private func tag(_ packet: [UInt8]) -> ArraySlice<UInt8> {
        Array(HMAC<SHA256>.authenticationCode(for: packet, using: SymmetricKey(data: keyBytes))).prefix(Self.tagLength)
    }

    /// A fresh random key.
    public static func makeKey() -> [UInt8] { Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }) }

    /// `packet` with its tag after it.
    public func seal(_ packet: [UInt8]) -> [UInt8] {
        packet + tag(packet)
    }

    /// The packet a datagram carries, when its tag verifies (compared in constant time); nil otherwise.
    public func open(_ datagram: [UInt8]) -> [UInt8]? {
        guard datagram.count > Self.tagLength else { return nil }
        let packet = Array(datagram.dropLast(Self.tagLength))
        let expected = tag(packet)
        let difference = zip(expected, datagram.suffix(Self.tagLength)).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) }
        return difference == 0 ? packet : nil
    }
}
