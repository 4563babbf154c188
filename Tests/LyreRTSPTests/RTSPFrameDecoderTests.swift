import Foundation
import LyreRTSP
import LyreWire
import NIOCore
import NIOEmbedded
import Testing

/// RTSPFrameDecoder's framing in a pipeline, and its deadlines (streaming.md §2), on EmbeddedChannel's clock.
struct RTSPFrameDecoderTests {
    /// Records the frames and errors that reach the end of the pipeline.
    final class Catcher: ChannelInboundHandler {
        typealias InboundIn = RTSPFrame
        var frames: [RTSPFrame] = []
        var errors: [Error] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { frames.append(unwrapInboundIn(data)) }
        func errorCaught(context: ChannelHandlerContext, error: Error) { errors.append(error) }
    }

    static func channel() throws -> (EmbeddedChannel, Catcher) {
        let catcher = Catcher()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(catcher)
        return (channel, catcher)
    }

    static func write(_ channel: EmbeddedChannel, _ bytes: [UInt8]) throws {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
    }

    /// Closes the connection at the first frame that reaches it, as lyred does at interleaved data outside an
    /// interleaved session.
    final class Closer: ChannelInboundHandler {
        typealias InboundIn = RTSPFrame
        var frames = 0
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            frames += 1
            context.close(promise: nil)
        }
    }

    /// A connection closed at a frame costs that frame: the rest of what was read with it is not framed
    /// (streaming.md §2; a flood of 10 000 empty interleaved frames in one read reaches the handler once).
    @Test func framesReadAfterTheConnectionClosedAreNotFramed() throws {
        let closer = Closer()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(closer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 554)).wait()
        _ = try? channel.writeInbound(channel.allocator.buffer(bytes: Array(repeating: [0x24, 0, 0, 0], count: 10_000).joined()))
        #expect(closer.frames == 1 && !channel.isActive)
    }

    static func timedOut(_ catcher: Catcher) -> Bool { catcher.errors.contains { ($0 as? RTSPParseError) == .timeout } }

    /// A connection that sends nothing, or only part of its first message (a stalled TLS handshake looks the
    /// same), gets 408 after 10 s.
    @Test func theFirstMessageMustComeWithin10Seconds() throws {
        let (channel, catcher) = try Self.channel()
        let loop = channel.embeddedEventLoop
        try Self.write(channel, Array("OPTIONS * RTSP/1.0\r\n".utf8))
        loop.advanceTime(by: .seconds(9))
        #expect(!Self.timedOut(catcher))
        loop.advanceTime(by: .seconds(2))
        #expect(Self.timedOut(catcher) && RTSPParseError.timeout.status == 408)
    }

    /// After the first message, a connection may be quiet as long as it likes between messages, but a message
    /// begun must come whole within 30 s (a 2 MiB body cannot be held open).
    @Test func aMessageBegunMustEndWithin30Seconds() throws {
        let (channel, catcher) = try Self.channel()
        let loop = channel.embeddedEventLoop
        try Self.write(channel, Array("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n".utf8))
        #expect(catcher.frames.count == 1)
        loop.advanceTime(by: .seconds(300))
        #expect(catcher.errors.isEmpty, "a quiet connection between messages was timed out")
        try Self.write(channel, Array("SET_PARAMETER rtsp://h/ RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 2097151\r\n\r\n".utf8) + [UInt8](repeating: 0x61, count: 1000))
        loop.advanceTime(by: .seconds(20))
        try Self.write(channel, [UInt8](repeating: 0x61, count: 1000))  // trickling does not move the deadline
        loop.advanceTime(by: .seconds(9))
        #expect(!Self.timedOut(catcher))
        loop.advanceTime(by: .seconds(2))
        #expect(Self.timedOut(catcher))
    }

    /// Many small frames in one read are framed in time linear in the read: 250,000 empty interleaved frames
    /// (1 MB). Taking each off the front of the whole read made this quadratic (about 125 GB of copying).
    @Test func manySmallFramesAreFramedInOnePass() throws {
        var parser = RTSPParser()
        var buffer = ArraySlice([UInt8](repeating: 0, count: 4 * 250_000))
        for i in stride(from: 0, to: buffer.count, by: 4) { buffer[i] = UInt8(ascii: "$") }
        var frames = 0
        while let frame = try parser.next(&buffer) {
            #expect(frame == .interleaved(channel: 0, payload: []))
            frames += 1
        }
        #expect(frames == 250_000 && buffer.isEmpty)
    }

    /// A head that arrives a byte at a time is framed the same as one that arrives whole.
    @Test func aHeadByteByByteIsTheSame() throws {
        let (channel, catcher) = try Self.channel()
        let message = Array("ANNOUNCE rtsp://h/ RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 3\r\n\r\nabc".utf8)
        for byte in message { try Self.write(channel, [byte]) }
        guard case .message(let parsed) = catcher.frames.first else {
            Issue.record("no message: \(catcher.frames) \(catcher.errors)")
            return
        }
        #expect(parsed.cseq == 2 && parsed.body == Array("abc".utf8) && catcher.frames.count == 1)
    }

    /// Damaged messages, in pieces of any size, as a hostile or broken peer sends them: the decoder (the
    /// parser under libFuzzer, Tools/fuzz rtsp, in its pipeline) passes up frames or reports an error, and
    /// never traps. Seeded, so every run is the same 3,000 inputs; the fuzz corpus's messages are the start.
    @Test func damagedMessagesInAnyPiecesNeverTrapTheDecoder() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Tools/fuzz.d/corpus/rtsp").standardized
        let seeds = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted().map {
            Array(try Data(contentsOf: corpus.appendingPathComponent($0)).dropFirst())
        }
        try #require(seeds.count >= 5, "the fuzz corpus at \(corpus.path)")
        var state: UInt64 = 20_261_126
        func next(_ bound: Int) -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(max(1, bound)))
        }
        var framed = 0, refused = 0
        for _ in 0..<3000 {
            var input = seeds[next(seeds.count)] + (next(2) == 0 ? seeds[next(seeds.count)] : [])
            for _ in 0..<1 + next(6) {
                switch next(4) {
                case 0: if !input.isEmpty { input[next(input.count)] ^= UInt8(1 << next(8)) }
                case 1: input.insert(UInt8(next(256)), at: next(input.count + 1))
                case 2: if !input.isEmpty { input.remove(at: next(input.count)) }
                default: input.insert(contentsOf: Array("Content-Length: \(next(100_000))\r\n".utf8), at: next(input.count + 1))
                }
            }
            let (channel, catcher) = try Self.channel()
            var offset = 0
            while offset < input.count {
                let piece = min(input.count - offset, 1 + next(64))
                do { try Self.write(channel, Array(input[offset..<offset + piece])) } catch { break }
                offset += piece
            }
            framed += catcher.frames.count
            refused += catcher.errors.isEmpty ? 0 : 1
            _ = try? channel.finish()
        }
        // Both outcomes were reached: the inputs were neither all refused nor all accepted.
        #expect(framed > 0 && refused > 0, "framed \(framed), refused \(refused)")
    }
}
