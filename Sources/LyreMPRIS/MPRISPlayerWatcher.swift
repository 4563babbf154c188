import CDBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Watches the other apps' MPRIS players on a bus and sends them commands: what `lyre sink` needs to show the
/// receiver what an app plays and to pass the receiver's controls on to it.
///
/// Threading, as ``MPRISPlayer``: one loop thread (``LoopThread``) makes every libdbus call on a private
/// connection; ``send(_:to:reply:)`` and ``close()`` only queue and wake it. `onChange` and `onRemoved` are called on
/// that thread: they must return quickly (hand the player on to a queue of your own).
public final class MPRISPlayerWatcher: Sendable {
    private let service: WatcherService
    private let thread: Mutex<pthread_t?>

    /// Connects to `bus`, asks for the signals players send, lists the players there, and starts the loop thread.
    /// `onLost` is called once, on the loop thread, when the bus goes away (its daemon restarted or stopped; not
    /// after ``close()``): the watcher is then finished, and a new one may be made (``BusReconnector``).
    public init(bus: MPRISBus, onChange: @escaping @Sendable (WatchedPlayer) -> Void,
                onRemoved: @escaping @Sendable (String) -> Void, onLost: (@Sendable () -> Void)? = nil) throws(MPRISError) {
        guard MPRISPlayer.threadsInitialized else { throw MPRISError("libdbus could not set up its thread locks") }
        let connection = try BusConnection(bus: bus)
        try connection.addMatch(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                + "arg0namespace='org.mpris.MediaPlayer2'")
        try connection.addMatch(
            "type='signal',interface='\(MPRISName.properties)',member='PropertiesChanged',path='\(MPRISName.objectPath)'")
        try connection.addMatch("type='signal',interface='\(MPRISName.player)',member='Seeked',path='\(MPRISName.objectPath)'")
        let service = try WatcherService(connection: connection, onChange: onChange, onRemoved: onRemoved, onLost: onLost)
        do {
            thread = Mutex(try LoopThread.start { service.run() })
        } catch {
            service.abandon()
            throw error
        }
        self.service = service
    }

    /// Sends `command` to the player `busName` (`Play`, `Seek`, `SetPosition`, …; a rate through
    /// `Properties.Set`); `reply` gets its answer, on the loop thread, or `.failed` when the watcher is closed
    /// first.
    public func send(_ command: MPRISCommand, to busName: String,
                     reply: @escaping @Sendable (MPRISCommandResult) -> Void) {
        service.enqueue(.command(command, busName, reply))
    }

    /// Stops the loop thread and closes the connection; idempotent.
    public func close() {
        guard let thread = thread.withLock({ $0.take() }) else { return }
        service.stop()
        LoopThread.join(thread)
    }

    deinit { close() }
}

/// The watcher's connection and loop.
///
/// `@unchecked Sendable`, as ``PlayerService``: `connection`, `tracker` and `pending` are touched only by `init`
/// (before the loop thread exists) and then by the loop thread; other threads only touch `shared` and wake it.
final class WatcherService: @unchecked Sendable {
    enum Request: Sendable {
        case command(MPRISCommand, String, @Sendable (MPRISCommandResult) -> Void)
    }

    /// What a sent call's reply is for.
    private enum Pending {
        case tracker(PlayerTracker.Call)
        case command(@Sendable (MPRISCommandResult) -> Void)
    }

    /// Calls waiting for their reply; a player that never answers cannot make this grow past the bound.
    static let maximumPending = 512

    private let shared = Mutex<(requests: [Request], running: Bool)>(([], true))
    private let watches: WatchSet
    private let onChange: @Sendable (WatchedPlayer) -> Void
    private let onRemoved: @Sendable (String) -> Void
    private let onLost: (@Sendable () -> Void)?
    private var connection: BusConnection?
    private var tracker = PlayerTracker()
    private var pending: [UInt32: Pending] = [:]
    private var pendingOrder: [UInt32] = []
    /// What the filter's messages asked for, carried out by the loop after each dispatch.
    private var deferred: [PlayerTracker.Action] = []

