import CDBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One `DBusWatch` (owned by libdbus) as last reported by its add or toggle callback.
///
/// `@unchecked Sendable`: the pointer is only dereferenced by libdbus, on the loop thread, and only while the watch
/// is still in the set (see ``WatchSet/pollAndHandle()``).
struct Watch: @unchecked Sendable {
    let raw: OpaquePointer
    let fd: Int32
    let flags: UInt32
    var enabled: Bool
}

/// The connection's watches (`dbus_connection_set_watch_functions`) for the loop thread's `poll`, and the pipe that
/// wakes that `poll`.
///
/// libdbus adds, removes and toggles watches with its connection lock held, on whichever thread touches the
/// connection: the loop thread, except that dropping the last reference to a received message elsewhere may toggle
/// the read watch. So the list sits behind a `Mutex`, every change bumps `generation` and wakes the poll, and the
/// loop thread never holds the `Mutex` while it calls into libdbus.
final class WatchSet: Sendable {
    private let state = Mutex<(watches: [Watch], generation: UInt64)>(([], 0))
    let wakeup: WakeupPipe

    init() throws(MPRISError) { wakeup = try WakeupPipe() }

    /// Makes libdbus report the connection's watches here; the connection keeps a reference to this set until it is
    /// finalized. `false` when libdbus runs out of memory.
    func install(on connection: borrowing BusConnection) -> Bool {
        let data = Unmanaged.passRetained(self).toOpaque()
        let installed =
            dbus_connection_set_watch_functions(
                connection.raw,
                { watch, data in
                    guard let watch, let data else { return 0 }
                    Unmanaged<WatchSet>.fromOpaque(data).takeUnretainedValue().added(watch)
                    return 1
                },
                { watch, data in
                    guard let watch, let data else { return }
                    Unmanaged<WatchSet>.fromOpaque(data).takeUnretainedValue().removed(watch)
                },
                { watch, data in
                    guard let watch, let data else { return }
                    Unmanaged<WatchSet>.fromOpaque(data).takeUnretainedValue().toggled(watch)
                },
                data,
                { data in data.map { Unmanaged<WatchSet>.fromOpaque($0).release() } }) != 0
        // On failure libdbus keeps nothing, so it will not call the free function either.
        if !installed { Unmanaged<WatchSet>.fromOpaque(data).release() }
        return installed
    }

    /// Wakes the loop thread out of `poll`.
    func wake() { wakeup.wake() }

    /// The loop of a bus thread (``PlayerService``, ``WatcherService``): `turn` sends what other threads queued
    /// and answers whether to go on; then the connection's messages are dispatched, and `busy` answers whether
    /// work came meanwhile, so that the loop goes round again instead of sleeping in `poll`. Returns when `turn`
    /// says stop or the bus goes away.
    func run(_ connection: borrowing BusConnection, turn: (borrowing BusConnection) -> Bool,
             busy: (borrowing BusConnection) -> Bool) {
        while turn(connection) {
            while dbus_connection_dispatch(connection.raw) == DBUS_DISPATCH_DATA_REMAINS {}
            guard connection.isConnected else { return }
            if busy(connection) { continue }
            pollAndHandle()
        }
    }

    private func added(_ watch: OpaquePointer) {
        let entry = Watch(
            raw: watch, fd: dbus_watch_get_unix_fd(watch), flags: dbus_watch_get_flags(watch),
            enabled: dbus_watch_get_enabled(watch) != 0)
        changed { $0.append(entry) }
    }

    private func removed(_ watch: OpaquePointer) {
        changed { $0.removeAll { $0.raw == watch } }
    }

    private func toggled(_ watch: OpaquePointer) {
        let enabled = dbus_watch_get_enabled(watch) != 0
        changed { watches in
            for index in watches.indices where watches[index].raw == watch { watches[index].enabled = enabled }
        }
    }

    private func changed(_ body: (inout [Watch]) -> Void) {
        state.withLock { state in
            body(&state.watches)
            state.generation &+= 1
        }
        wake()
    }

    /// Waits until an enabled watch's descriptor is ready or something wakes the loop, then hands each ready watch to
    /// libdbus (`dbus_watch_handle`), which reads or writes.
    ///
    /// Stops handing them out as soon as the set changes: a removed watch must never be handled (libdbus aborts on
    /// that), and `poll` is level-triggered, so the others are seen on the next call.
    func pollAndHandle() {
        let (watches, generation) = state.withLock { ($0.watches.filter(\.enabled), $0.generation) }
        var descriptors = [pollfd(fd: wakeup.readEnd, events: Int16(POLLIN), revents: 0)]
        for watch in watches {
            var events: Int16 = 0
            if watch.flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
            if watch.flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
            descriptors.append(pollfd(fd: watch.fd, events: events, revents: 0))
        }
        guard poll(&descriptors, nfds_t(descriptors.count), -1) > 0 else { return }  // EINTR: the caller loops
        if descriptors[0].revents != 0 { wakeup.drain() }
        for (watch, descriptor) in zip(watches, descriptors.dropFirst()) where descriptor.revents != 0 {
            guard state.withLock({ $0.generation }) == generation else { return }
            _ = dbus_watch_handle(watch.raw, Self.watchFlags(descriptor.revents))
        }
    }

    /// `poll` events as `DBusWatchFlags`; a closed descriptor (`POLLNVAL`) counts as a hang-up.
    private static func watchFlags(_ events: Int16) -> UInt32 {
        var flags: UInt32 = 0
        if events & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
        if events & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
        if events & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
        if events & Int16(POLLHUP | POLLNVAL) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
        return flags
    }
}
