import LyreWire
import NIOCore

/// Frames an RTSP byte stream with `RTSPParser`, for a NIO pipeline.
public struct RTSPFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = RTSPFrame

    private var parser = RTSPParser()
    private var pending: [UInt8] = []

    public init() {}

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if let bytes = buffer.readBytes(length: buffer.readableBytes), !bytes.isEmpty { pending += bytes }
        while let frame = try parser.next(&pending) {
            context.fireChannelRead(wrapInboundOut(frame))
        }
        return .needMoreData
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        _ = try decode(context: context, buffer: &buffer)
        return .needMoreData
    }
}
