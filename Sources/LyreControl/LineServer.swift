import FoundationEssentials
import LyreWire
import NIOCore
import NIOPosix

/// A local control socket: a Unix stream socket that only its user can use, where each request is one line
/// of at most `maximumLineBytes` and each answer is one line, in order. lyred's control socket
/// (now-playing.md §5) and `lyre play`'s group socket (streaming.md §9.4) are both one of these.
public enum LineServer {
    /// What answers a line: the answer, without its newline, when it is ready.
    public typealias Responder = @Sendable (String, EventLoop) -> EventLoopFuture<String>

    /// Longest request line, bytes.
    public static let maximumLineBytes = 1024

    /// Binds `path` (mode 0600, its directory 0700) on `eventLoop`. A socket left behind by a process that
    /// did not stop cleanly is replaced; one that still answers is `inUse`. The directory must be safe
    /// (``checkDirectory(of:)``), and a connection from another user (`SO_PEERCRED`) is closed unanswered.
    public static func bind(path: String, eventLoop: EventLoop, owner: String, responder: @escaping Responder) async throws(LineServerError) -> Channel {
        let directory = PathText.directory(of: path)
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try checkDirectory(of: path)
        if FileManager.default.fileExists(atPath: path) {
            if let other = try? await ClientBootstrap(group: eventLoop).connect(unixDomainSocketPath: path).get() {
                try? await other.close()
                throw .inUse(path, owner: owner)
            }
            unlink(path)
        }
        // Created 0600 from the start (the umask covers the window before chmod).
        let old = umask(0o177)
        defer { umask(old) }
        let channel: Channel
        do {
            channel = try await ServerBootstrap(group: eventLoop)
                .childChannelInitializer { channel in
                    // A failed initializer closes the connection.
                    peerIsThisUser(channel).flatMapThrowing { allowed in
                        guard allowed else { throw LineServerError.foreignPeer }
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder()))
                        try channel.pipeline.syncOperations.addHandler(LineHandler(responder: responder))
                    }
                }
                .bind(unixDomainSocketPath: path).get()
        } catch {
            throw .cannotBind(path, "\(error)")
        }
        chmod(path, 0o600)
        return channel
    }

    /// Refuses a socket whose directory another user could have made or could change: it must be a directory,
    /// not a link, owned by this user or root, and writable by no one else (a `/tmp/lyred-UID` that another
    /// user made first, or `/tmp` itself, is refused). Clients check it too before they connect.
    public static func checkDirectory(of path: String) throws(LineServerError) {
        let directory = PathText.directory(of: path)
        var info = stat()
        guard lstat(directory.isEmpty ? "." : directory, &info) == 0 else {
            throw .unsafeDirectory(directory, String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .unsafeDirectory(directory, "it is not a directory") }
        guard info.st_uid == geteuid() || info.st_uid == 0 else {
            throw .unsafeDirectory(directory, "it belongs to user \(info.st_uid), not to this one (\(geteuid()))")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw .unsafeDirectory(directory, "others may write in it (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
    }

    /// Whether the process at the other end of a connection is this user's (or root's), by `SO_PEERCRED`.
    static func peerIsThisUser(_ channel: Channel) -> EventLoopFuture<Bool> {
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(false) }
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            .map { (credentials: PeerCredentials) in credentials.uid == geteuid() || credentials.uid == 0 }
            .recover { _ in false }
    }
}

/// `struct ucred`, as `SO_PEERCRED` fills it.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// Why a control socket could not be opened.
public enum LineServerError: Error, CustomStringConvertible {
    case inUse(String, owner: String)
    case cannotBind(String, String)
    case unsafeDirectory(String, String)
    /// A connection from another user.
    case foreignPeer

    public var description: String {
        switch self {
        case .inUse(let path, let owner): "control socket \(path) is in use by another \(owner)"
        case .cannotBind(let path, let why): "cannot open control socket \(path): \(why)"
        case .unsafeDirectory(let directory, let why):
            "refusing a control socket in \(directory): \(why); use a directory of this user's own (set XDG_RUNTIME_DIR)"
        case .foreignPeer: "a connection from another user"
        }
    }
}

/// Splits the stream into lines of at most `LineServer.maximumLineBytes`; a longer one is skipped and
/// reported as a failure.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = Result<String, LineTooLong>

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > LineServer.maximumLineBytes {
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                context.fireChannelRead(wrapInboundOut(.failure(LineTooLong())))
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        let bytes = buffer.readBytes(length: length) ?? []
        buffer.moveReaderIndex(forwardBy: 1)
        if bytes.count > LineServer.maximumLineBytes {
            context.fireChannelRead(wrapInboundOut(.failure(LineTooLong())))
        } else {
            context.fireChannelRead(wrapInboundOut(.success(PathText.trimmed(String(decoding: bytes, as: UTF8.self)))))
        }
        return .continue
    }
}

struct LineTooLong: Error {}

/// Answers one connection's lines, in order.
final class LineHandler: ChannelInboundHandler {
    typealias InboundIn = Result<String, LineTooLong>
    typealias OutboundOut = ByteBuffer

    private let responder: LineServer.Responder
    private var last: EventLoopFuture<Void>?

    init(responder: @escaping LineServer.Responder) { self.responder = responder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let answer: EventLoopFuture<String>
        switch unwrapInboundIn(data) {
        case .failure:
            answer = context.eventLoop.makeSucceededFuture("error invalid: a request is one line of at most \(LineServer.maximumLineBytes) bytes")
        case .success(let line) where line.isEmpty:
            return
        case .success(let line):
            answer = responder(line, context.eventLoop)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let previous = last ?? context.eventLoop.makeSucceededVoidFuture()
        last = previous.flatMap { answer }.map { text in
            let (_, context) = bound.value
            context.writeAndFlush(NIOAny(ByteBuffer(string: text + "\n")), promise: nil)
        }
    }
}
