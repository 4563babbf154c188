#if canImport(Glibc)
import Glibc
#endif

/// The thread of a bus connection's loop (``MPRISPlayer``, ``MPRISPlayerWatcher``). A thread of its own because
/// libdbus is a blocking C library driven by `poll` on its socket: the loop waits there, woken by the bus or by a
/// pipe, and never blocks an event loop or the cooperative pool.
enum LoopThread {
    static func start(_ body: @escaping @Sendable () -> Void) throws(MPRISError) -> pthread_t {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw MPRISError("cannot start the D-Bus thread: \(String(cString: strerror(result)))")
        }
        return thread
    }

    /// Waits for the thread, except when called on it (from a handler): then it is detached.
    static func join(_ thread: pthread_t) {
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }
}
