import LyreWire
import NIOCore

/// Frames an RTSP byte stream with `RTSPParser`, for a NIO pipeline.
///
/// It also keeps the deadlines of streaming.md §2: a connection's first message must come whole within
/// `firstMessage` of the connection (a TLS handshake that stalls counts against it), and any later message
/// within `wholeMessage` of its first byte. Past either, it raises `RTSPParseError.timeout` (408, and the
/// connection closes): a peer cannot hold a connection and its buffers with nothing, or with half a message.
public struct RTSPFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = RTSPFrame

    public static let firstMessage = TimeAmount.seconds(10)
    public static let wholeMessage = TimeAmount.seconds(30)

    private var parser = RTSPParser()
    /// What is read and not yet framed. Frames are taken off its front by moving the slice on; the bytes
    /// behind it are let go when it empties or they pass 64 KiB, so framing stays linear in what arrives.
    private var pending: ArraySlice<UInt8> = []
    private var deadline: Scheduled<Void>?
    private var framed = false
    /// Set once the channel is seen active. One that was and no longer is was closed, by this end at an earlier
    /// frame of the same read: the bytes left are not framed, so that a flood of frames read in one go costs
    /// one frame, not thousands on the connection's event loop, which the media of every session shares.
    private var wasActive = false

    public init() {}

    public mutating func decoderAdded(context: ChannelHandlerContext) {
        arm(context, in: Self.firstMessage)
    }

    public mutating func decoderRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if let bytes = buffer.readBytes(length: buffer.readableBytes), !bytes.isEmpty { pending += bytes }
        while true {
            if context.channel.isActive {
                wasActive = true
            } else if wasActive {
                pending = []
                break
            }
            guard let frame = try parser.next(&pending) else { break }
            if !framed {
                framed = true
                deadline?.cancel()
                deadline = nil
            }
            context.fireChannelRead(wrapInboundOut(frame))
        }
        if pending.isEmpty {
            pending = []
        } else if pending.startIndex > 65536 {
            pending = ArraySlice(Array(pending))
        }
        // A message under way has its deadline from its first byte; none between messages.
        if framed {
            if pending.isEmpty && !parser.isMidFrame {
                deadline?.cancel()
                deadline = nil
            } else if deadline == nil {
                arm(context, in: Self.wholeMessage)
            }
        }
        return .needMoreData
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        _ = try decode(context: context, buffer: &buffer)
        return .needMoreData
    }

    private mutating func arm(_ context: ChannelHandlerContext, in time: TimeAmount) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: time) {
            bound.value.fireErrorCaught(RTSPParseError.timeout)
        }
    }
}
