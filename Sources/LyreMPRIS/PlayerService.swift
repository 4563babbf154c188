import CDBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The command handler of an ``MPRISPlayer``.
typealias MPRISCommandHandler =
    @Sendable (MPRISCommand, _ reply: @escaping @Sendable (MPRISCommandResult) -> Void) -> Void

/// The player object on the bus: owns the connection, and runs the loop thread that makes every libdbus call on it.
///
/// Threading, and why `@unchecked Sendable` is safe:
/// - `connection` is only touched by `init` (before the loop thread exists: `pthread_create` orders the two) and then
///   by the loop thread, which takes it in ``run()``, serves method calls, and tears it down at the end. So libdbus
///   sees a single-threaded connection; the message functions it calls (``handle(_:)``) run on the loop thread.
/// - Other threads (``update(_:)``, ``seeked(_:)``, command replies, ``stop()``) only touch `shared`, a `Mutex`, and
///   then write to the wake-up pipe; the loop thread sends what they queued.
/// - `watches`, `busName` and `handler` are immutable and `Sendable`; the identity, which a rename changes, is in `shared`.
final class PlayerService: @unchecked Sendable {
    /// Something another thread asks the loop thread to send.
    enum Outgoing: Sendable {
        case reply(to: BusMessage, ReplyBody)
        case signal(interface: String, member: String, arguments: [DBusValue])
    }

    /// What all threads share, behind `shared`.
    struct Shared: Sendable {
        var state = MPRISState()
        /// The `Identity` property.
        var identity: String
        /// The player properties as last announced (no `Position`).
        var announced = MPRISProperties.player(MPRISState())
        var outbox: [Outgoing] = []
        /// Cleared by ``stop()`` or when the bus goes away; after that nothing more is queued.
        var running = true
    }

    let busName: String
    let handler: MPRISCommandHandler
    /// Called once, on the loop thread, when the bus went away (not after ``stop()``).
    let onLost: (@Sendable () -> Void)?
    let watches: WatchSet
    let shared: Mutex<Shared>
    private var connection: BusConnection?

    /// Takes over a connection that owns `busName`, registers `/org/mpris/MediaPlayer2` on it and hooks its watches
    /// up to the loop. Call ``run()`` on a thread of its own next.
    init(connection: consuming BusConnection, busName: String, identity: String, handler: @escaping MPRISCommandHandler,
         onLost: (@Sendable () -> Void)? = nil) throws(MPRISError)
    {
        self.busName = busName
        self.onLost = onLost
        shared = Mutex(Shared(identity: identity))
        self.handler = handler
        watches = try WatchSet()
        guard watches.install(on: connection) else { throw MPRISError("libdbus ran out of memory setting up watches") }
        var vtable = DBusObjectPathVTable()
        vtable.unregister_function = { _, data in data.map { Unmanaged<PlayerService>.fromOpaque($0).release() } }
        vtable.message_function = { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            return Unmanaged<PlayerService>.fromOpaque(data).takeUnretainedValue().handle(
                BusMessage(retaining: message))
        }
        // The connection keeps this object alive until it unregisters the path (when it is finalized).
        let data = Unmanaged.passRetained(self).toOpaque()
        var error = DBusErrorBox()
        guard
            dbus_connection_try_register_object_path(connection.raw, MPRISName.objectPath, &vtable, data, &error.raw)
                != 0
        else {
            Unmanaged<PlayerService>.fromOpaque(data).release()
            throw MPRISError("cannot export \(MPRISName.objectPath): \(error.message)")
        }
        self.connection = consume connection
    }

    /// Drops the connection when ``run()`` never will (the loop thread could not be started).
    func abandon() { connection = nil }

    // MARK: - Other threads

    /// Queues `item` for the loop thread; `false` (and `item` dropped) once the service has stopped.
    @discardableResult
    func enqueue(_ item: Outgoing) -> Bool {
        let queued = shared.withLock { shared in
            guard shared.running else { return false }
            shared.outbox.append(item)
            return true
        }
        if queued { watches.wake() }
        return queued
    }

    func update(_ state: MPRISState) {
        let properties = MPRISProperties.player(state)
        let queued = shared.withLock { shared in
            shared.state = state
            let changed = MPRISProperties.changes(from: shared.announced, to: properties)
            shared.announced = properties
            guard shared.running, !changed.isEmpty else { return false }
            shared.outbox.append(
                .signal(
                    interface: MPRISName.properties, member: "PropertiesChanged",
                    arguments: [.string(MPRISName.player), .dictionary(changed), .stringArray([])]))
            return true
        }
        if queued { watches.wake() }
    }

