import NIOCore
import Testing

@testable import LyreReceiver

/// The receiver takes media only from its session's sender: the same address, whatever the port.
@Suite struct MediaSourceTests {
    @Test func theSameAddressOnAnotherPortIsTheSender() throws {
        let sender = try SocketAddress(ipAddress: "10.77.0.1", port: 554)
        #expect(RTSPConnectionHandler.sameHost(try SocketAddress(ipAddress: "10.77.0.1", port: 40000), sender))
        #expect(!RTSPConnectionHandler.sameHost(try SocketAddress(ipAddress: "10.77.0.2", port: 554), sender))
        let sender6 = try SocketAddress(ipAddress: "fd77::1", port: 554)
        #expect(RTSPConnectionHandler.sameHost(try SocketAddress(ipAddress: "fd77::1", port: 40000), sender6))
        #expect(!RTSPConnectionHandler.sameHost(try SocketAddress(ipAddress: "fd77::2", port: 554), sender6))
    }

    @Test func anotherFamilyOrNoSenderIsNot() throws {
        #expect(!RTSPConnectionHandler.sameHost(try SocketAddress(ipAddress: "::ffff:10.77.0.1", port: 1), try SocketAddress(ipAddress: "10.77.0.1", port: 1)))
        #expect(!RTSPConnectionHandler.sameHost(try SocketAddress(ipAddress: "10.77.0.1", port: 1), nil))
    }
}
