import CSocketShim

#if canImport(Glibc)
import Glibc
#endif

/// One datagram and the time it arrived.
public struct TimestampedDatagram: Sendable {
    public var bytes: [UInt8]
    public var host: String
    public var port: UInt16
    /// When the kernel received it, on `HostClock`; when the kernel gave no stamp, when it was read.
    public var arrival: UInt64
    public var kernelStamped: Bool
}

/// A UDP socket for the timing exchange (streaming.md §5), used by one thread.
///
/// Arrival times come from the kernel (`SO_TIMESTAMPNS`), not from whenever the thread got round to
/// reading, so a busy machine delays the reading without skewing the timestamp. A late timestamp would
/// look like network delay on one leg only, and move the clock offset by half of it.
public struct TimingSocket: ~Copyable {
    public let port: UInt16
    private let fd: Int32

    /// Binds on `host` (an IPv4 or IPv6 address) on any port.
    public init(host: String) throws(SocketError) {
        fd = try InternetSocket.bindUDP(host: host)
        port = InternetSocket.localAddress(fd).port
        // Without kernel stamps the socket still works, with the reading time instead.
        _ = lyre_socket_enable_timestamps(fd)
        Self.keepKernelStampsOn()
    }

    /// Keeps the kernel stamping datagrams as they arrive for as long as the process lives.
    ///
    /// Linux turns its receive timestamps on when the first socket asks for them, and off when the last such
    /// socket closes, both through deferred work; until that work has run, a datagram is stamped when it is
    /// read, so on a loaded host a session's first answers could carry the reading time as `t4` (their round
    /// trips long, their offsets off by half the wait). One socket that asks and stays open keeps them on
    /// between sessions; lyred calls this as it starts, so that they are on before its first session.
    public static func keepKernelStampsOn() { _ = stampKeeper }

    private static let stampKeeper: Int32 = {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd >= 0 { _ = lyre_socket_enable_timestamps(fd) }
        return fd
    }()

    deinit { Glibc.close(fd) }

    /// The next datagram, or nil when none arrives within `timeoutMilliseconds` (−1: no limit), the read
    /// fails, or the socket was shut down. Datagrams longer than `maximumLength` are cut to it.
    public func receive(timeoutMilliseconds: Int, maximumLength: Int = 256) -> TimestampedDatagram? {
        var buffer = [UInt8](repeating: 0, count: maximumLength)
        var from = sockaddr_storage()
        var arrival: UInt64 = 0
        var stamped: Int32 = 0
        let n = buffer.withUnsafeMutableBytes {
            lyre_socket_receive(fd, $0.baseAddress, $0.count, &from, Int32(timeoutMilliseconds), &arrival, &stamped)
        }
        guard n > 0 else { return nil }
        let source = InternetSocket.text(from)
        return TimestampedDatagram(
            bytes: Array(buffer[0..<n]), host: source.host, port: source.port, arrival: arrival, kernelStamped: stamped != 0)
    }

    /// Ends the socket's use: a `receive` waiting now or later returns nil at once (another thread may
    /// call this while one waits).
    public func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends `bytes` to `host`:`port`; false when the send failed.
    @discardableResult
    public func send(_ bytes: [UInt8], to host: String, port: UInt16) -> Bool {
        guard let address = try? InternetSocket.address(host, port: port) else { return false }
        return bytes.withUnsafeBytes { raw in
            InternetSocket.withSockaddr(address) { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) } == raw.count
        }
    }
}
