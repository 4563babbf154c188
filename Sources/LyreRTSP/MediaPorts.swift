import LyreWire
import NIOCore
import NIOPosix

/// A session's RTP and RTCP sockets, on an even port and the odd one after it (RFC 3550 §11), bound the same
/// way at both ends: the receiver for the media it takes in, the sender for the retransmission requests
/// and reports that come back.
public enum MediaPorts {
    /// Binds RTP on a random even port in 40000…60000 and RTCP on the next, trying again (up to `attempts`
    /// times) when either is taken. `setUp` adds each channel's handlers (`rtcp` says which it is), on its loop.
    public static func bindPair(host: String, eventLoop: EventLoop, attempts: Int = 20,
                                setUp: @escaping @Sendable (Channel, _ rtcp: Bool) throws -> Void)
        -> EventLoopFuture<(rtp: Channel, rtcp: Channel)>
    {
        let base = Int.random(in: 20000...30000) * 2
        @Sendable func open(_ port: Int, rtcp: Bool) -> EventLoopFuture<Channel> {
            let address: SocketAddress
            do {
                address = try SocketAddress.numeric(host, port: port)
            } catch {
                return eventLoop.makeFailedFuture(error)
            }
            return DatagramBootstrap(group: eventLoop)
                .channelOption(.socketOption(.so_rcvbuf), value: 1 << 20)
                // One byte over the largest packet taken (streaming.md §2), so that a datagram over the limit
                // arrives over it, to be dropped and counted, instead of cut to fit (NIO's default reads 2048).
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: RTPPacket.maximumSize + 1))
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try setUp(channel, rtcp) } }
                .bind(to: address)
        }
        return open(base, rtcp: false).flatMap { rtp in
            open(base + 1, rtcp: true).map { (rtp: rtp, rtcp: $0) }.flatMapError { error in
                rtp.close(promise: nil)
                return eventLoop.makeFailedFuture(error)
            }
        }.flatMapError { error in
            attempts > 1 ? bindPair(host: host, eventLoop: eventLoop, attempts: attempts - 1, setUp: setUp) : eventLoop.makeFailedFuture(error)
        }
    }
}
