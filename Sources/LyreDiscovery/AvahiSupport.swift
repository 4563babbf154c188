import CAvahiClient
import LyreWire
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// An avahi error: the code from avahi-common (shared by avahi-client and avahi-core) and its text.
public struct AvahiError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `AVAHI_ERR_*` code, or 0 for errors raised here.
    public var code: Int32
    /// What went wrong, in words.
    public var message: String

    public init(code: Int32, context: String) {
        self.code = code
        let text = avahi_strerror(code).map { String(cString: $0) } ?? "error \(code)"
        message = "\(context): \(text)"
    }

    public init(message: String) {
        code = 0
        self.message = message
    }

    public var description: String { message }
}

/// Runs a C call that returns a negative avahi error code on failure.
@inline(__always)
func avahiCheck(_ result: Int32, _ context: @autoclosure () -> String) throws(AvahiError) {
    if result < 0 { throw AvahiError(code: result, context: context()) }
}

/// Interface names to kernel indexes.
enum InterfaceIndex {
    static func resolve(_ names: [String]) throws(AvahiError) -> [Int32] {
        var out: [Int32] = []
        for name in names {
            let index = if_nametoindex(name)
            guard index != 0 else {
                throw AvahiError(message: "no network interface named '\(name)' (see 'ip link')")
            }
            out.append(Int32(index))
        }
        return out
    }

    static func name(_ index: Int32) -> String {
        guard index > 0 else { return "any" }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return "if\(index)" }
        return String(nulTerminated: buffer)
    }
}

/// `AvahiThreadedPoll`: the event loop thread both backends run their avahi objects on.
///
/// avahi calls back on this thread with its lock held; other threads take the lock through
/// ``withLock(_:)`` before touching any avahi object (avahi's docs/THREADS).
final class ThreadedPoll: @unchecked Sendable {
    // Safe to share: the pointer is immutable after init, and avahi's own lock guards the loop.
    let handle: OpaquePointer
    private var started = false

    init() throws(AvahiError) {
        guard let handle = avahi_threaded_poll_new() else {
            throw AvahiError(message: "could not create the avahi event loop (out of memory)")
        }
        self.handle = handle
    }

    /// The `AvahiPoll` vtable to hand to avahi_client_new / avahi_server_new.
    var api: UnsafePointer<AvahiPoll> { avahi_threaded_poll_get(handle) }

    func start() throws(AvahiError) {
        try avahiCheck(avahi_threaded_poll_start(handle), "starting the avahi event loop")
        started = true
    }

    /// Runs `body` holding the poll lock. Never call from an avahi callback (it already holds it).
    func withLock<T>(_ body: () throws(AvahiError) -> T) throws(AvahiError) -> T {
        guard started else { return try body() }
        avahi_threaded_poll_lock(handle)
        defer { avahi_threaded_poll_unlock(handle) }
        return try body()
    }

    /// Stops the thread; after this no callback runs, so the owner may free its avahi objects. Frees the
    /// timers `sayAllForNow(to:after:)` made.
    func stop() {
        if started { avahi_threaded_poll_stop(handle) }
        started = false
        cancelTimers()
    }

    /// Frees the timers `sayAllForNow(to:after:)` made, fired or not: one that has not fired never does.
    /// Poll thread/lock.
    func cancelTimers() {
        for timer in timers { api.pointee.timeout_free(timer) }
        timers.removeAll()
    }

    private var timers: [OpaquePointer] = []  // AvahiTimeout*, freed by stop(); poll thread/lock

    /// Says "all for now" to `events` on the poll thread after `milliseconds`, through the poll's own timeout
    /// API (at once when avahi cannot make the timer). Poll thread/lock. `events` is held unretained: its
    /// owner stops the poll, which frees every timer, before it goes.
    func sayAllForNow(to events: BackendEvents, after milliseconds: Int) {
        var when = timeval()
        avahi_elapse_time(&when, UInt32(milliseconds), 0)
        let timer = api.pointee.timeout_new(
            api, &when,
            { _, context in
                guard let context else { return }
                Unmanaged<BackendEvents>.fromOpaque(context).takeUnretainedValue().browserAllForNow()
            }, Unmanaged.passUnretained(events).toOpaque())
        if let timer { timers.append(timer) } else { events.browserAllForNow() }
    }

