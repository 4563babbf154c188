import LyreWire
import NIOCore

/// A session's beat, the same at both ends (streaming.md §4.2, §9.1): once a second, a peer silent for longer
/// than `SessionSilence.limit` is gone (unplugged, powered off, its network down; its connection would not
/// notice for minutes), and otherwise this end sends its reports.
public enum SessionPulse {
    /// How often it beats.
    public static let period = TimeAmount.seconds(1)

    /// Beats on `loop` every `period`, the first after `initialDelay`, until the task is cancelled or the peer is
    /// gone. `silence` is how long nothing has come from the peer (nil: it is not watched); `gone` runs once, when
    /// that is over the limit, and the beat stops; `report` runs on each other beat.
    public static func start(
        on loop: any EventLoop, initialDelay: TimeAmount = period, silence: @escaping @Sendable () -> UInt64?,
        gone: @escaping @Sendable () -> Void, report: @escaping @Sendable () -> Void
    ) -> RepeatedTask {
        loop.scheduleRepeatedTask(initialDelay: initialDelay, delay: period) { task in
            if let silence = silence(), SessionSilence.isOver(silence) {
                task.cancel()
                gone()
            } else {
                report()
            }
        }
    }
}
