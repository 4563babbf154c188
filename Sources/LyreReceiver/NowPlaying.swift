import Dispatch
import FoundationEssentials
import LyreAudio
import LyreClock
import LyreWire
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// What the current session says is playing, as the receiver shows it (now-playing.md §2–§4): the
/// sender's `NowPlayingInfo`, its anchor on this host's clock, the artwork and the commands it accepts.
public struct NowPlayingSnapshot: Sendable, Equatable {
    public enum PlaybackState: String, Sendable { case playing, paused, stopped }

    public var sender: String
    public var info: NowPlayingInfo?
    /// `info.anchor` on the local clock (CLOCK_MONOTONIC ns), from the session's clock offset.
    public var localAnchor: UInt64?
    /// Where the artwork was written, when there is one.
    public var artworkPath: String?
    public var artworkType: Artwork.ImageType?
    public var enabled: EnabledCommands
    /// Now-playing updates received in this session.
    public var updates: Int

    public init(sender: String, info: NowPlayingInfo? = nil, localAnchor: UInt64? = nil, artworkPath: String? = nil,
                artworkType: Artwork.ImageType? = nil, enabled: EnabledCommands = EnabledCommands([]), updates: Int = 0) {
        self.sender = sender
        self.info = info
        self.localAnchor = localAnchor
        self.artworkPath = artworkPath
        self.artworkType = artworkType
        self.enabled = enabled
        self.updates = updates
    }

    public var state: PlaybackState {
        guard let info else { return .stopped }
        return info.rate != 0 ? .playing : .paused
    }

    /// Seconds into the item at local time `now`, extrapolated at the sender's rate.
    public func position(at now: UInt64 = HostClock.now()) -> Double? {
        guard var info else { return nil }
        info.anchor = localAnchor ?? info.anchor
        return info.position(at: now)
    }

    /// One line for the log.
    public var summary: String {
        guard let info else { return "nothing from '\(sender)'" }
        var text = "'\(info.title ?? "untitled")'"
        if let artist = info.artist { text += " by \(artist)" }
        if let album = info.album { text += " from '\(album)'" }
        let position = NowPlayingInfo.clockText(self.position() ?? 0)
        text += " (\(position)\(info.duration.map { " / " + NowPlayingInfo.clockText($0) } ?? ""), \(state.rawValue), rate \(info.rate))"
        if let index = info.queueIndex, let count = info.queueCount { text += ", item \(index + 1) of \(count)" }
        return text
    }
}

/// How a relayed command ended, as the receiver tells whoever asked (control socket, MPRIS).
public struct RemoteCommandOutcome: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case success, noSuchContent, commandFailed, disabled, noSession, timeout, invalid
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var succeeded: Bool { kind == .success }
}

/// Writes the session's artwork to a file, for MPRIS `mpris:artUrl`: one file at a time, named by a hash
/// of its bytes, readable by this user only; the old one is removed. Files are written on a queue of
/// the store's own, never on an event loop (an image can be 1 MiB).
///
/// `@unchecked Sendable`: `current` and the files are touched only on `queue`, one write or removal at a
/// time, in the order they were asked for.
final class ArtworkStore: @unchecked Sendable {
    let directory: String
    private var current: String?
    private let queue = DispatchQueue(label: "lyred-artwork")

    init(directory: String) { self.directory = directory }

    /// Writes `artwork`; the future, on `loop`, gives its path.
    func write(_ artwork: Artwork, on loop: any EventLoop) -> EventLoopFuture<String> {
        let promise = loop.makePromise(of: String.self)
        queue.async { promise.completeWith(Result { try self.writeNow(artwork) }) }
        return promise.futureResult
    }

    /// Removes the current file, after any write already asked for.
    func remove() { queue.async { self.removeNow() } }

    /// Removes the current file and returns when it is gone.
    func removed() async { await withCheckedContinuation { done in queue.async { self.removeNow(); done.resume() } } }

    private func writeNow(_ artwork: Artwork) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: names the file, so a changed image gets a new URL
        for byte in artwork.bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let path = "\(directory)/artwork-\(String(hash, radix: 16)).\(artwork.fileExtension)"
        if path != current {
            let temporary = path + ".tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: Data(artwork.bytes), attributes: [.posixPermissions: 0o600]),
                rename(temporary, path) == 0
            else { throw ArtworkStoreError(path: path) }
            removeNow()
        }
        current = path
        return path
    }

    private func removeNow() {
        if let current { try? FileManager.default.removeItem(atPath: current) }
        current = nil
    }
}

struct ArtworkStoreError: Error, CustomStringConvertible {
    let path: String
    var description: String { "cannot write artwork to \(path)" }
}