    deinit {
        stop()
        avahi_threaded_poll_free(handle)
    }
}

/// `AvahiStringList` from and to TXT records. avahi keeps the list in reverse order of insertion.
enum StringList {
    /// Builds a list whose wire order is the record's order; the caller frees it.
    static func make(_ txt: TXTRecord) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        for string in txt.strings {
            list = string.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count) }
        }
        return avahi_string_list_reverse(list)
    }

    /// The RDATA of `list`, in wire order.
    static func bytes(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [UInt8] {
        guard let list else { return [] }
        let length = avahi_string_list_serialize(list, nil, 0)
        var out = [UInt8](repeating: 0, count: length)
        _ = out.withUnsafeMutableBytes { avahi_string_list_serialize(list, $0.baseAddress, length) }
        return out
    }
}

/// `AvahiAddress` as text; a link-local IPv6 address (fe80::/10) with the zone of the interface it was
/// found on (`fe80::1%eth0`), without which it cannot be reached.
func addressString(_ address: UnsafePointer<AvahiAddress>?, interface: AvahiIfIndex) -> String? {
    guard let address else { return nil }
    var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
    guard avahi_address_snprint(&buffer, buffer.count, address) != nil else { return nil }
    let text = String(nulTerminated: buffer)
    return interface > 0 && HostPort.isLinkLocal(text) ? text + "%" + InterfaceIndex.name(interface) : text
}

/// Fan-out of backend events to async code, with the bookkeeping both backends share: which resolvers
/// are pending, and when "all for now" may be said. Touched only on the poll thread.
final class BackendEvents: @unchecked Sendable {
    // Safe to share: mutated only on the avahi poll thread (in callbacks) or under its lock.
    /// Bound on queued events; past it the oldest are kept and the overflow is counted.
    static let bufferLimit = 16_384

    let publication: AsyncStream<PublicationEvent>
    private let publicationContinuation: AsyncStream<PublicationEvent>.Continuation
    private var browseContinuation: AsyncStream<BrowseEvent>.Continuation?
    private var pending = Set<ServiceInstanceKey>()
    private var browserDone = false
    private var txtWatches = TXTWatches()
    private(set) var dropped = 0

    init() {
        (publication, publicationContinuation) = AsyncStream.makeStream(
            bufferingPolicy: .bufferingOldest(Self.bufferLimit))
    }

    func publish(_ event: PublicationEvent) {
        if case .dropped = publicationContinuation.yield(event) { dropped += 1 }
    }

    /// A new browse stream; the previous one, if any, is finished.
    func makeBrowseStream() -> AsyncStream<BrowseEvent> {
        browseContinuation?.finish()
        let (stream, continuation) = AsyncStream.makeStream(
            of: BrowseEvent.self, bufferingPolicy: .bufferingOldest(Self.bufferLimit))
        browseContinuation = continuation
        browserDone = false
        pending.removeAll()
        return stream
    }

    var isBrowsing: Bool { browseContinuation != nil }

    func browse(_ event: BrowseEvent) {
        if case .dropped = browseContinuation?.yield(event) { dropped += 1 }
    }

    /// A browser reported a new instance and a resolver was started for it.
    func resolverStarted(_ key: ServiceInstanceKey) { pending.insert(key) }

    /// A resolver found `service`: reports it (keeping a newer TXT a watcher already saw) and counts the
    /// resolver as answered.
    func resolverFound(_ key: ServiceInstanceKey, _ service: ResolvedService) {
        browse(.resolved(key, txtWatches.resolved(key, service)))
        resolverAnswered(key)
    }

    /// The browser says an instance is gone: reports it. Returns the instance's TXT watcher for the
    /// backend to free.
    func instanceRemoved(_ key: ServiceInstanceKey) -> OpaquePointer? {
        let watcher = txtWatches.remove(key)
        browse(.removed(key))
        resolverAnswered(key)
        return watcher
    }

    /// Whether the instance's TXT record is watched already.
    func isWatchingTXT(_ key: ServiceInstanceKey) -> Bool { txtWatches.isWatching(key) }

    /// A backend started a TXT record browser for the instance.
    func addTXTWatcher(_ watcher: OpaquePointer, for key: ServiceInstanceKey) { txtWatches.add(watcher, for: key) }

