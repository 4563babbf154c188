import LyreWire
import Testing

@testable import lyred

/// discovery.md §2: with the keys of this version, the record lyred writes is at most 252 bytes, and 268 with every
/// feature token of §3, well under the 1300 bytes RFC 6763 §6.2 recommends. The largest: every key, each at its
/// longest (a 64-byte model and sender name, the longest status and output kind, a volume with a tenth).
struct AdvertisedRecordTests {
    static func largest(features: [String]) throws -> Int {
        let receiver = ReceiverTXT(
            deviceID: try #require(DeviceID(String(repeating: "f", count: 32))),
            model: String(repeating: "m", count: 100), codecs: ReceiverCapabilities.codecs, features: features,
            status: .playing(sender: String(repeating: "s", count: 100)), outputKind: .headphones, volume: -12.5,
            keyFingerprint: String(repeating: "a", count: 16))
        return receiver.txtRecord.serialized().count
    }

    @Test func lyredsLargestRecordIsAtMost252Bytes() throws {
        let largest = try Self.largest(features: ReceiverCapabilities.features)
        #expect(largest == 252, "\(largest) bytes")
        let everyToken = try Self.largest(features: ["clock", "meta", "rc", "pin", "fec"])
        #expect(everyToken == 268, "\(everyToken) bytes")
    }
}
