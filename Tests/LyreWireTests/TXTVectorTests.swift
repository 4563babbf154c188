import Foundation
@testable import LyreWire
import Testing

/// The TXT vectors in Protocol/vectors/txt: each NAME.bin is RDATA, NAME.json what it must read as.
struct TXTVector: CustomTestStringConvertible, Sendable {
    struct Expected: Decodable, Sendable {
        struct Receiver: Decodable, Sendable {
            var version: Int
            var deviceID: String
            var model: String
            var codecs: [String]
            var features: [String]
            var status: String?
            var sender: String?
            var outputKind: String?
            var volume: Double?
            var keyFingerprint: String?
        }
        var description: String
        var wellFormed: Bool
        var roundTrip: Bool
        var valid: Bool
        var error: String?
        var canonical: Bool
        var receiver: Receiver?
    }

    var name: String
    var bytes: [UInt8]
    var expected: Expected
    var testDescription: String { name }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/txt")

    static func all() throws -> [TXTVector] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
        return try names.map { name in
            let json = try Data(contentsOf: directory.appendingPathComponent(name + ".json"))
            let bin = try Data(contentsOf: directory.appendingPathComponent(name + ".bin"))
            return TXTVector(name: name, bytes: Array(bin), expected: try JSONDecoder().decode(Expected.self, from: json))
        }
    }
}

/// The case name of an error, as the vectors spell it.
func errorName(_ error: any Error) -> String {
    String(describing: error).split(separator: "(").first.map(String.init) ?? "\(error)"
}

@Suite struct TXTVectorTests {
    @Test func vectorsArePresent() throws {
        let vectors = try TXTVector.all()
        #expect(vectors.count >= 20, "Protocol/vectors/txt holds \(vectors.count) vectors")
        #expect(vectors.contains { $0.expected.canonical })
        #expect(vectors.contains { !$0.expected.valid })
        #expect(vectors.contains { !$0.expected.wellFormed })
    }

    @Test(arguments: try TXTVector.all())
    func vector(_ vector: TXTVector) throws {
        let expected = vector.expected
        let record: TXTRecord
        do {
            record = try TXTRecord.parse(vector.bytes)
        } catch {
            #expect(!expected.wellFormed, "\(vector.name): \(error)")
            #expect(expected.error == errorName(error))
            return
        }
        #expect(expected.wellFormed)
        // Parse then serialise reproduces the input byte for byte.
        #expect(record.serialized() == vector.bytes)
        #expect(expected.roundTrip)

        let receiver: ReceiverTXT
        do {
            receiver = try ReceiverTXT(record)
        } catch {
            #expect(!expected.valid, "\(vector.name): \(error)")
            #expect(expected.error == errorName(error))
            return
        }
        #expect(expected.valid, "\(vector.name) parsed but should be rejected with \(expected.error ?? "-")")
        let want = try #require(expected.receiver)
        #expect(receiver.version == want.version)
        #expect(receiver.deviceID.rawValue == want.deviceID)
        #expect(receiver.model == want.model)
        #expect(receiver.codecs == want.codecs)
        #expect(receiver.features == want.features)
        #expect(receiver.status?.token == want.status)
        if case .playing(let sender) = receiver.status { #expect(sender == want.sender) } else { #expect(want.sender == nil) }
        #expect(receiver.outputKind?.rawValue == want.outputKind)
        #expect(receiver.volume == want.volume)
        #expect(receiver.keyFingerprint == want.keyFingerprint)
        // Writing the parsed receiver back gives the same bytes exactly when the vector is canonical.
        #expect((receiver.txtRecord.serialized() == vector.bytes) == expected.canonical)
    }
}

@Suite struct TXTRecordTests {
    @Test func keysAreCaseInsensitiveAndFirstWins() throws {
        let record = try TXTRecord(strings: [Array("ST=idle".utf8), Array("st=playing".utf8), Array("flag".utf8)])
        #expect(record.string(forKey: "st") == "idle")
        #expect(record.value(forKey: "FLAG") == .some(nil))
        #expect(record.value(forKey: "missing") == nil)
    }

    @Test func rejectsOversizedStringsAndKeys() {
        #expect(throws: TXTRecordError.stringTooLong(256)) { try TXTRecord(strings: [Array(repeating: 0x61, count: 256)]) }
        #expect(throws: TXTRecordError.invalidKey("a=b")) { try TXTRecord(pairs: [("a=b", "c")]) }
        #expect(throws: TXTRecordError.invalidKey("")) { try TXTRecord(pairs: [("", "c")]) }
    }

