import LyreWire
import Logging

/// Finds Lyre receivers: the source of the device picker.
///
/// ```swift
/// let browser = try DeviceBrowser()
/// for await change in try browser.routeChanges() {
///     print(change.reason, change.device.name)
/// }
/// ```
/// One browser runs one browse; close it (or let it go) to stop.
public final class DeviceBrowser: Sendable {
    private let backend: any MDNSBackend

    /// Which mDNS stack the browser ended up on (``MDNSMode/auto`` resolves to one of the others).
    public var mode: MDNSMode { backend.mode }

    /// - Parameters:
    ///   - mode: which mDNS stack to use.
    ///   - interfaces: interface names to browse on; empty for all.
    public init(mode: MDNSMode = .auto, interfaces: [String] = []) throws(AvahiError) {
        backend = try openMDNSBackend(mode: mode, interfaces: interfaces, publishing: false)
    }

    /// Browses over a backend of your choosing (a fake in engine tests).
    public init(backend: any MDNSBackend) { self.backend = backend }

    /// Live route changes, as they happen: the counterpart of AVAudioSession's route-change notification.
    /// Devices already on the network arrive first as ``RouteChangeReason/deviceAvailable``.
    public func routeChanges() throws(AvahiError) -> RouteChanges {
        RouteChanges(updates: try updates())
    }

    /// Route changes plus a mark each time the browser has reported everything it currently knows.
    public func updates() throws(AvahiError) -> DirectoryUpdates {
        DirectoryUpdates(events: try backend.browse(type: lyreServiceType))
    }

    /// The devices on the network now: browses until the stack says it has reported everything it
    /// knows (and every device is resolved), until `found` holds for the devices seen so far (a caller
    /// that wants particular devices need not wait for the rest), or until `timeout`, whichever comes first.
    public func currentDevices(
        timeout: Duration, until found: @escaping @Sendable ([Device]) -> Bool = { _ in false }
    ) async throws(AvahiError) -> [Device] {
        let updates = try updates()
        let collector = Task {
            var iterator = updates.makeAsyncIterator()
            while let update = await iterator.next() {
                if case .settled = update { break }
                if found(iterator.directory.currentDevices) { break }
            }
            return iterator.directory.currentDevices
        }
        let deadline = Task {
            try? await Task.sleep(for: timeout)
            collector.cancel()
        }
        defer { deadline.cancel() }
        return await collector.value
    }

    /// Stops browsing and frees the mDNS stack; streams end.
    public func close() { backend.shutdown() }
}

/// One step of a browse: a route change, or the mark that everything known has been reported.
public enum DirectoryUpdate: Sendable, Equatable {
    case routeChange(RouteChange)
    /// The stack has reported every device it currently knows.
    case settled
}

/// The browse as ``DirectoryUpdate``s: raw mDNS events grouped into devices by a ``DeviceDirectory``.
public struct DirectoryUpdates: AsyncSequence, Sendable {
    public typealias Element = DirectoryUpdate
    let events: AsyncStream<BrowseEvent>

    public func makeAsyncIterator() -> Iterator { Iterator(base: events.makeAsyncIterator()) }

    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<BrowseEvent>.Iterator
        /// Every device seen so far, as the iterator has applied the events.
        public private(set) var directory = DeviceDirectory()
        private var pending: [DirectoryUpdate] = []
        private let logger = Logger(label: "lyre.discovery.browser")

        init(base: AsyncStream<BrowseEvent>.Iterator) { self.base = base }

        /// Ends when the browser is closed or the task is cancelled.
        public mutating func next() async -> DirectoryUpdate? {
            while pending.isEmpty {
                guard !Task.isCancelled, let event = await base.next() else { return nil }
                let (changes, rejected) = directory.apply(event)
                if let rejected { logger.debug("\(rejected) (\(directory.rejectedCount) rejected so far)") }
                pending = changes.map(DirectoryUpdate.routeChange)
                if event == .allForNow { pending.append(.settled) }
            }
            return pending.removeFirst()
        }
    }
}

/// The browse as route changes only.
public struct RouteChanges: AsyncSequence, Sendable {
    public typealias Element = RouteChange
    let updates: DirectoryUpdates

    public func makeAsyncIterator() -> Iterator { Iterator(base: updates.makeAsyncIterator()) }

    public struct Iterator: AsyncIteratorProtocol {
        var base: DirectoryUpdates.Iterator

        public mutating func next() async -> RouteChange? {
            while let update = await base.next() {
                if case .routeChange(let change) = update { return change }
            }
            return nil
        }
    }
}
