import Dispatch
import Logging
import LyreDiscovery
import LyreSender
import LyreWire
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Rooms of a playback that went away by themselves come back by themselves (issue 27): a room whose
/// receiver was lost (rebooted, lyred restarted, a link down past the limit) is tried again at its known
/// address once a second, and at once at a new address when mDNS sees its receiver there (`seen`); it
/// rejoins the playback in sync as soon as it answers as the same receiver (`StreamSession.addRoute`: its id
/// and, when paired, its key are checked). A room the user removed never comes back on its own; removing or
/// adding a room that is returning ends the wait.
///
/// `@unchecked Sendable`: the state is behind `lock`; attempts run one at a time on `queue`.
final class RoomReturns: @unchecked Sendable {
    private let session: StreamSession
    private let lock = Mutex<Void>(())
    /// Lost rooms waiting to come back, and the one being tried.
    private var waits = ReturnWaitList()
    /// Rooms that came back, until their `joined` change is reported.
    private var returned: Set<String> = []
    /// Rooms whose failed try was logged at `notice`: the next ones, once a second, go at `debug`.
    private var failureLogged: Set<String> = []
    /// Attempts are blocking connects (`addRoute`), one at a time, off the session's threads.
    private let queue = DispatchQueue(label: "lyre-room-returns")
    private var timer: DispatchSourceTimer?
    /// How to browse mDNS for a waiting room's receiver at a new address; nil: its known address only.
    private let discovery: (mode: MDNSMode, interfaces: [String])?
    /// The browse, from the first room with an id lost until the playback ends.
    private var browser: DeviceBrowser?
    private var browsing: Task<Void, Never>?
    /// A browse is made or being made (claimed under `lock`, made outside it).
    private var watching = false
    /// The playback ended: nothing more is browsed.
    private var closed = false

    /// Called when the last room waited for is forgotten while no room plays: the playback has nowhere to go.
    private let onNothingLeft: @Sendable () -> Void

    init(session: StreamSession, discovery: (mode: MDNSMode, interfaces: [String])? = nil,
         onNothingLeft: @escaping @Sendable () -> Void = {}) {
        self.session = session
        self.discovery = discovery
        self.onNothingLeft = onNothingLeft
    }

    /// How long between attempts. One attempt may take longer (its connect's own timeout): the turns missed
    /// meanwhile are merged into one, which runs as soon as it ends (the timer's queue runs one at a time).
    static let retrySeconds = 1.0