    @Test func truncatedLengthByte() {
        #expect(throws: TXTRecordError.truncated(offset: 4)) { try TXTRecord.parse([3, 0x61, 0x3D, 0x62, 9, 0x63]) }
    }

    /// discovery.md §2: the size is checked first, so RDATA that is both oversized and truncated (its first
    /// length byte points past a string) is `recordTooLarge`.
    @Test func sizeIsCheckedBeforeTheStrings() {
        #expect(throws: TXTRecordError.recordTooLarge(9000)) { try TXTRecord.parse(Array(repeating: 255, count: 9000)) }
        #expect(throws: TXTRecordError.recordTooLarge(8901)) { try TXTRecord.parse([255] + Array(repeating: 0x61, count: 8900)) }
    }
}

@Suite struct ReceiverTXTTests {
    static let id = DeviceID("00112233445566778899aabbccddeeff")!

    @Test func volumeIsWrittenWithOneDecimalAtMost() {
        #expect(ReceiverTXT.format(0) == "0")
        #expect(ReceiverTXT.format(-12.5) == "-12.5")
        #expect(ReceiverTXT.format(-0.25) == "-0.3")
        #expect(ReceiverTXT.format(-144) == "-144")
        #expect(ReceiverTXT.validVolume(-31) == nil)
        #expect(ReceiverTXT.validVolume(0.5) == nil)
    }

    @Test func longSenderNameIsCutAtACharacterBoundary() throws {
        let name = String(repeating: "é", count: 40)  // 80 bytes
        let receiver = ReceiverTXT(
            deviceID: Self.id, model: "m", codecs: [], features: [], status: .playing(sender: name), outputKind: nil,
            volume: nil)
        let parsed = try ReceiverTXT(receiver.txtRecord)
        guard case .playing(let sender) = parsed.status else { Issue.record("status \(String(describing: parsed.status))"); return }
        #expect(sender == String(repeating: "é", count: 32))
    }

    /// discovery.md §3: `md` is cut to 64 bytes, never inside a UTF-8 sequence or a grapheme cluster.
    @Test func longModelIsCutAtAGraphemeBoundary() throws {
        func written(_ model: String) throws -> String {
            let receiver = ReceiverTXT(deviceID: Self.id, model: model, codecs: [], features: [], status: nil, outputKind: nil, volume: nil)
            return try ReceiverTXT(TXTRecord.parse(receiver.txtRecord.serialized())).model
        }
        // "é" as e + U+0301 (3 bytes, one character): 21 of them fit in 63 bytes, a 22nd would be split.
        #expect(try written(String(repeating: "e\u{301}", count: 25)) == String(repeating: "e\u{301}", count: 21))
        // Flags (8 bytes each): 8 fill the 64 bytes exactly.
        #expect(try written(String(repeating: "🇫🇷", count: 9)) == String(repeating: "🇫🇷", count: 8))
        // "€" (3 bytes) after 62 bytes of ASCII: it does not fit, and is left out whole.
        #expect(try written(String(repeating: "a", count: 62) + "€b") == String(repeating: "a", count: 62))
        #expect(try written(String(repeating: "m", count: 64)) == String(repeating: "m", count: 64))
    }

    @Test func deviceIDIsRandomAndWellFormed() {
        let a = DeviceID.random(), b = DeviceID.random()
        #expect(a != b)
        #expect(DeviceID(a.rawValue) == a)
        #expect(DeviceID(a.rawValue.uppercased()) == a)
        #expect(DeviceID("xyz") == nil)
    }
}

@Suite struct ServiceNameTests {
    @Test(arguments: [
        ("Kitchen", "Kitchen (2)"), ("Kitchen (2)", "Kitchen (3)"), ("Kitchen (9)", "Kitchen (10)"),
        ("(2)", "(2) (2)"), ("Kitchen(2)", "Kitchen(2) (2)"), ("Room (1)", "Room (1) (2)"),
    ])
    func alternative(name: String, next: String) {
        #expect(ServiceName.alternative(after: name) == next)
    }

    @Test func alternativeStillFitsOneLabel() {
        let long = String(repeating: "ü", count: 31) + "x"  // 63 bytes
        let next = ServiceName.alternative(after: long)
        #expect(next.utf8.count <= 63)
        #expect(next.hasSuffix(" (2)"))
        #expect(ServiceName.sanitized("") == "Lyre")
    }
}
