import Synchronization

/// A flag that is raised once and stays raised, shared between threads and tasks: `raise()` is true for the
/// first caller only, so that of several who race to finish one thing (a continuation resumed by an answer
/// or a deadline, a wait ended by a signal or a lost server) exactly one does.
public final class Latch: Sendable {
    private let raised = Mutex(false)

    public init() {}

    /// Raises the latch: true if this call raised it, false if it was raised before.
    @discardableResult
    public func raise() -> Bool {
        raised.withLock { raised in
            defer { raised = true }
            return !raised
        }
    }

    public var isRaised: Bool { raised.withLock { $0 } }
}