    /// A new `Identity` (the receiver was renamed): answered from now on, and announced with `PropertiesChanged`.
    func rename(_ identity: String) {
        let queued = shared.withLock { shared in
            guard shared.running, shared.identity != identity else { return false }
            shared.identity = identity
            shared.outbox.append(
                .signal(
                    interface: MPRISName.properties, member: "PropertiesChanged",
                    arguments: [.string(MPRISName.root), .dictionary([DBusDictEntry("Identity", .string(identity))]), .stringArray([])]))
            return true
        }
        if queued { watches.wake() }
    }

    func seeked(_ position: Int64) {
        enqueue(.signal(interface: MPRISName.player, member: "Seeked", arguments: [.int64(position)]))
    }

    /// Makes ``run()`` send what is queued, release the name, close the connection and return.
    func stop() {
        shared.withLock { $0.running = false }
        watches.wake()
    }

    var state: MPRISState { shared.withLock { $0.state } }

    // MARK: - Loop thread

    /// The loop: send what other threads queued, dispatch received messages, wait in `poll`; until ``stop()`` or
    /// until the bus goes away. Then tears the connection down.
    func run() {
        guard let connection = connection.take() else { return }
        watches.run(
            connection,
            turn: { connection in
                let (outbox, running) = shared.withLock { shared in
                    defer { shared.outbox.removeAll() }
                    return (shared.outbox, shared.running)
                }
                for item in outbox { send(item, on: connection) }
                return running
            },
            // A handler may have answered (or close() been called) during dispatch: send that before sleeping.
            busy: { _ in shared.withLock { !$0.outbox.isEmpty || !$0.running } })
        let (rest, lost) = shared.withLock { shared in
            defer {
                shared.running = false
                shared.outbox.removeAll()
            }
            return (shared.outbox, shared.running)
        }
        for item in rest { send(item, on: connection) }
        connection.close(releasing: busName)
        if lost { onLost?() }
    }

    private func send(_ item: Outgoing, on connection: borrowing BusConnection) {
        switch item {
        case .reply(let call, let body):
            guard !call.expectsNoReply, let reply = call.reply(body) else { return }
            connection.send(reply)
        case .signal(let interface, let member, let arguments):
            guard
                let signal = BusMessage.signal(
                    path: MPRISName.objectPath, interface: interface, member: member, arguments: arguments)
            else { return }
            connection.send(signal)
        }
    }

    /// The object's message function: answers at once, or hands a command to the handler, whose reply is queued.
    private func handle(_ message: BusMessage) -> DBusHandlerResult {
        guard message.type == DBUS_MESSAGE_TYPE_METHOD_CALL else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
        let (identity, state) = shared.withLock { ($0.identity, $0.state) }
        let call = MethodCall(message: message, identity: identity, state: state, now: MPRISState.monotonicNow)
        switch call.answer() {
        case .reply(let body):
            // Queued even while stopping: the loop sends it before it next sleeps, or in its teardown.
            shared.withLock { $0.outbox.append(.reply(to: message, body)) }
        case .command(let command):
            let pending = PendingReply(service: self, call: message)
            handler(command) { result in pending.answer(result) }
        }
        return DBUS_HANDLER_RESULT_HANDLED
    }
}

/// The reply closure handed to the command handler: answers the call once; later answers are ignored. A reply
/// dropped without an answer answers `org.mpris.MediaPlayer2.Lyre.NoAnswer`, so the client does not wait for its
/// timeout.
final class PendingReply: Sendable {
    private let service: PlayerService
    private let call: Mutex<BusMessage?>

    init(service: PlayerService, call: BusMessage) {
        self.service = service
        self.call = Mutex(call)
    }

    func answer(_ result: MPRISCommandResult) {
        guard let call = call.withLock({ $0.take() }) else { return }
        switch result {
        case .success:
            service.enqueue(.reply(to: call, .empty))
        case .failed(let name, let message):
            service.enqueue(.reply(to: call, .error(name: name, message: message)))
        }
    }

    deinit {
        guard let call = call.withLock({ $0.take() }) else { return }
        service.enqueue(
            .reply(to: call, .error(name: DBusErrorName.noAnswer, message: "the player dropped the command unanswered"))
        )
    }
}
