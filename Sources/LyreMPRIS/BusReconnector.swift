import Dispatch
import Synchronization

/// Keeps something on a D-Bus bus (an MPRIS player, a player watcher) across its daemon's restarts: `make`
/// puts it on the bus at once, and when it says it is lost (the `lost` it was given), it is closed and made
/// again once a second until the bus answers. A retry timer, because nothing says when a bus daemon is back
/// but the bus itself. lyred's MPRIS player and `lyre sink`'s watcher share it (issue 27).
public final class BusReconnector<Value: Sendable>: Sendable {
    /// What is on the bus now, and whether `shutdown` was called.
    private let state = Mutex<(current: Value?, closed: Bool)>((nil, false))
    private let queue: DispatchQueue
    private let make: @Sendable (_ lost: @escaping @Sendable () -> Void) throws(MPRISError) -> Value
    private let close: @Sendable (Value) -> Void
    private let onLost: @Sendable () -> Void
    private let onBack: @Sendable (Value) -> Void

    /// Makes the value at once; throws what `make` throws then. `onLost` and `onBack` are told each time it
    /// goes and comes back, on the reconnector's queue.
    public init(label: String, make: @escaping @Sendable (_ lost: @escaping @Sendable () -> Void) throws(MPRISError) -> Value,
                close: @escaping @Sendable (Value) -> Void, onLost: @escaping @Sendable () -> Void = {},
                onBack: @escaping @Sendable (Value) -> Void = { _ in }) throws(MPRISError) {
        queue = DispatchQueue(label: label)
        self.make = make
        self.close = close
        self.onLost = onLost
        self.onBack = onBack
        try connect()
    }

    /// What is on the bus now; nil while the bus is away.
    public var value: Value? { state.withLock { $0.current } }

    /// Closes it and stops trying; idempotent.
    public func shutdown() {
        let value = state.withLock { state in
            state.closed = true
            return state.current.take()
        }
        if let value { close(value) }
    }

    private func connect() throws(MPRISError) {
        let made = try make { [weak self] in self?.lost() }
        let kept = state.withLock { state in
            guard !state.closed else { return false }
            state.current = made
            return true
        }
        if !kept { close(made) }
    }

    /// Called by the value (on its own thread) when the bus went away: closed and made again off that thread.
    private func lost() {
        queue.async { [self] in
            if let value = state.withLock({ $0.current.take() }) { close(value) }
            onLost()
            attempt()
        }
    }

    private func attempt() {
        guard !state.withLock({ $0.closed }) else { return }
        do {
            try connect()
            if let value { onBack(value) }
        } catch {
            queue.asyncAfter(deadline: .now() + 1) { [weak self] in self?.attempt() }
        }
    }
}