    init(connection: consuming BusConnection, onChange: @escaping @Sendable (WatchedPlayer) -> Void,
         onRemoved: @escaping @Sendable (String) -> Void, onLost: (@Sendable () -> Void)? = nil) throws(MPRISError) {
        self.onChange = onChange
        self.onRemoved = onRemoved
        self.onLost = onLost
        watches = try WatchSet()
        guard watches.install(on: connection) else { throw MPRISError("libdbus ran out of memory setting up watches") }
        // Every message comes through the filter: signals, and the replies to calls sent without a pending call.
        let data = Unmanaged.passRetained(self).toOpaque()
        guard
            dbus_connection_add_filter(
                connection.raw,
                { _, message, data in
                    guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
                    return Unmanaged<WatcherService>.fromOpaque(data).takeUnretainedValue().handle(BusMessage(retaining: message))
                }, data, { data in data.map { Unmanaged<WatcherService>.fromOpaque($0).release() } }) != 0
        else {
            Unmanaged<WatcherService>.fromOpaque(data).release()
            throw MPRISError("libdbus ran out of memory adding a message filter")
        }
        self.connection = consume connection
    }

    func abandon() { connection = nil }

    func enqueue(_ request: Request) {
        let queued = shared.withLock { shared in
            guard shared.running else { return false }
            shared.requests.append(request)
            return true
        }
        if queued {
            watches.wake()
        } else if case .command(_, _, let reply) = request {
            reply(.failed(errorName: DBusErrorName.failed, message: "the player watcher is closed"))
        }
    }

    func stop() {
        shared.withLock { $0.running = false }
        watches.wake()
    }

    // MARK: - Loop thread

    func run() {
        guard let connection = connection.take() else { return }
        perform(tracker.start(), on: connection)
        watches.run(
            connection,
            turn: { connection in
                let (requests, running) = shared.withLock { shared in
                    defer { shared.requests.removeAll() }
                    return (shared.requests, shared.running)
                }
                for request in requests { send(request, on: connection) }
                return running
            },
            busy: { connection in
                let actions = deferred
                deferred.removeAll()
                perform(actions, on: connection)
                return !actions.isEmpty || shared.withLock { !$0.requests.isEmpty || !$0.running }
            })
        // Still running: the loop ended because the bus went away, not because it was stopped.
        let lost = shared.withLock { shared in
            defer { shared.running = false }
            return shared.running
        }
        for case .command(let reply) in pending.values {
            reply(.failed(errorName: DBusErrorName.failed, message: "the player watcher closed"))
        }
        pending.removeAll()
        dbus_connection_flush(connection.raw)
        if lost { onLost?() }
    }

    private func send(_ request: Request, on connection: borrowing BusConnection) {
        switch request {
        case .command(let command, let busName, let reply):
            guard let message = Self.message(for: command, to: busName) else {
                reply(.failed(errorName: DBusErrorName.invalidArgs, message: "cannot address \(busName)"))
                return
            }
            call(message, for: .command(reply), on: connection)
        }
    }

    private func call(_ message: BusMessage, for purpose: Pending, on connection: borrowing BusConnection) {
        guard let serial = connection.send(message) else {
            if case .command(let reply) = purpose { reply(.failed(errorName: DBusErrorName.failed, message: "out of memory")) }
            return
        }
        pending[serial] = purpose
        pendingOrder.append(serial)
        if pendingOrder.count > Self.maximumPending {
            let dropped = pendingOrder.removeFirst()
            if case .command(let reply)? = pending.removeValue(forKey: dropped) {
                reply(.failed(errorName: DBusErrorName.failed, message: "the player did not answer"))
            }
        }
    }

    /// The method call that carries `command` to the player.
    static func message(for command: MPRISCommand, to busName: String) -> BusMessage? {
        func player(_ member: String, _ arguments: [DBusValue] = []) -> BusMessage? {
            BusMessage.methodCall(destination: busName, path: MPRISName.objectPath, interface: MPRISName.player,
                                  member: member, arguments: arguments)
        }
        switch command {
        case .play: return player("Play")
        case .pause: return player("Pause")
        case .playPause: return player("PlayPause")
        case .stop: return player("Stop")
        case .next: return player("Next")
        case .previous: return player("Previous")
        case .seek(let offset): return player("Seek", [.int64(offset)])
        case .setPosition(let track, let position):
            return player("SetPosition", [.objectPath(track), .int64(position)])
        case .setRate(let rate):
            return BusMessage.methodCall(
                destination: busName, path: MPRISName.objectPath, interface: MPRISName.properties, member: "Set",
                arguments: [.string(MPRISName.player), .string("Rate"), .variant(.double(rate))])
        case .setVolume(let volume):
            return BusMessage.methodCall(
                destination: busName, path: MPRISName.objectPath, interface: MPRISName.properties, member: "Set",
                arguments: [.string(MPRISName.player), .string("Volume"), .variant(.double(volume))])
        }
    }

