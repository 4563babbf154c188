import CDBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An MPRIS v2 media player on D-Bus: what desktop media keys, shell widgets and `playerctl` see of the receiver.
///
/// It owns `org.mpris.MediaPlayer2.<name>` and exports `/org/mpris/MediaPlayer2` with the interfaces
/// `org.mpris.MediaPlayer2`, `org.mpris.MediaPlayer2.Player`, `org.freedesktop.DBus.Properties` and
/// `org.freedesktop.DBus.Introspectable` (libdbus answers `org.freedesktop.DBus.Peer`).
///
/// Threading and lifecycle: the player runs one thread of its own that makes every libdbus call on its
/// private connection: it answers `Get`/`GetAll`/`Introspect` from the last ``update(_:)`` at once, calls the handler
/// for commands, and sends what other threads queue (replies, signals), woken through a pipe. ``update(_:)``,
/// ``seeked(positionMicroseconds:)`` and the reply closures only take a lock and queue, so they are safe from any
/// thread and never block on the bus. ``close()`` (or `deinit`) stops the thread, releases the name and closes the
/// connection.
///
/// The handler decides what each command does, including whether it is allowed (for example answering `.failed` for
/// ``MPRISCommand/next`` while `canGoNext` is false); the player only checks arguments, and ignores `SetPosition` for
/// another track or outside the track, as the specification asks.
public final class MPRISPlayer: Sendable {
    private let service: PlayerService
    /// The loop thread until ``close()`` joins it.
    private let thread: Mutex<pthread_t?>

    /// libdbus's locks (`dbus_threads_init_default`), set up once per process.
    static let threadsInitialized: Bool = dbus_threads_init_default() != 0

    /// Connects to `bus` (a private connection: `dbus_bus_get_private`), claims `org.mpris.MediaPlayer2.<name>` (or,
    /// if another connection owns it, `org.mpris.MediaPlayer2.<name>.instance<pid>`, the MPRIS convention), exports
    /// `/org/mpris/MediaPlayer2`, and starts the loop thread.
    ///
    /// - Parameters:
    ///   - name: The end of the bus name: letters, digits, `_` and `-`, not starting with a digit. It may hold dots:
    ///     `playerctl` takes what follows the first dot as an instance name (`-p lyred` matches `lyred.kitchen`).
    ///   - identity: The `Identity` property: a human-readable name, e.g. `Lyre (Kitchen)`.
    ///   - handler: Called on the player's thread for each command a client sends. It must return quickly and call
    ///     `reply` exactly once, from any thread, possibly later: the call stays pending (other clients are served
    ///     meanwhile) until it does. Later calls of `reply` are ignored; dropping `reply` uncalled answers the client
    ///     with the error `org.mpris.MediaPlayer2.Lyre.NoAnswer`.
    ///   - onLost: Called once, on the player's thread, when the bus goes away (the bus daemon restarted or
    ///     stopped; not after ``close()``): the player is then finished, and a new one may be made.
    /// - Throws: ``MPRISError`` when the bus is unreachable, the name is invalid or taken twice over, or libdbus
    ///   fails.
    public init(
        bus: MPRISBus, name: String = "lyred", identity: String,
        handler: @escaping @Sendable (MPRISCommand, _ reply: @escaping @Sendable (MPRISCommandResult) -> Void) -> Void,
        onLost: (@Sendable () -> Void)? = nil
    ) throws(MPRISError) {
        guard Self.threadsInitialized else { throw MPRISError("libdbus could not set up its thread locks") }
        let wanted = MPRISName.busNamePrefix + name
        guard DBusValidation.isBusName(wanted) else {
            throw MPRISError("invalid MPRIS player name '\(name)': \(wanted) is not a valid D-Bus bus name")
        }
        let connection = try BusConnection(bus: bus)
        var busName = wanted
        if try !connection.requestName(wanted) {
            busName = "\(wanted).instance\(getpid())"
            guard try connection.requestName(busName) else {
                throw MPRISError("cannot claim \(wanted) or \(busName): other connections own both")
            }
        }
        let service = try PlayerService(connection: connection, busName: busName, identity: identity, handler: handler, onLost: onLost)
        let thread: pthread_t
        do {
            thread = try LoopThread.start { service.run() }
        } catch {
            service.abandon()
            throw error
        }
        self.service = service
        self.thread = Mutex(thread)
    }

    /// The bus name this player owns: `org.mpris.MediaPlayer2.<name>`, or with `.instance<pid>` appended.
    public var busName: String { service.busName }

    /// Replaces the state that `Get` and `GetAll` answer from, and emits
    /// `org.freedesktop.DBus.Properties.PropertiesChanged` for `org.mpris.MediaPlayer2.Player` with exactly the
    /// properties whose value changed (never `Position`: call ``seeked(positionMicroseconds:)`` after a jump).
    /// Thread-safe; it only takes a lock and queues the signal.
    public func update(_ state: MPRISState) {
        service.update(state)
    }

    /// Replaces the `Identity` property (the receiver was renamed) and emits `PropertiesChanged` for
    /// `org.mpris.MediaPlayer2`. Thread-safe; it only takes a lock and queues the signal.
    public func rename(identity: String) {
        service.rename(identity)
    }

    /// Emits `org.mpris.MediaPlayer2.Player.Seeked(x Position)`: the position jumped (seek, new track), or drifted
    /// from the extrapolated one. Thread-safe; it only queues the signal.
    public func seeked(positionMicroseconds: Int64) {
        service.seeked(positionMicroseconds)
    }

    /// Stops the loop thread, which sends what is queued, releases the bus name and closes the connection
    /// (`dbus_bus_release_name`, `dbus_connection_close`, `dbus_connection_unref`); waits for it, except when called
    /// from the handler on that thread itself. Idempotent; `deinit` calls it. Replies after this are dropped.
    public func close() {
        guard let thread = thread.withLock({ $0.take() }) else { return }
        service.stop()
        LoopThread.join(thread)
    }

    deinit { close() }
}
