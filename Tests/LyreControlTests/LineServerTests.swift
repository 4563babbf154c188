import Foundation
@testable import LyreControl
import LyreWire
import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing

/// The framing of lyred's control socket (now-playing.md §5) and `lyre play`'s group socket (streaming.md
/// §9.4), over `EmbeddedChannel`: one request per line of at most 1024 bytes, one answer per line, in order.
struct LineServerTests {
    /// A channel with the socket's decoder and handler, answering each line with `responder`.
    func channel(_ responder: @escaping LineServer.Responder) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder()))
        try channel.pipeline.syncOperations.addHandler(LineHandler(responder: responder))
        return channel
    }

    /// The words of each line, quoted again: what the socket's requests read as.
    static let echo: LineServer.Responder = { line, loop in
        loop.makeSucceededFuture((try? LineWords.join(LineWords.split(line))) ?? "error invalid: \(line)")
    }

    func answers(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { lines.append(String(buffer: buffer)) }
        return lines
    }

    /// 1024 bytes is a request; 1025 is refused with `error invalid`, and the connection goes on.
    @Test func aRequestIsOneLineOfAtMost1024Bytes() throws {
        #expect(LineServer.maximumLineBytes == 1024)
        let channel = try channel(Self.echo)
        let longest = "say " + String(repeating: "a", count: 1020)
        let tooLong = "say " + String(repeating: "b", count: 1021)
        try channel.writeInbound(ByteBuffer(string: longest + "\n" + tooLong + "\nnext one\n"))
        #expect(try answers(channel) == [longest + "\n", "error invalid: a request is one line of at most 1024 bytes\n", "next one\n"])
        // A line still unfinished past the limit is refused too, without waiting for its end.
        try channel.writeInbound(ByteBuffer(string: String(repeating: "c", count: 1025)))
        #expect(try answers(channel) == ["error invalid: a request is one line of at most 1024 bytes\n"])
        _ = try channel.finish()
    }

    /// A word cannot hold a line break: the break ends the request, even inside quotes, so a quote left open
    /// before it is refused and what follows is a request of its own.
    @Test func aWordCannotHoldALineBreak() throws {
        let channel = try channel(Self.echo)
        try channel.writeInbound(ByteBuffer(string: "add \"Room\nC\"\n"))
        #expect(try answers(channel) == ["error invalid: add \"Room\n", "error invalid: C\"\n"])
        _ = try channel.finish()
    }

    /// Answers come in the order of the requests, even when a later one is answered first.
    @Test func answersKeepTheOrderOfTheRequests() throws {
        let pending = Mutex<[EventLoopPromise<String>]>([])
        let channel = try channel { line, loop in
            if line == "slow" {
                let promise = loop.makePromise(of: String.self)
                pending.withLock { $0.append(promise) }
                return promise.futureResult
            }
            return loop.makeSucceededFuture("ok \(line)")
        }
        try channel.writeInbound(ByteBuffer(string: "slow\nfast\n"))
        #expect(try answers(channel).isEmpty)
        pending.withLock { $0.removeFirst() }.succeed("ok slow")
        #expect(try answers(channel) == ["ok slow\n", "ok fast\n"])
        // An empty line is no request and gets no answer.
        try channel.writeInbound(ByteBuffer(string: "\n  \nfast\n"))
        #expect(try answers(channel) == ["ok fast\n"])
        _ = try channel.finish()
    }
}

/// The socket itself (now-playing.md §5): bound in a directory lyred makes when it is missing, 0700, with
/// the socket 0600, so that only its user can reach it.
struct LineServerSocketTests {
    @Test func aMissingDirectoryIsMade0700AndTheSocket0600() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-line-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let path = base + "/lyred/control.sock"
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let channel = try await LineServer.bind(path: path, eventLoop: loop, owner: "lyred") { line, loop in loop.makeSucceededFuture("ok") }
        let directory = try FileManager.default.attributesOfItem(atPath: base + "/lyred")
        let socket = try FileManager.default.attributesOfItem(atPath: path)
        try await channel.close()
        #expect((directory[.posixPermissions] as? Int) == 0o700, "directory mode \(String(describing: directory[.posixPermissions]))")
        #expect((socket[.posixPermissions] as? Int) == 0o600 && socket[.type] as? FileAttributeType == .typeSocket, "\(socket)")
    }
}
