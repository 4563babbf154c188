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

/// IPv4 socket helpers for the one exchange that runs on its own threads rather than an event loop: timing,
/// at both ends (kernel receive timestamps, real-time threads).
public enum IPv4 {
    public static func address(_ host: String, port: UInt16) throws(SocketError) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            throw SocketError(description: "'\(host)' is not an IPv4 address")
        }
        return addr
    }

    public static func withSockaddr<T>(_ addr: sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var copy = addr
        return withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// The address and port a socket is bound to.
    public static func localAddress(_ fd: Int32) -> (String, UInt16) {
        var addr = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (text(addr), UInt16(bigEndian: addr.sin_port))
    }

    /// The dotted-quad text of an address (`inet_ntop`).
    public static func text(_ addr: sockaddr_in) -> String {
        var address = addr.sin_addr
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A UDP socket bound to `host` on any port.
    public static func bindUDP(host: String, port: UInt16 = 0) throws(SocketError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .errno("socket") }
        let addr = try address(host, port: port)
        guard withSockaddr(addr, { bind(fd, $0, $1) }) == 0 else {
            let error = SocketError.errno("cannot bind UDP on \(host)")
            close(fd)
            throw error
        }
        return fd
    }
}