    /// `route` was lost: wait for it.
    func lost(_ route: OutputRoute) {
        lock.withLock { _ in
            guard waits.lost(route) else { return }
            failureLogged.remove(ReturnWaitList.key(route))  // a new loss: its first failed try is told again
            guard timer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + Self.retrySeconds, repeating: Self.retrySeconds)
            timer.setEventHandler { [weak self] in self?.attempt() }
            timer.resume()
            self.timer = timer
        }
        watch(for: route)
    }

    /// Browses mDNS, once, when `route` has an id to look for: each sighting of a receiver goes to `seen`.
    /// The browse is claimed under `lock` but made outside it: connecting to avahi can take a while, and the
    /// session's room changes (`cameBack`, `returning`) take `lock` meanwhile.
    private func watch(for route: OutputRoute) {
        guard route.id != nil, let discovery else { return }
        let claimed = lock.withLock { _ in
            guard !watching, !closed else { return false }
            watching = true
            return true
        }
        guard claimed else { return }
        let browser: DeviceBrowser
        let changes: RouteChanges
        do {
            browser = try DeviceBrowser(mode: discovery.mode, interfaces: discovery.interfaces)
            changes = try browser.routeChanges()
        } catch {
            // Tried at its known address still; the next room lost tries to browse again.
            lock.withLock { _ in watching = false }
            Logger(label: "lyre.play").notice("cannot watch mDNS for returning rooms: \(error)")
            return
        }
        let browsing = Task { [weak self] in
            for await change in changes where change.reason != .deviceUnavailable {
                guard let address = change.device.streamAddress else { continue }
                self?.seen(id: change.device.id.rawValue, host: address, port: change.device.port)
            }
        }
        let kept = lock.withLock { _ in
            guard !closed else { return false }
            self.browser = browser
            self.browsing = browsing
            return true
        }
        // The playback ended while the browse was made.
        if !kept {
            browsing.cancel()
            browser.close()
        }
    }

    /// The rooms waiting to come back.
    var returning: [OutputRoute] { lock.withLock { _ in waits.waiting } }

    /// mDNS saw the receiver `id` at `host`:`port`: a room waiting for it is tried there, at once.
    func seen(id: String, host: String, port: UInt16) {
        let waited = lock.withLock { _ in waits.seen(id: id, host: host, port: port) }
        if waited { queue.async { [weak self] in self?.attempt() } }
    }

    /// Stops waiting for the room named `name`; false when none waits. When the playback had no room left
    /// but this one to wait for, `onNothingLeft` is called.
    @discardableResult
    func forget(named name: String) -> Bool { forget(.removed) { $0.isNamed(name) } }

    /// Stops waiting for the room that joined as `route`: the same receiver (its id, else its address), or one
    /// named as it was added (a name, or the address it came back at).
    func forget(_ route: OutputRoute) {
        _ = forget(.added) { ReturnWaitList.same($0, route) || $0.isNamed(route.name) }
    }

    private func forget(_ reason: ReturnWaitList.Reason, where matches: (OutputRoute) -> Bool) -> Bool {
        let (forgot, nothingLeft) = lock.withLock { _ in
            let forgot = waits.forget(reason, where: matches)
            if waits.waiting.isEmpty { stopTimer() }
            return (forgot, waits.waiting.isEmpty)
        }
        if forgot, nothingLeft, session.isWaitingForRooms { onNothingLeft() }
        return forgot
    }

    /// Whether `route` joined because it came back (said once).
    func cameBack(_ route: OutputRoute) -> Bool {
        lock.withLock { _ in returned.remove(ReturnWaitList.key(route)) != nil }
    }

    /// Stops waiting for anyone (the playback ended).
    func close() {
        let (browser, browsing) = lock.withLock { _ in
            closed = true
            waits = ReturnWaitList()
            stopTimer()
            defer { self.browser = nil; self.browsing = nil }
            return (self.browser, self.browsing)
        }
        browsing?.cancel()
        browser?.close()
    }

    /// One try for each waiting room, on `queue` (the timer's, or one at once for an address just seen).
    private func attempt() {
        guard !session.hasEnded else { return close() }
        for route in returning {
            do {
                // Marked before it joins: the session reports the join from within addRoute, and a loss of the
                // room from then on may come before the wait below is ended.
                lock.withLock { _ in
                    _ = returned.insert(ReturnWaitList.key(route))
                    waits.trying(route)
                }
                try session.addRoute(route)
                let joined = lock.withLock { _ in
                    let joined = waits.joined(route)
                    // Lost again as it joined: a new loss, waited for and told again.
                    if joined == .lostAgain { failureLogged.remove(ReturnWaitList.key(route)) }
                    if waits.waiting.isEmpty { stopTimer() }
                    return joined
                }
                // The user removed it while it was joining: it leaves again, as they asked. (Lost again as well,
                // `.removedAndLost`, it has left already.)
                if joined == .removedMeanwhile {
                    do {
                        try session.removeRoute(named: route.name)
                    } catch {
                        // The last room left is not removed: it plays on, and the user stops the playback.
                        Logger(label: "lyre.play").notice("'\(route.name)' was removed while it returned, and stays: \(error)")
                    }
                }
            } catch {
                // Told only while the room is still waited for and the playback goes on: a removal meanwhile or the
                // playback's end is no failed return. (A try that meets a `lyre group add` of the room under way is
                // told: the add ends the wait only once it has joined.)
                let level: Logger.Level? = lock.withLock { _ in
                    _ = returned.remove(ReturnWaitList.key(route))
                    guard waits.failed(route) else { return nil }
                    return failureLogged.insert(ReturnWaitList.key(route)).inserted ? .notice : .debug
                }
                if let level, !session.hasEnded {
                    Logger(label: "lyre.play").log(level: level, "\(route) is not back yet (tried again each second): \(error)")
                }
            }
        }
    }

    /// Under `lock`.
    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }
}
