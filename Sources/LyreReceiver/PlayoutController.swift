import LyreWire
import Synchronization

/// The current session's `Playout`, shared by the event loop (packets, anchors, timing) and the output
/// thread (`render`).
///
/// `@unchecked Sendable`: `playout` is only touched with `lock` held, and the lock is held only for
/// short, non-blocking work (decoding one block at most).
final class PlayoutController: @unchecked Sendable {
    private let lock = Mutex<Void>(())
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
        lock.withLock { _ in body(&playout) }
    }

    var statistics: PlayoutStatistics { lock.withLock { _ in playout.statistics } }
}
