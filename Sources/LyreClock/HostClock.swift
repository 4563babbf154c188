#if canImport(Glibc)
import Glibc
#endif

/// The host's monotonic clock (`CLOCK_MONOTONIC`) in nanoseconds: the sender clock of streaming.md §5, and
/// the receiver's local clock.
public enum HostClock {
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Sleeps until the clock reads `deadline` (`clock_nanosleep` with `TIMER_ABSTIME`). Blocks the thread:
    /// only for audio threads, never on an event loop or the cooperative pool.
    public static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}
