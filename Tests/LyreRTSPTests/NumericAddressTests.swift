#if canImport(Glibc)
import Glibc
#endif
import LyreClock
import LyreRTSP
import NIOCore
import Testing

/// The one text form of an address both ends use: numeric, a link-local IPv6 one with its zone.
struct NumericAddressTests {
    @Test func aZoneBecomesTheScopeAndIsWrittenBack() throws {
        let index = if_nametoindex("lo")
        try #require(index != 0)
        for zone in ["lo", String(index)] {
            let address = try SocketAddress.numeric("fe80::1%\(zone)", port: 7700)
            guard case .v6(let v6) = address else { Issue.record("not IPv6: \(address)"); continue }
            #expect(v6.address.sin6_scope_id == index && address.port == 7700)
            // Written back with the interface's name, as the kernel's datagram sources are by InternetSocket.
            #expect(address.hostText == "fe80::1%lo")
            let text = InternetSocket.text(try InternetSocket.address("fe80::1%\(zone)", port: 7700))
            #expect(text.host == "fe80::1%lo" && text.port == 7700)
        }
    }

    @Test func addressesWithoutAZoneAreAsNIOWritesThem() throws {
        for host in ["::1", "fd77::2", "10.77.0.2"] {
            let address = try SocketAddress.numeric(host, port: 1)
            let nio = try SocketAddress(ipAddress: host, port: 1)
            #expect(address.hostText == host && address == nio)
        }
    }

    @Test(arguments: ["fe80::1%no-such-interface", "10.0.0.1%lo", "fe80::1%", "kitchen.local", "fe80::zz%lo"])
    func whatIsNotANumericAddressIsRefused(host: String) {
        #expect(throws: SocketError.self) { try SocketAddress.numeric(host, port: 7700) }
    }
}
