import Foundation
import LyreAudio
import LyreClock
import LyreWire
import NIOCore
import NIOPosix

/// The receiver's local control socket (now-playing.md §5): a Unix stream socket readable and writable by
/// this user only. Each line is a `ControlRequest`; each answer is one line.
enum ControlServer {
    static func bind(path: String, registry: SessionRegistry) async throws -> Channel {
        if FileManager.default.fileExists(atPath: path) {
            if let other = try? await ClientBootstrap(group: registry.eventLoop).connect(unixDomainSocketPath: path).get() {
                try? await other.close()
                throw ControlSocketError.inUse(path)
            }
            unlink(path)  // left behind by a receiver that did not stop cleanly
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        // Created 0600 from the start (the umask covers the window before chmod).
        let old = umask(0o177)
        defer { umask(old) }
        let channel: Channel
        do {
            channel = try await ServerBootstrap(group: registry.eventLoop)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlLineDecoder()))
                        try channel.pipeline.syncOperations.addHandler(ControlHandler(registry: registry))
                    }
                }
                .bind(unixDomainSocketPath: path).get()
        } catch {
            throw ControlSocketError.cannotBind(path, "\(error)")
        }
        chmod(path, 0o600)
        return channel
    }
}

/// Why the control socket could not be opened.
public enum ControlSocketError: Error, CustomStringConvertible {
    case inUse(String)
    case cannotBind(String, String)

    public var description: String {
        switch self {
        case .inUse(let path): "control socket \(path) is in use by another lyred; pass --control-socket PATH"
        case .cannotBind(let path, let why): "cannot open control socket \(path): \(why)"
        }
    }
}

/// Splits the stream into lines of at most `ControlRequest.maximumLineBytes`.
struct ControlLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = Result<String, ControlLineTooLong>

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > ControlRequest.maximumLineBytes {
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                context.fireChannelRead(wrapInboundOut(.failure(ControlLineTooLong())))
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        let bytes = buffer.readBytes(length: length) ?? []
        buffer.moveReaderIndex(forwardBy: 1)
        if bytes.count > ControlRequest.maximumLineBytes {
            context.fireChannelRead(wrapInboundOut(.failure(ControlLineTooLong())))
        } else {
            context.fireChannelRead(wrapInboundOut(.success(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))))
        }
        return .continue
    }
}

struct ControlLineTooLong: Error {}

/// Answers one control connection, in order.
final class ControlHandler: ChannelInboundHandler {
    typealias InboundIn = Result<String, ControlLineTooLong>
    typealias OutboundOut = ByteBuffer

    private let registry: SessionRegistry
    private var last: EventLoopFuture<Void>?

    init(registry: SessionRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let answer: EventLoopFuture<String>
        switch unwrapInboundIn(data) {
        case .failure:
            answer = context.eventLoop.makeSucceededFuture("error invalid: a request is one line of at most \(ControlRequest.maximumLineBytes) bytes")
        case .success(let line) where line.isEmpty:
            return
        case .success(let line):
            answer = respond(to: line, eventLoop: context.eventLoop)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let previous = last ?? context.eventLoop.makeSucceededVoidFuture()
        last = previous.flatMap { answer }.map { text in
            let (_, context) = bound.value
            context.writeAndFlush(NIOAny(ByteBuffer(string: text + "\n")), promise: nil)
        }
    }

    private func respond(to line: String, eventLoop: EventLoop) -> EventLoopFuture<String> {
        let request: ControlRequest
        do {
            request = try ControlRequest(line: line)
        } catch {
            if case .unknownCommand = error { return eventLoop.makeSucceededFuture("error unknown: \(error)") }
            return eventLoop.makeSucceededFuture("error invalid: \(error)")
        }
        switch request {
        case .stats:
            return eventLoop.makeSucceededFuture("ok \(registry.statisticsLine)")
        case .nowPlaying:
            let report = ControlNowPlaying(registry.active?.snapshot(), volume: registry.volume)
            return eventLoop.makeSucceededFuture("ok \(report.json)")
        case .command(let event):
            return registry.relay(event).map { outcome in
                outcome.succeeded ? "ok" : "error \(outcome.kind.rawValue): \(outcome.message)"
            }
        }
    }
}

/// The `now-playing` answer: the snapshot as JSON, with the position extrapolated to now.
struct ControlNowPlaying: Encodable {
    var state: String
    var sender: String?
    var title: String?
    var artist: String?
    var album: String?
    var albumArtist: String?
    var genre: String?
    var trackNumber: Int?
    var trackCount: Int?
    var duration: Double?
    var position: Double?
    var rate: Double?
    var queueIndex: Int?
    var queueCount: Int?
    var artwork: String?
    var artworkType: String?
    var commands: [String]
    var skipInterval: Double?
    var updates: Int
    var volume: Double
    /// The local clock when `position` was true, ns.
    var at: UInt64

    init(_ snapshot: NowPlayingSnapshot?, volume: Double) {
        at = HostClock.now()
        state = snapshot?.state.rawValue ?? "idle"
        sender = snapshot?.sender
        let info = snapshot?.info
        title = info?.title
        artist = info?.artist
        album = info?.album
        albumArtist = info?.albumArtist
        genre = info?.genre
        trackNumber = info?.trackNumber
        trackCount = info?.trackCount
        duration = info?.duration
        position = snapshot?.position(at: at)
        rate = info?.rate
        queueIndex = info?.queueIndex
        queueCount = info?.queueCount
        artwork = snapshot?.artworkPath
        artworkType = snapshot?.artworkType?.rawValue
        commands = RemoteCommand.allCases.filter { snapshot?.enabled.commands.contains($0) ?? false }.map(\.rawValue)
        skipInterval = snapshot?.enabled.skipInterval
        updates = snapshot?.updates ?? 0
        self.volume = volume
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
