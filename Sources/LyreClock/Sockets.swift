#if canImport(Glibc)
import Glibc
#endif

/// A socket failure with errno's text.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(description: String) { self.description = description }

    public static func errno(_ what: String) -> SocketError {
        SocketError(description: "\(what): \(String(cString: strerror(Glibc.errno)))")
    }
}

/// IPv4 and IPv6 socket helpers, and the one text form of an address that both ends use everywhere (host
/// strings, NIO addresses through `SocketAddress.numeric` and `hostText`, the timing threads' sockets).
/// Addresses are numeric; an IPv6 address with a scope carries its zone after `%` (`fe80::1%eth0`, as `ip`
/// and getaddrinfo write it), since a link-local address means nothing without its interface. The timing
/// exchange, which runs on its own threads rather than an event loop, compares a datagram's source with the
/// peer's text in this form.
public enum InternetSocket {
    /// `host` (an IPv4 or IPv6 literal, an IPv6 one with `%ZONE`: an interface name or index) and `port` as a
    /// socket address.
    public static func address(_ host: String, port: UInt16) throws(SocketError) -> sockaddr_storage {
        var storage = sockaddr_storage()
        let parsed = withUnsafeMutableBytes(of: &storage) { raw -> Bool in
            if host.contains(":") {
                let addr = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                addr.pointee.sin6_family = sa_family_t(AF_INET6)
                addr.pointee.sin6_port = port.bigEndian
                let parts = host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2 {
                    guard let scope = scopeIndex(parts[1]) else { return false }
                    addr.pointee.sin6_scope_id = scope
                }
                return inet_pton(AF_INET6, String(parts[0]), &addr.pointee.sin6_addr) == 1
            }
            let addr = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
            addr.pointee.sin_family = sa_family_t(AF_INET)
            addr.pointee.sin_port = port.bigEndian
            return inet_pton(AF_INET, host, &addr.pointee.sin_addr) == 1
        }
        guard parsed else { throw SocketError(description: "'\(host)' is not an IPv4 or IPv6 address") }
        return storage
    }

    static func length(_ storage: sockaddr_storage) -> socklen_t {
        socklen_t(Int32(storage.ss_family) == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    }

    public static func withSockaddr<T>(_ storage: sockaddr_storage, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var copy = storage
        return withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length(storage)) }
        }
    }

    /// The numeric text (`inet_ntop`) and port of an address.
    public static func text(_ storage: sockaddr_storage) -> (host: String, port: UInt16) {
        var copy = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var scope: UInt32 = 0
        let port = withUnsafeMutableBytes(of: &copy) { raw -> UInt16 in
            if Int32(storage.ss_family) == AF_INET6 {
                let addr = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                inet_ntop(AF_INET6, &addr.pointee.sin6_addr, &text, socklen_t(text.count))
                scope = addr.pointee.sin6_scope_id
                return UInt16(bigEndian: addr.pointee.sin6_port)
            }
            let addr = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
            inet_ntop(AF_INET, &addr.pointee.sin_addr, &text, socklen_t(text.count))
            return UInt16(bigEndian: addr.pointee.sin_port)
        }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (scope == 0 ? host : host + "%" + zoneName(scope), port)
    }

    /// An IPv6 scope's zone as text: its interface's name, or the index when no interface has it now.
    public static func zoneName(_ scope: UInt32) -> String {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(scope, &name) != nil else { return String(scope) }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A zone's interface index: a number, or the name of an interface this host has.
    static func scopeIndex(_ zone: Substring) -> UInt32? {
        if let index = UInt32(zone), index > 0 { return index }
        let index = if_nametoindex(String(zone))
        return index == 0 ? nil : index
    }

    /// The address and port a socket is bound to.
    public static func localAddress(_ fd: Int32) -> (host: String, port: UInt16) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return text(storage)
    }

    /// A UDP socket bound to `host` (IPv4 or IPv6) on `port` (0: any).
    public static func bindUDP(host: String, port: UInt16 = 0) throws(SocketError) -> Int32 {
        let addr = try address(host, port: port)
        let fd = socket(Int32(addr.ss_family), Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .errno("socket") }
        guard withSockaddr(addr, { bind(fd, $0, $1) }) == 0 else {
            let error = SocketError.errno("cannot bind UDP on \(host)")
            close(fd)
            throw error
        }
        return fd
    }
}
