import CSodium
import Crypto
import LyreWire

/// CPace on ristretto255 with SHA-512 (CPACE-RISTR255-SHA512, draft-irtf-cfrg-cpace, checked against its test
/// vectors in Protocol/vectors/cpace-ristretto255.json): a balanced PAKE, so that the 6-digit PIN of pairing
/// (Protocol/pairing.md) gives an attacker one guess per run, online, never an offline search of a recording.
/// The group operations are libsodium's; only the draft's string handling is written here.
public enum CPace {
    /// G.DSI for ristretto255.
    static let dsi = Array("CPaceRistretto255".utf8)
    /// SHA-512's input block size, bytes (H.s_in_bytes).
    static let hashBlock = 128
    /// The encoding of the neutral element, G.I.
    static let identity = [UInt8](repeating: 0, count: 32)

    static let initialized: Bool = sodium_init() >= 0

    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// generator_string(G.DSI, PRS, CI, sid, H.s_in_bytes): the fields hashed to the generator, with zero
    /// padding that fills the hash's first block with DSI and PRS alone.
    public static func generatorString(prs: [UInt8], ci: [UInt8], sid: [UInt8]) -> [UInt8] {
        let lengthOfPRS = PrefixFree.cat([prs]).count
        let lengthOfDSI = PrefixFree.cat([dsi]).count
        let zpad = max(0, hashBlock - lengthOfPRS - lengthOfDSI - 1)
        return PrefixFree.cat([dsi, prs, [UInt8](repeating: 0, count: zpad), ci, sid])
    }

    /// G.calculate_generator: the encoded generator, from the 64-byte hash of the generator string through
    /// ristretto255's one-way map.
    public static func generator(prs: [UInt8], ci: [UInt8], sid: [UInt8]) -> [UInt8] {
        oneWayMap(Array(SHA512.hash(data: generatorString(prs: prs, ci: ci, sid: sid))))
    }

    /// ristretto255's one-way map (RFC 9496 §4.3.4) of 64 uniform bytes: libsodium's
    /// `crypto_core_ristretto255_from_hash`.
    public static func oneWayMap(_ uniform: [UInt8]) -> [UInt8] {
        precondition(initialized)
        precondition(uniform.count == Int(crypto_core_ristretto255_HASHBYTES), "the one-way map takes 64 bytes")
        var point = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_BYTES))
        crypto_core_ristretto255_from_hash(&point, uniform)
        return point
    }

    /// G.sample_scalar: a uniform scalar from libsodium.
    public static func sampleScalar() -> [UInt8] {
        precondition(initialized)
        var scalar = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_SCALARBYTES))
        crypto_core_ristretto255_scalar_random(&scalar)
        return scalar
    }

    /// G.scalar_mult_vfy(y, X): X^y encoded, or nil (G.I) when X does not decode to a group element or the
    /// result is the neutral element. Used for Y = g^y as well, where g is a valid element.
    public static func scalarMultiply(_ scalar: [UInt8], _ element: [UInt8]) -> [UInt8]? {
        precondition(initialized)
        guard scalar.count == Int(crypto_core_ristretto255_SCALARBYTES), element.count == Int(crypto_core_ristretto255_BYTES) else {
            return nil
        }
        var result = [UInt8](repeating: 0, count: Int(crypto_scalarmult_ristretto255_BYTES))
        // libsodium fails when the point is not a canonical encoding of an element, or the result is the identity.
        guard crypto_scalarmult_ristretto255(&result, scalar, element) == 0, result != identity else { return nil }
        return result
    }

    /// ISK = H.hash(prefix_free_cat(G.DSI || "_ISK", sid, K) || MSGa || MSGb), initiator first.
    public static func intermediateSessionKey(sid: [UInt8], k: [UInt8], msgA: [UInt8], msgB: [UInt8]) -> [UInt8] {
        Array(SHA512.hash(data: PrefixFree.cat([dsi + Array("_ISK".utf8), sid, k]) + msgA + msgB))
    }

    /// One party's run: its scalar and its share, Y = g^y.
    public struct Party {
        public let scalar: [UInt8]
        public let share: [UInt8]
        let sid: [UInt8]

        /// - Parameter scalar: for test vectors only; a fresh random one otherwise.
        public init(prs: [UInt8], ci: [UInt8], sid: [UInt8], scalar: [UInt8]? = nil) {
            let g = CPace.generator(prs: prs, ci: ci, sid: sid)
            let y = scalar ?? CPace.sampleScalar()
            self.scalar = y
            // g came from the one-way map and y is not zero, so g^y is an element other than the identity.
            share = CPace.scalarMultiply(y, g) ?? CPace.identity
            self.sid = sid
        }

        /// The ISK, from the other party's share and both messages (MSGa first).
        /// - Throws: when the other share is invalid or makes the neutral element: the run must be abandoned.
        public func sessionKey(peerShare: [UInt8], msgA: [UInt8], msgB: [UInt8]) throws(Failure) -> [UInt8] {
            guard let k = CPace.scalarMultiply(scalar, peerShare) else {
                throw Failure(description: "the peer's CPace share is not a valid group element")
            }
            return CPace.intermediateSessionKey(sid: sid, k: k, msgA: msgA, msgB: msgB)
        }
    }
}