    private func message(for call: PlayerTracker.Call) -> BusMessage? {
        func bus(_ member: String, _ arguments: [DBusValue]) -> BusMessage? {
            BusMessage.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                  interface: "org.freedesktop.DBus", member: member, arguments: arguments)
        }
        func properties(_ name: String, _ member: String, _ arguments: [DBusValue]) -> BusMessage? {
            BusMessage.methodCall(destination: name, path: MPRISName.objectPath, interface: MPRISName.properties,
                                  member: member, arguments: arguments)
        }
        switch call {
        case .listNames: return bus("ListNames", [])
        case .owner(let name): return bus("GetNameOwner", [.string(name)])
        case .processID(let name): return bus("GetConnectionUnixProcessID", [.string(name)])
        case .allProperties(let name, let interface): return properties(name, "GetAll", [.string(interface)])
        case .position(let name): return properties(name, "Get", [.string(MPRISName.player), .string("Position")])
        }
    }

    private func perform(_ actions: [PlayerTracker.Action], on connection: borrowing BusConnection) {
        for action in actions {
            switch action {
            case .call(let call):
                if let message = message(for: call) { self.call(message, for: .tracker(call), on: connection) }
            case .changed(let player): onChange(player)
            case .removed(let name): onRemoved(name)
            }
        }
    }

    /// The filter: replies to this connection's calls, and the signals it asked for. Bad input from a player is
    /// ignored.
    private func handle(_ message: BusMessage) -> DBusHandlerResult {
        let now = MPRISState.monotonicNow
        var reader = DBusMessageReader(message)
        switch message.type {
        case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR:
            guard let purpose = pending.removeValue(forKey: message.replySerial) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            pendingOrder.removeAll { $0 == message.replySerial }
            let failed = message.type == DBUS_MESSAGE_TYPE_ERROR
            switch purpose {
            case .command(let reply):
                let error = failed ? reader.readString() ?? "" : ""
                reply(failed ? .failed(errorName: message.errorName ?? DBusErrorName.failed, message: error) : .success)
            case .tracker(let call):
                guard !failed else { break }
                deferred += answer(call, reader.readValue(), now: now)
            }
        case DBUS_MESSAGE_TYPE_SIGNAL:
            let sender = message.sender ?? ""
            switch (message.interface, message.member, message.signature) {
            case ("org.freedesktop.DBus", "NameOwnerChanged", "sss"):
                let (name, old, new) = (reader.readString()!, reader.readString()!, reader.readString()!)
                deferred += tracker.ownerChanged(name: name, old: old, new: new)
            case (MPRISName.properties, "PropertiesChanged", "sa{sv}as"):
                let interface = reader.readString()!
                guard case .dictionary(let changed)? = reader.readValue() else { break }
                guard case .stringArray(let invalidated)? = reader.readValue() else { break }
                deferred += tracker.propertiesChanged(sender: sender, interface: interface, changed, invalidated: invalidated, now: now)
            case (MPRISName.player, "Seeked", "x"):
                deferred += tracker.seeked(sender: sender, positionMicroseconds: reader.readInt64()!, now: now)
            default:
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        return DBUS_HANDLER_RESULT_HANDLED
    }

    /// What the tracker makes of a call's answer.
    private func answer(_ call: PlayerTracker.Call, _ value: DBusValue?, now: UInt64) -> [PlayerTracker.Action] {
        switch (call, value) {
        case (.listNames, .stringArray(let names)?): return tracker.listed(names)
        case (.owner(let name), .string(let unique)?): return tracker.owner(of: name, is: unique)
        case (.processID(let name), .int64(let pid)?) where pid > 0 && pid <= Int64(UInt32.max):
            return tracker.processID(of: name, is: UInt32(pid))
        case (.allProperties(let name, let interface), .dictionary(let entries)?):
            return tracker.properties(of: name, interface: interface, entries, now: now)
        case (.position(let name), .variant(.int64(let position))?):
            return tracker.position(of: name, is: position, now: now)
        default: return []
        }
    }
}
