import Dispatch
import LyreWire
import Synchronization

/// The commands a sender accepts from its receiver, as `MPRemoteCommandCenter` on iOS: a command is enabled
/// when it has a handler and is not disabled. The receiver is told the enabled set whenever it changes,
/// and refuses the others itself (now-playing.md §4).
///
/// Handlers run one at a time, in the order the commands came, each in a task (never on the session's network
/// reader). A handler can be awaited (`AsyncHandler`): it may await the player's pause or the session's
/// requests, and no thread waits meanwhile. A blocking handler (`Handler`) runs on a thread of the center's
/// own, not on one of the few threads Swift's tasks share, so that it may wait on the session's blocking
/// forms.
///
/// `@unchecked Sendable`: all state is behind `lock`; handlers are called without it held.
public final class RemoteCommandCenter: @unchecked Sendable {
    public typealias Handler = @Sendable (RemoteCommandEvent) -> RemoteCommandStatus
    public typealias AsyncHandler = @Sendable (RemoteCommandEvent) async -> RemoteCommandStatus

    private let lock = Mutex<Void>(())
    /// Where blocking handlers run, one at a time (commands are handled one at a time anyway).
    private let blocking = DispatchQueue(label: "lyre-remote-commands")
    private enum Entry {
        case blocking(Handler)
        case awaited(AsyncHandler)
    }
    private var handlers: [RemoteCommand: Entry] = [:]
    private var disabled: Set<RemoteCommand> = []
    private var skipInterval: Double = 15
    private var lastPublished: EnabledCommands?
    /// Called with the new enabled set when it changes (the session sends it to the receiver).
    var onChange: (@Sendable (EnabledCommands) -> Void)?

    init() {}

    /// Adds (or replaces) the handler for `command`, which enables it unless it was disabled.
    public func addHandler(_ command: RemoteCommand, _ handler: @escaping Handler) {
        add(command, .blocking(handler))
    }

    /// Adds (or replaces) a handler that is awaited, which enables the command unless it was disabled.
    public func addHandler(_ command: RemoteCommand, _ handler: @escaping AsyncHandler) {
        add(command, .awaited(handler))
    }

    private func add(_ command: RemoteCommand, _ entry: Entry) {
        lock.withLock { _ in handlers[command] = entry }
        changed()
    }

    public func removeHandler(_ command: RemoteCommand) {
        _ = lock.withLock { _ in handlers.removeValue(forKey: command) }
        changed()
    }

    /// Enables or disables a command without removing its handler (`MPRemoteCommand.isEnabled`).
    public func setEnabled(_ command: RemoteCommand, _ enabled: Bool) {
        lock.withLock { _ in if enabled { disabled.remove(command) } else { disabled.insert(command) } }
        changed()
    }

    /// Sets several commands' enabled state at once, so the receiver hears one update.
    public func setEnabled(_ states: [RemoteCommand: Bool]) {
        lock.withLock { _ in
            for (command, enabled) in states { if enabled { disabled.remove(command) } else { disabled.insert(command) } }
        }
        changed()
    }

    public func isEnabled(_ command: RemoteCommand) -> Bool {
        lock.withLock { _ in handlers[command] != nil && !disabled.contains(command) }
    }

    /// The interval offered for `skipForward` / `skipBackward`, seconds (`preferredIntervals` on iOS).
    public var preferredSkipInterval: Double {
        get { lock.withLock { _ in skipInterval } }
        set {
            lock.withLock { _ in skipInterval = newValue }
            changed()
        }
    }

    public var enabledCommands: EnabledCommands {
        lock.withLock { _ in
            EnabledCommands(Set(handlers.keys).subtracting(disabled), skipInterval: skipInterval)
        }
    }

    /// Runs the command's handler; `.disabled` when it has none or is disabled.
    /// A blocking handler runs on the center's thread, inside `around` (what the caller's task holds, bound on
    /// that thread too).
    func handle(_ event: RemoteCommandEvent,
                around: @escaping @Sendable (() -> RemoteCommandStatus) -> RemoteCommandStatus = { $0() }) async -> RemoteCommandStatus
    {
        let entry: Entry? = lock.withLock { _ in disabled.contains(event.command) ? nil : handlers[event.command] }
        switch entry {
        case nil: return .disabled
        case .awaited(let handler)?: return await handler(event)
        case .blocking(let handler)?:
            return await withCheckedContinuation { answered in blocking.async { answered.resume(returning: around { handler(event) }) } }
        }
    }

    /// Tells the session when the enabled set really changed.
    private func changed() {
        let (current, notify): (EnabledCommands, (@Sendable (EnabledCommands) -> Void)?) = lock.withLock { _ in
            let current = EnabledCommands(Set(handlers.keys).subtracting(disabled), skipInterval: skipInterval)
            guard current != lastPublished, let onChange else { return (current, nil) }
            lastPublished = current
            return (current, onChange)
        }
        notify?(current)
    }

    /// Sends the current set even if unchanged (when the session starts).
    func publish() {
        let (current, notify) = lock.withLock { _ in
            let current = EnabledCommands(Set(handlers.keys).subtracting(disabled), skipInterval: skipInterval)
            lastPublished = current
            return (current, onChange)
        }
        notify?(current)
    }
}
