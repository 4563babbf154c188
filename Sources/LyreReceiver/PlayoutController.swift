import LyreWire
import NIOConcurrencyHelpers

/// The current session's `Playout`, shared by the event loop (packets, anchors, timing) and the output
/// thread (`render`).
///
/// `@unchecked Sendable`: `playout` is only touched with `lock` held, and the lock is held only for
/// short, non-blocking work (decoding one block at most).
final class PlayoutController: @unchecked Sendable {
    private let lock = NIOLock()
    private var playout: Playout
    let senderName: String
    /// The session's target latency, ns.
    let latency: UInt64

    init(playout: consuming Playout, senderName: String) {
        latency = playout.latency
        self.playout = playout
        self.senderName = senderName
    }

    func withPlayout<T>(_ body: (inout Playout) -> T) -> T {
        lock.withLock { body(&playout) }
    }

    var statistics: PlayoutStatistics { lock.withLock { playout.statistics } }
}
