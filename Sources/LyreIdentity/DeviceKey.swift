import Crypto
import FoundationEssentials
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// A device's long-term key pair (Ed25519), made once and kept in its state directory beside its id, readable
/// by its user alone (mode 0600). Pairing exchanges the public halves; sessions pin them (issue 11). The
/// receiver advertises a short fingerprint of its public key (`pk`, discovery.md §2), so a sender can tell a
/// receiver whose key changed before it connects.
public struct DeviceKey: Sendable {
    /// The file, inside the state directory, that holds the private key's 32-byte seed.
    public static let fileName = "device-key"

    /// The private key's seed and the raw public key, as bytes (swift-crypto's key types are not `Sendable`).
    private let seed: [UInt8]
    public let publicKeyBytes: [UInt8]

    public init(privateKey: Curve25519.Signing.PrivateKey) {
        seed = Array(privateKey.rawRepresentation)
        publicKeyBytes = Array(privateKey.publicKey.rawRepresentation)
    }

    public var privateKey: Curve25519.Signing.PrivateKey {
        // The seed came from a key: it is always one.
        try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    public var publicKey: Curve25519.Signing.PublicKey { privateKey.publicKey }

    /// The fingerprint of this key: ``fingerprint(of:)``.
    public var fingerprint: String { Self.fingerprint(of: publicKeyBytes) }

    /// The first 8 bytes of the SHA-256 of the raw public key, in lower-case hex: 16 digits, short enough for
    /// a TXT record and a person to compare, long enough that a key made to match one takes 2^64 tries.
    public static func fingerprint(of publicKey: [UInt8]) -> String {
        DeviceID.hex(SHA256.hash(data: publicKey).prefix(8))
    }

    /// Reads the key from `directory`, or creates the directory and a new key when there is none. A key file
    /// that others can read is made private again (0600).
    /// - Throws: ``DeviceIdentityError`` when the directory cannot be written or the file is damaged.
    public static func loadOrCreate(in directory: String) throws(DeviceIdentityError) -> DeviceKey {
        let path = directory + "/" + fileName
        if let data = FileManager.default.contents(atPath: path) {
            guard data.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: data) else {
                throw .damaged(path: path, what: "a device key")
            }
            if chmod(path, 0o600) != 0 { throw .unwritable(path: path, reason: String(cString: strerror(errno))) }
            return DeviceKey(privateKey: key)
        }
        let key = Curve25519.Signing.PrivateKey()
        try DeviceIdentity.writePrivate(Array(key.rawRepresentation), to: path)
        return DeviceKey(privateKey: key)
    }
}
