import LyreWire
import Testing

/// discovery.md §1: the host name an embedded responder takes when another host holds its own.
@Suite struct HostNameTests {
    @Test func theFirstConflictTakesTheDeviceIdsSuffix() {
        let id = DeviceID("3FA9C2D41B7E4F6A8C0D2E1F3A5B7C9D")!
        #expect(HostName.suffix(of: id) == "3fa9c2")
        #expect(HostName.alternative(to: "kitchen-pi", conflicts: 1, suffix: HostName.suffix(of: id)) == "kitchen-pi-3fa9c2")
    }

    @Test func laterConflictsCountFromTheOwnName() {
        let names = (1...3).map { HostName.alternative(to: "pi", conflicts: $0, suffix: "3fa9c2") }
        #expect(names == ["pi-3fa9c2", "pi-3fa9c2-2", "pi-3fa9c2-3"])
    }

    /// A suffix of digits is kept as it is: avahi's rule would read `-123456` as a counter and try `-123457`,
    /// another receiver's first choice.
    @Test func aSuffixOfDigitsIsNotACounter() {
        #expect(HostName.alternative(to: "pi", conflicts: 1, suffix: "123456") == "pi-123456")
        #expect(HostName.alternative(to: "pi", conflicts: 2, suffix: "123456") == "pi-123456-2")
    }

    @Test func withoutASuffixItCountsFromTwo() {
        #expect((1...2).map { HostName.alternative(to: "pi", conflicts: $0, suffix: nil) } == ["pi-2", "pi-3"])
    }

    /// The own name is cut at a character boundary, and the suffix is never the part that is lost.
    @Test func aLongNameIsCutAndKeepsItsSuffix() {
        let own = String(repeating: "é", count: 40)  // 80 bytes
        let name = HostName.alternative(to: own, conflicts: 2, suffix: "3fa9c2")
        #expect(name.utf8.count <= 63)
        #expect(name.hasSuffix("-3fa9c2-2"))
        #expect(name.dropLast("-3fa9c2-2".count).allSatisfy { $0 == "é" })
        #expect(name.utf8.count == 63)  // 27 é (54 bytes) and the 9 bytes of the tail
    }
}
