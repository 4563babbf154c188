import CSocketShim

#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own (POSIX threads), for the work that may not wait behind an event loop or the cooperative
/// pool: the audio device, the timing exchange, and a blocking C library's loop. Each caller says at its call
/// why it needs one. Named, so that `top -H` and a debugger show whose it is.
public enum DedicatedThread {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// Starts `body` on a new thread named `name` (Linux keeps 15 bytes of it); join it with ``join(_:)``.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) throws(Failure) -> pthread_t {
        final class Box: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        // Linux keeps 15 bytes of a name: cut at a character, since a cut inside one would make it unusable.
        var kept = ""
        for character in name where kept.utf8.count + character.utf8.count <= 15 { kept.append(character) }
        let context = Unmanaged.passRetained(Box(kept, body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                _ = lyre_thread_set_name(box.name)
                box.body()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw Failure(description: "cannot start the \(name) thread: \(String(cString: strerror(result)))")
        }
        return thread
    }

    /// Starts `body` on a new thread that nobody joins: it ends on its own, and its caller learns of that
    /// from the thread itself.
    public static func detach(_ name: String, _ body: @escaping @Sendable () -> Void) throws(Failure) {
        pthread_detach(try start(name, body))
    }

    /// Waits for the thread, except when called on it (from its own body): then it is detached.
    public static func join(_ thread: pthread_t) {
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }
}
