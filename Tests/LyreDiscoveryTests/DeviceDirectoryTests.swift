import LyreDiscovery
import LyreWire
import Testing

@Suite struct DeviceDirectoryTests {
    static let id = DeviceID("0123456789abcdef0123456789abcdef")!
    static let other = DeviceID("fedcba9876543210fedcba9876543210")!

    static func key(_ name: String, interface: String = "lo", ipv6: Bool = false) -> ServiceInstanceKey {
        ServiceInstanceKey(interface: interface, ipv6: ipv6, name: name, domain: "local")
    }

    static func txt(_ id: DeviceID, status: ReceiverStatus = .idle, volume: Double = 0) -> [UInt8] {
        ReceiverTXT(deviceID: id, model: "m", codecs: ["opus"], features: [], status: status, outputKind: .speaker, volume: volume)
            .txtRecord.serialized()
    }

    static func service(_ txt: [UInt8], address: String = "127.0.0.1", port: UInt16 = 7700) -> ResolvedService {
        ResolvedService(host: "pi.local", address: address, port: port, txt: txt)
    }

    @Test func newInstanceIsAvailableThenChangedThenUnavailable() {
        var directory = DeviceDirectory()
        var (changes, _) = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.id))))
        #expect(changes.map(\.reason) == [.deviceAvailable])
        #expect(changes.first?.device.id == Self.id)
        #expect(changes.first?.device.name == "Kitchen")

        // The same records again: nothing changed.
        (changes, _) = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.id))))
        #expect(changes.isEmpty)

        (changes, _) = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.id, status: .playing(sender: "Bob")))))
        #expect(changes.map(\.reason) == [.deviceChanged])
        #expect(changes.first?.device.receiver.status == .playing(sender: "Bob"))

        (changes, _) = directory.apply(.removed(Self.key("Kitchen")))
        #expect(changes.map(\.reason) == [.deviceUnavailable])
        #expect(directory.currentDevices.isEmpty)
    }

    @Test func instancesWithOneIDAreOneDeviceWithMergedAddresses() {
        var directory = DeviceDirectory()
        _ = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.id))))
        let (changes, _) = directory.apply(
            .resolved(Self.key("Kitchen", ipv6: true), Self.service(Self.txt(Self.id), address: "::1")))
        #expect(changes.map(\.reason) == [.deviceChanged])
        #expect(directory.currentDevices.count == 1)
        #expect(directory.currentDevices.first?.addresses == ["127.0.0.1", "::1"])

        // One instance leaving does not make the device unavailable.
        let (afterRemoval, _) = directory.apply(.removed(Self.key("Kitchen")))
        #expect(afterRemoval.map(\.reason) == [.deviceChanged])
        #expect(directory.currentDevices.first?.addresses == ["::1"])
    }

    @Test func aRenameKeepsTheDevice() {
        var directory = DeviceDirectory()
        _ = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.id))))
        var (changes, _) = directory.apply(.resolved(Self.key("Kitchen (2)"), Self.service(Self.txt(Self.id))))
        (changes, _) = directory.apply(.removed(Self.key("Kitchen")))
        #expect(changes.map(\.reason) == [.deviceChanged])
        #expect(directory.currentDevices.map(\.name) == ["Kitchen (2)"])
        #expect(directory.currentDevices.map(\.id) == [Self.id])
    }

    @Test func malformedRecordsAreCountedAndDoNotDisturbOthers() {
        var directory = DeviceDirectory()
        _ = directory.apply(.resolved(Self.key("Good"), Self.service(Self.txt(Self.id))))
        let hostile: [[UInt8]] = [
            [], [200, 1, 2], Array("\u{3}v=1".utf8), [5] + Array("v=1xx".utf8),
            [4] + Array("v=1\u{0}".utf8) + [10] + Array("id=zzzzzzz".utf8),
            Array(repeating: 255, count: 9000),
        ]
        for (index, bytes) in hostile.enumerated() {
            let (changes, rejected) = directory.apply(.resolved(Self.key("Bad \(index)"), Self.service(bytes)))
            #expect(changes.isEmpty)
            #expect(rejected != nil)
        }
        #expect(directory.rejectedCount == hostile.count)
        // Re-announcing the same bad bytes is not counted again.
        _ = directory.apply(.resolved(Self.key("Bad 0"), Self.service(hostile[0])))
        #expect(directory.rejectedCount == hostile.count)
        #expect(directory.currentDevices.map(\.name) == ["Good"])
    }

    @Test func aRecordThatTurnsInvalidMakesItsDeviceUnavailable() {
        var directory = DeviceDirectory()
        _ = directory.apply(.resolved(Self.key("Flaky"), Self.service(Self.txt(Self.id))))
        let (changes, rejected) = directory.apply(.resolved(Self.key("Flaky"), Self.service(Array("\u{3}v=2".utf8))))
        #expect(rejected != nil)
        #expect(changes.map(\.reason) == [.deviceUnavailable])
    }

    @Test func anIDChangeIsOneDeviceLeavingAndAnotherArriving() {
        var directory = DeviceDirectory()
        _ = directory.apply(.resolved(Self.key("Den"), Self.service(Self.txt(Self.id))))
        let (changes, _) = directory.apply(.resolved(Self.key("Den"), Self.service(Self.txt(Self.other))))
        #expect(Set(changes.map(\.reason)) == [.deviceAvailable, .deviceUnavailable])
        #expect(directory.currentDevices.map(\.id) == [Self.other])
    }

    @Test func afterADisconnectOnlyWhatIsNotSeenAgainLeaves() {
        var directory = DeviceDirectory()
        _ = directory.apply(.resolved(Self.key("Stays"), Self.service(Self.txt(Self.id))))
        _ = directory.apply(.resolved(Self.key("Goes"), Self.service(Self.txt(Self.other))))
        var (changes, _) = directory.apply(.disconnected)
        #expect(changes.isEmpty)
        #expect(directory.currentDevices.count == 2)
        (changes, _) = directory.apply(.reconnected)
        (changes, _) = directory.apply(.resolved(Self.key("Stays"), Self.service(Self.txt(Self.id))))
        #expect(changes.isEmpty)
        (changes, _) = directory.apply(.allForNow)
        #expect(changes.map(\.reason) == [.deviceUnavailable])
        #expect(changes.first?.device.id == Self.other)
        #expect(directory.currentDevices.map(\.name) == ["Stays"])
    }
}
