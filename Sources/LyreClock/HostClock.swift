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

/// A wake-up call between threads: `signal()` from anywhere, `wait(until:)` on the thread that waits for
/// something to happen, which returns at the signal or at the deadline, whichever comes first. Signals
/// before the wait are not lost (the next wait returns at once), and several coalesce into one.
///
/// Several threads can wait for the same event with `wait(after:)`: each reads `signals` before it checks
/// what it waits for, and every signal from then on wakes all of them.
public final class Wakeup: @unchecked Sendable {
    // @unchecked: `signalled` is guarded by `mutex`. Both pthread objects live at fixed addresses. The one lock
    // that is not a `Synchronization.Mutex`: a wait with a CLOCK_MONOTONIC deadline needs a condition variable,
    // and a condition variable needs its pthread mutex.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var signalled = false
    private var count: UInt64 = 0

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)  // deadlines are HostClock's
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func signal() {
        pthread_mutex_lock(mutex)
        signalled = true
        count &+= 1
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits for a signal until `deadline` (HostClock nanoseconds); true when signalled.
    @discardableResult
    public func wait(until deadline: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !signalled {
            if pthread_cond_timedwait(condition, mutex, &ts) == ETIMEDOUT { break }
        }
        defer { signalled = false }
        return signalled
    }

    /// Waits for a signal, however long it takes (an idle thread that nothing else wakes).
    public func wait() {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !signalled { pthread_cond_wait(condition, mutex) }
        signalled = false
    }

    /// How many signals there have been: read before checking what is waited for, for `wait(after:)`.
    public var signals: UInt64 {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return count
    }

    /// Waits until there has been a signal since `signals` read `seen`: at once if one came in between. Any
    /// number of threads can wait so at once; each signal wakes them all.
    public func wait(after seen: UInt64) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count == seen { pthread_cond_wait(condition, mutex) }
    }
}
