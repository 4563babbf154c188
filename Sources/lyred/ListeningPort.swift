#if canImport(Glibc)
import Glibc
#endif

/// The TCP port the receiver listens on, bound at start so a busy port is an error before anything is
/// advertised. Dual-stack (an IPv6 socket that also takes IPv4), IPv4 alone where IPv6 is unusable.
///
/// Nothing accepts connections yet: the RTSP server that will own this socket comes with streaming.
final class ListeningPort: Sendable {
    let descriptor: Int32
    let port: UInt16

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(port requested: UInt16) throws {
        var outcome = Self.listen(family: AF_INET6, port: requested)
        if case .failure(let error) = outcome, error.code == EAFNOSUPPORT || error.code == EADDRNOTAVAIL {
            outcome = Self.listen(family: AF_INET, port: requested)
        }
        switch outcome {
        case .success(let (fd, port)):
            descriptor = fd
            self.port = port
        case .failure(let error) where error.code == EADDRINUSE:
            throw Failure(description: "port \(requested) is already in use; pick another with --port (0 picks a free one)")
        case .failure(let error) where error.code == EACCES:
            throw Failure(description: "port \(requested) needs privileges; use a port above 1023 with --port")
        case .failure(let error):
            throw Failure(description: "cannot listen on port \(requested): \(String(cString: strerror(error.code)))")
        }
    }


    struct SocketError: Error { var code: Int32 }

    /// socket + bind + listen on the wildcard address; the bound port, or the errno that stopped it.
    private static func listen(family: Int32, port: UInt16) -> Result<(Int32, UInt16), SocketError> {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SocketError(code: errno)) }
        var yes: Int32 = 1
        var no: Int32 = 0
        let size = socklen_t(MemoryLayout<Int32>.size)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, size)
        var storage = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &no, size)
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                address.pointee.sin6_family = sa_family_t(AF_INET6)
                address.pointee.sin6_port = port.bigEndian
                address.pointee.sin6_addr = in6addr_any
            }
        } else {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                address.pointee.sin_family = sa_family_t(AF_INET)
                address.pointee.sin_port = port.bigEndian
                address.pointee.sin_addr.s_addr = INADDR_ANY
            }
        }
        let ok = withUnsafeMutableBytes(of: &storage) { raw -> Bool in
            let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)
            return bind(fd, address, length) == 0 && Glibc.listen(fd, 16) == 0
                && getsockname(fd, address, &length) == 0
        }
        guard ok else {
            let code = errno
            Glibc.close(fd)
            return .failure(SocketError(code: code))
        }
        // sin_port and sin6_port sit at the same offset, right after the family.
        let bound = withUnsafeBytes(of: &storage) { $0.load(fromByteOffset: 2, as: UInt16.self) }
        return .success((fd, UInt16(bigEndian: bound)))
    }

    func close() { Glibc.close(descriptor) }
}
