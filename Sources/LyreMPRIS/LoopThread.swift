#if canImport(Glibc)
import Glibc
#endif
import LyreClock

/// The thread of a bus connection's loop (``MPRISPlayer``, ``MPRISPlayerWatcher``). A thread of its own because
/// libdbus is a blocking C library driven by `poll` on its socket: the loop waits there, woken by the bus or by a
/// pipe, and never blocks an event loop or the cooperative pool.
enum LoopThread {
    static func start(_ body: @escaping @Sendable () -> Void) throws(MPRISError) -> pthread_t {
        do {
            return try DedicatedThread.start("lyre-dbus", body)
        } catch {
            throw MPRISError(error.description)
        }
    }

    static func join(_ thread: pthread_t) { DedicatedThread.join(thread) }
}
