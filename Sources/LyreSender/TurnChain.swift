import NIOCore
import Synchronization

/// Changes that run one at a time, in the order they were asked for, whether their callers wait on a thread
/// or await: each change starts once the one before it has completed. `StreamSession` runs its control
/// changes (start, pause, joins) in one; `QueuePlayer` runs what changes what plays (pause, resume, a jump)
/// in another.
///
/// A change's turn is a promise on `loop`; a change asked for while none runs or waits does not wait at all,
/// so a change refused at once never waits, even on an event loop. Not reentrant: a change that asks for a
/// turn on its own chain waits for itself.
final class TurnChain: Sendable {
    private let loop: any EventLoop
    /// The end of the last change asked for: the next one starts once it has completed.
    private let tail = Mutex<EventLoopFuture<Void>?>(nil)

    init(loop: any EventLoop) { self.loop = loop }

    /// Runs `change` in its turn. Blocks until then: not on an event loop while a change runs.
    func run<T>(_ change: () throws -> T) rethrows -> T {
        let (previous, done) = turn()
        defer { end(done) }
        do { try previous?.wait() } catch { Self.broken(error) }
        return try change()
    }

    /// `run`, awaited: no thread waits for the turn.
    func run<T>(_ change: () async throws -> T) async rethrows -> T {
        let (previous, done) = turn()
        defer { end(done) }
        do { try await previous?.get() } catch { Self.broken(error) }
        return try await change()
    }

    /// Asks for a turn now and runs `change` in it in a task of its own, without waiting: changes asked for
    /// one after another (as an event loop reads requests) run in that order.
    func enqueue(_ change: @escaping @Sendable () async -> Void) {
        let (previous, done) = turn()
        Task {
            do { try await previous?.get() } catch { Self.broken(error) }
            await change()
            end(done)
        }
    }

    /// Returns once every change asked for before it has completed. Blocks: not on an event loop.
    func drain() { run {} }

    /// `drain()`, awaited.
    func drain() async { await run { () async in } }

    /// A turn always ends in success (`end`): one that failed is a broken chain.
    private static func broken(_ error: any Error) -> Never { preconditionFailure("a turn of the chain failed: \(error)") }

    /// The change before this one (nil when none is running or waiting), and the promise that ends this one.
    private func turn() -> (previous: EventLoopFuture<Void>?, done: EventLoopPromise<Void>) {
        let done = loop.makePromise(of: Void.self)
        let previous = tail.withLock { tail in
            defer { tail = done.futureResult }
            return tail
        }
        return (previous, done)
    }

    /// Ends a turn: the next change asked for runs. When none was asked for, the chain is left empty.
    private func end(_ done: EventLoopPromise<Void>) {
        tail.withLock { tail in if tail === done.futureResult { tail = nil } }
        done.succeed()
    }
}
