import Foundation
import LyreSender
import NIOConcurrencyHelpers

/// Rooms of a playback that went away by themselves come back by themselves (issue 27): while other rooms
/// play on, a room whose receiver was lost (rebooted, lyred restarted, a link down past the limit) is tried
/// again at its known address once a second, and rejoins the playback in sync as soon as it answers as the
/// same receiver (`StreamSession.addRoute`: its id and, when paired, its key are checked). A room the user
/// removed never comes back on its own; removing or adding a room that is returning ends the wait.
///
/// `@unchecked Sendable`: the state is behind `lock`; attempts run one at a time on `queue`.
final class RoomReturns: @unchecked Sendable {
    private let session: StreamSession
    private let lock = NIOLock()
    /// Lost rooms waiting to come back, in the order they were lost.
    private var waiting: [OutputRoute] = []
    /// Rooms that came back, until their `joined` change is reported.
    private var returned: Set<String> = []
    /// Attempts are blocking connects (`addRoute`), one at a time, off the session's threads.
    private let queue = DispatchQueue(label: "lyre-room-returns")
    private var timer: DispatchSourceTimer?

    init(session: StreamSession) { self.session = session }

    /// How long between attempts, and the longest one connect may take.
    static let retrySeconds = 1.0

    /// `route` was lost: wait for it.
    func lost(_ route: OutputRoute) {
        lock.withLock {
            guard !waiting.contains(where: { Self.same($0, route) }) else { return }
            waiting.append(route)
            guard timer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + Self.retrySeconds, repeating: Self.retrySeconds)
            timer.setEventHandler { [weak self] in self?.attempt() }
            timer.resume()
            self.timer = timer
        }
    }

    /// The rooms waiting to come back.
    var returning: [OutputRoute] { lock.withLock { waiting } }

    /// Stops waiting for the room named `name`; false when none waits.
    @discardableResult
    func forget(named name: String) -> Bool {
        lock.withLock {
            let before = waiting.count
            waiting.removeAll { $0.isNamed(name) }
            if waiting.isEmpty { stopTimer() }
            return waiting.count != before
        }
    }

    /// Whether `route` joined because it came back (said once).
    func cameBack(_ route: OutputRoute) -> Bool {
        lock.withLock { returned.remove(Self.key(route)) != nil }
    }

    /// Stops waiting for anyone (the playback ended).
    func close() {
        lock.withLock {
            waiting.removeAll()
            stopTimer()
        }
    }

    /// One try for each waiting room, on `queue`.
    private func attempt() {
        guard !session.hasEnded else { return close() }
        for route in returning {
            do {
                // Marked before it joins: the session reports the join from within addRoute.
                lock.withLock { _ = returned.insert(Self.key(route)) }
                try session.addRoute(route)
                let removedMeanwhile = lock.withLock {
                    let was = waiting.contains { Self.same($0, route) }
                    waiting.removeAll { Self.same($0, route) }
                    if waiting.isEmpty { stopTimer() }
                    return !was
                }
                // The user removed it while it was joining: it leaves again, as they asked.
                if removedMeanwhile { try? session.removeRoute(named: route.name) }
            } catch {
                lock.withLock { _ = returned.remove(Self.key(route)) }
            }
        }
    }

    /// Under `lock`.
    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }

    private static func key(_ route: OutputRoute) -> String { route.id ?? route.address }

    private static func same(_ a: OutputRoute, _ b: OutputRoute) -> Bool { key(a) == key(b) }
}