    /// A TXT record entered the cache for a watched instance: reported when it is news.
    func txtSeen(_ watcher: OpaquePointer, _ txt: [UInt8]) {
        if let (key, service) = txtWatches.txtSeen(watcher, txt) { browse(.resolved(key, service)) }
    }

    /// Forgets every TXT watcher; returns them for the backend to free.
    func removeAllTXTWatchers() -> [OpaquePointer] { txtWatches.removeAll() }

    /// A resolver answered (found or failed) or its instance went away.
    func resolverAnswered(_ key: ServiceInstanceKey) {
        pending.remove(key)
        sayAllForNowIfDone()
    }

    /// The browser has said ALL_FOR_NOW.
    func browserAllForNow() {
        browserDone = true
        sayAllForNowIfDone()
    }

    /// A (re)connection started a fresh browser.
    func browserRestarted() {
        browserDone = false
        pending.removeAll()
    }

    private func sayAllForNowIfDone() {
        guard browserDone, pending.isEmpty else { return }
        browserDone = false
        browse(.allForNow)
    }

    func finish() {
        browseContinuation?.finish()
        browseContinuation = nil
        publicationContinuation.finish()
    }
}

extension ServiceInstanceKey {
    /// The key of an instance as an avahi browser or resolver callback names it.
    init(interface: AvahiIfIndex, proto: AvahiProtocol, name: UnsafePointer<CChar>, domain: UnsafePointer<CChar>) {
        self.init(
            interface: InterfaceIndex.name(interface), ipv6: proto == ipv6Protocol, name: String(cString: name),
            domain: String(cString: domain))
    }
}

/// `AVAHI_IF_UNSPEC` and `AVAHI_PROTO_*`, typed (the C macros import as `Int`).
let anyInterface = AvahiIfIndex(AVAHI_IF_UNSPEC)
let anyProtocol = AvahiProtocol(AVAHI_PROTO_UNSPEC)
let ipv6Protocol = AvahiProtocol(AVAHI_PROTO_INET6)

/// Per-instance TXT watching, shared by both backends. avahi's service resolver passes a changed TXT on
/// only after the old record's one-second cache flush and a re-query (about 2 s); a record browser on the
/// instance's TXT sees the new record the moment it enters the cache, so status changes (and
/// `st=leaving`) arrive at once. Touched only on the poll thread.
struct TXTWatches {
    /// The C record browser per instance (`AvahiRecordBrowser*` or `AvahiSRecordBrowser*`).
    private var watchers: [ServiceInstanceKey: OpaquePointer] = [:]
    private var keys: [OpaquePointer: ServiceInstanceKey] = [:]
    private var lastResolved: [ServiceInstanceKey: ResolvedService] = [:]

    func isWatching(_ key: ServiceInstanceKey) -> Bool { watchers[key] != nil }

    /// A resolver answered: what to report, keeping a newer TXT the watcher already saw.
    mutating func resolved(_ key: ServiceInstanceKey, _ service: ResolvedService) -> ResolvedService {
        var service = service
        if watchers[key] != nil, let newer = lastResolved[key]?.txt { service.txt = newer }
        lastResolved[key] = service
        return service
    }

    mutating func add(_ watcher: OpaquePointer, for key: ServiceInstanceKey) {
        watchers[key] = watcher
        keys[watcher] = key
    }

    /// A TXT record entered the cache: the instance and its updated service, if that is news. Old records
    /// leaving the cache are not reported here; the service browser says when the instance itself goes.
    mutating func txtSeen(_ watcher: OpaquePointer, _ txt: [UInt8]) -> (ServiceInstanceKey, ResolvedService)? {
        guard let key = keys[watcher], var service = lastResolved[key], service.txt != txt else { return nil }
        service.txt = txt
        lastResolved[key] = service
        return (key, service)
    }

    /// Forgets an instance; returns its watcher for the caller to free.
    mutating func remove(_ key: ServiceInstanceKey) -> OpaquePointer? {
        lastResolved[key] = nil
        guard let watcher = watchers.removeValue(forKey: key) else { return nil }
        keys[watcher] = nil
        return watcher
    }

    /// Forgets everything; returns the watchers for the caller to free.
    mutating func removeAll() -> [OpaquePointer] {
        defer {
            watchers.removeAll()
            keys.removeAll()
            lastResolved.removeAll()
        }
        return Array(watchers.values)
    }
}
