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

    // discovery.md §3: a device whose every instance says `leaving` is not listed, and a listed one that
    // says it becomes `deviceUnavailable`, carrying the device as it last was.
    @Test func aDeviceSayingLeavingIsNotListedAndAListedOneBecomesUnavailable() {
        var directory = DeviceDirectory()
        var (changes, _) = directory.apply(.resolved(Self.key("Going"), Self.service(Self.txt(Self.id, status: .leaving))))
        #expect(changes.isEmpty)
        #expect(directory.currentDevices.isEmpty)

        _ = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.other, volume: -12))))
        _ = directory.apply(.resolved(Self.key("Kitchen", ipv6: true), Self.service(Self.txt(Self.other, volume: -12), address: "::1")))
        // One of its two instances leaving is not the device leaving.
        (changes, _) = directory.apply(.resolved(Self.key("Kitchen"), Self.service(Self.txt(Self.other, status: .leaving))))
        #expect(changes.map(\.reason) == [.deviceChanged])
        #expect(directory.currentDevices.map(\.addresses) == [["::1"]])
        (changes, _) = directory.apply(
            .resolved(Self.key("Kitchen", ipv6: true), Self.service(Self.txt(Self.other, status: .leaving), address: "::1")))
        #expect(changes.map(\.reason) == [.deviceUnavailable])
        #expect(changes.first?.device.id == Self.other)
        #expect(changes.first?.device.receiver.status == .idle)
        #expect(changes.first?.device.receiver.volume == -12)
        #expect(directory.currentDevices.isEmpty)
    }

    // discovery.md §5: addresses and interfaces are the union of the instances'; name, host, port and
    // attributes come from the first instance by (name, interface, IPv4 before IPv6, domain).
    @Test func aDeviceIsTheUnionOfItsInstancesAndTheFirstInstanceNamesIt() {
        func service(_ host: String, _ address: String, _ port: UInt16, model: String) -> ResolvedService {
            let txt = ReceiverTXT(deviceID: Self.id, model: model, codecs: ["opus"], features: [], status: .idle, outputKind: .speaker, volume: 0)
            return ResolvedService(host: host, address: address, port: port, txt: txt.txtRecord.serialized())
        }
        var directory = DeviceDirectory()
        // Arriving in the reverse of the order that decides.
        _ = directory.apply(.resolved(Self.key("Kitchen (2)", interface: "eth0"), service("d.local", "10.0.0.4", 7704, model: "d")))
        _ = directory.apply(.resolved(Self.key("Kitchen", interface: "wlan0"), service("c.local", "10.0.0.3", 7703, model: "c")))
        _ = directory.apply(.resolved(Self.key("Kitchen", interface: "eth0", ipv6: true), service("b.local", "fe80::2", 7702, model: "b")))
        _ = directory.apply(.resolved(Self.key("Kitchen", interface: "eth0"), service("a.local", "10.0.0.1", 7701, model: "a")))
        var device = directory.currentDevices.first
        #expect(directory.currentDevices.count == 1)
        #expect(device?.name == "Kitchen")
        #expect(device?.host == "a.local")
        #expect(device?.port == 7701)
        #expect(device?.receiver.model == "a")
        #expect(device?.txt["md"] == "a")
        #expect(device?.interfaces == ["eth0", "wlan0"])
        #expect(device?.addresses == ["10.0.0.1", "10.0.0.3", "10.0.0.4", "fe80::2"])

        // The first instance gone, the next one (IPv6 on the same interface) names the device.
        let (changes, _) = directory.apply(.removed(Self.key("Kitchen", interface: "eth0")))
        #expect(changes.map(\.reason) == [.deviceChanged])
        device = directory.currentDevices.first
        #expect(device?.host == "b.local")
        #expect(device?.port == 7702)
        #expect(device?.receiver.model == "b")
        #expect(device?.addresses == ["10.0.0.3", "10.0.0.4", "fe80::2"])
    }

    // discovery.md §7: SRV (host, port) and address changes are reported, as `deviceChanged`; so is an
    // interface the device is newly seen on.
    @Test func hostPortAddressAndInterfaceChangesAreReported() {
        var directory = DeviceDirectory()
        let txt = Self.txt(Self.id)
        _ = directory.apply(.resolved(Self.key("Den"), ResolvedService(host: "pi.local", address: "10.0.0.1", port: 7700, txt: txt)))
        let steps: [(BrowseEvent, (Device) -> Bool)] = [
            (.resolved(Self.key("Den"), ResolvedService(host: "pi-2.local", address: "10.0.0.1", port: 7700, txt: txt)), { $0.host == "pi-2.local" }),
            (.resolved(Self.key("Den"), ResolvedService(host: "pi-2.local", address: "10.0.0.1", port: 7711, txt: txt)), { $0.port == 7711 }),
            (.resolved(Self.key("Den"), ResolvedService(host: "pi-2.local", address: "10.0.0.9", port: 7711, txt: txt)), { $0.addresses == ["10.0.0.9"] }),
            (.resolved(Self.key("Den", interface: "eth1"), ResolvedService(host: "pi-2.local", address: "10.0.0.9", port: 7711, txt: txt)),
             { $0.interfaces == ["eth1", "lo"] }),
        ]
        for (event, check) in steps {
            let (changes, _) = directory.apply(event)
            #expect(changes.map(\.reason) == [.deviceChanged])
            #expect(changes.first.map { check($0.device) } == true)
        }
    }

    // discovery.md §7: every TXT attribute as sent, keyed by its lower-cased key, the first occurrence
    // kept, with boolean and non-UTF-8 values as empty text.
    @Test func rawAttributesAreLowerCasedFirstKeptAndBooleanOrNonUTF8AsEmpty() throws {
        var bytes = Self.txt(Self.id)
        for string: [UInt8] in [Array("X-Room=Den".utf8), Array("x-room=Hall".utf8), Array("Flag".utf8), Array("bin=".utf8) + [0xFF, 0xFE],
                                Array("Empty=".utf8)] {
            bytes += [UInt8(string.count)] + string
        }
        var directory = DeviceDirectory()
        let (changes, rejected) = directory.apply(.resolved(Self.key("Den"), Self.service(bytes)))
        #expect(rejected == nil)
        let txt = try #require(changes.first?.device.txt)
        #expect(txt["x-room"] == "Den")
        #expect(txt["X-Room"] == nil)
        #expect(txt["flag"] == "")
        #expect(txt["bin"] == "")
        #expect(txt["empty"] == "")
        #expect(txt["id"] == Self.id.description)
    }

    // streaming.md §1: a sender that found a receiver by discovery streams to its first IPv4 address, else its
    // first IPv6 address that is not link-local, else a link-local one (with its zone).
    @Test func theStreamAddressIsIPv4ThenGlobalIPv6ThenLinkLocal() {
        let receiver = ReceiverTXT(deviceID: Self.id, model: "m", codecs: ["opus"], features: [], status: .idle, outputKind: .speaker, volume: 0)
        let table: [([String], String?)] = [
            (["10.0.0.2", "10.0.0.9", "2001:db8::2", "fe80::2%eth0"], "10.0.0.2"),
            (["fd00::7", "fe80::2%eth0"], "fd00::7"),
            (["fe80::2%eth0", "2001:db8::2"], "2001:db8::2"),
            (["fe80::2%eth0", "fe80::3%wlan0"], "fe80::2%eth0"),
            ([], nil),
        ]
        for (addresses, expected) in table {
            let device = Device(id: Self.id, name: "Den", host: "pi.local", addresses: addresses, port: 7700, interfaces: ["eth0"], receiver: receiver, txt: [:])
            #expect(device.streamAddress == expected, "\(addresses)")
        }
    }
}
