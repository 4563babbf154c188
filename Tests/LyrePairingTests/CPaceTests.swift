import Foundation
import LyrePairing
import LyreWire
import Testing

/// CPace against the CFRG draft's own test vectors for CPACE-RISTR255-SHA512
/// (Protocol/vectors/cpace-ristretto255.json, copied from draft-irtf-cfrg-cpace Appendix B).
struct CPaceTests {
    static var vectors: [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/cpace-ristretto255.json")
        let data = try! Data(contentsOf: url)
        return try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    }

    static func bytes(_ key: String, in table: [String: Any]? = nil) -> [UInt8] {
        DeviceID.bytes(hex: (table ?? vectors)[key] as! String)!
    }

    @Test func generatorMatchesTheDraft() {
        let v = Self.self
        #expect(CPace.generatorString(prs: v.bytes("PRS"), ci: v.bytes("CI"), sid: v.bytes("sid")) == v.bytes("generator_string"))
        #expect(CPace.generator(prs: v.bytes("PRS"), ci: v.bytes("CI"), sid: v.bytes("sid")) == v.bytes("g"))
    }

    /// pairing.md §2: the one-way map the generator goes through agrees with RFC 9496's own vectors (Appendix
    /// A.3), and the draft's generator is that map of its generator hash.
    @Test func theOneWayMapAgreesWithRFC9496() {
        let pairs = Self.vectors["rfc9496_one_way_map"] as! [[String: Any]]
        #expect(pairs.count == 4)
        for pair in pairs {
            #expect(CPace.oneWayMap(Self.bytes("input", in: pair)) == Self.bytes("output", in: pair))
        }
        #expect(CPace.oneWayMap(Self.bytes("generator_hash")) == Self.bytes("g"))
    }

    @Test func sharesKeysAndISKMatchTheDraft() throws {
        let v = Self.self
        let a = CPace.Party(prs: v.bytes("PRS"), ci: v.bytes("CI"), sid: v.bytes("sid"), scalar: v.bytes("ya"))
        let b = CPace.Party(prs: v.bytes("PRS"), ci: v.bytes("CI"), sid: v.bytes("sid"), scalar: v.bytes("yb"))
        #expect(a.share == v.bytes("Ya"))
        #expect(b.share == v.bytes("Yb"))
        let msgA = PrefixFree.cat([a.share, v.bytes("ADa")])
        let msgB = PrefixFree.cat([b.share, v.bytes("ADb")])
        #expect(msgA == v.bytes("MSGa"))
        #expect(msgB == v.bytes("MSGb"))
        #expect(CPace.scalarMultiply(v.bytes("ya"), v.bytes("Yb")) == v.bytes("K"))
        #expect(CPace.scalarMultiply(v.bytes("yb"), v.bytes("Ya")) == v.bytes("K"))
        #expect(try a.sessionKey(peerShare: b.share, msgA: msgA, msgB: msgB) == v.bytes("ISK_IR"))
        #expect(try b.sessionKey(peerShare: a.share, msgA: msgA, msgB: msgB) == v.bytes("ISK_IR"))
    }

    @Test func scalarMultiplicationAndInvalidPoints() {
        let valid = Self.vectors["scalar_mult_valid"] as! [String: Any]
        #expect(CPace.scalarMultiply(Self.bytes("s", in: valid), Self.bytes("X", in: valid)) == Self.bytes("result", in: valid))
        let invalid = Self.vectors["scalar_mult_invalid"] as! [String: Any]
        // A non-canonical encoding and the neutral element: G.I, so the run aborts.
        #expect(CPace.scalarMultiply(Self.bytes("s", in: invalid), Self.bytes("Y_i1", in: invalid)) == nil)
        #expect(CPace.scalarMultiply(Self.bytes("s", in: invalid), Self.bytes("Y_i2", in: invalid)) == nil)
        let party = CPace.Party(prs: Array("123456".utf8), ci: [], sid: [])
        #expect(throws: CPace.Failure.self) {
            try party.sessionKey(peerShare: Self.bytes("Y_i2", in: invalid), msgA: [], msgB: [])
        }
    }

    @Test func prefixFreeLengthsAreLEB128() throws {
        let long = [UInt8](repeating: 7, count: 300)
        let encoded = PrefixFree.cat([long, []])
        #expect(Array(encoded.prefix(2)) == [0xac, 0x02])
        #expect(try PrefixFree.split(encoded, count: 2, maximumField: 300) == [long, []])
        #expect(throws: PairingMessageError.self) { try PrefixFree.split(encoded, count: 2, maximumField: 299) }
        #expect(throws: PairingMessageError.self) { try PrefixFree.split(encoded + [0], count: 2, maximumField: 300) }
        #expect(throws: PairingMessageError.self) { try PrefixFree.split(Array(encoded.dropLast()), count: 2, maximumField: 300) }
        #expect(throws: PairingMessageError.self) { try PrefixFree.split([0xff, 0xff, 0xff, 0xff, 0x01], count: 1) }
    }
}
