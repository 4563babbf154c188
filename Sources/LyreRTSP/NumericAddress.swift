#if canImport(Glibc)
import Glibc
#endif
import LyreClock
import NIOCore

/// NIO's addresses in Lyre's one text form of an address (`InternetSocket`): numeric, an IPv6 address with
/// its zone when it has a scope (`fe80::1%eth0`). NIO's own `ipAddress` leaves the zone out and
/// `SocketAddress(ipAddress:port:)` does not take one, so both ends go through these instead.
extension SocketAddress {
    /// A numeric address (`InternetSocket.address`), with the zone of a link-local IPv6 one.
    public static func numeric(_ host: String, port: Int) throws -> SocketAddress {
        guard let port = UInt16(exactly: port) else { throw SocketError(description: "port \(port) is out of range") }
        let storage = try InternetSocket.address(host, port: port)
        let name = String(host.prefix { $0 != "%" })
        return withUnsafeBytes(of: storage) { raw in
            Int32(storage.ss_family) == AF_INET6
                ? SocketAddress(raw.load(as: sockaddr_in6.self), host: name)
                : SocketAddress(raw.load(as: sockaddr_in.self), host: name)
        }
    }

    /// The numeric text of an IP address, with `%ZONE` when it has a scope; nil for a Unix socket's.
    public var hostText: String? {
        guard let ip = ipAddress else { return nil }
        if case .v6(let address) = self, address.address.sin6_scope_id != 0 {
            return ip + "%" + InternetSocket.zoneName(address.address.sin6_scope_id)
        }
        return ip
    }
}
