import CAvahiClient
import LyreWire
import Logging

/// The system avahi-daemon, reached over D-Bus through avahi-client.
///
/// Survives daemon restarts as avahi's docs ask (`AVAHI_CLIENT_NO_FAIL`; on `AVAHI_ERR_DISCONNECTED` free
/// everything and connect anew), re-registering the service and re-browsing when the daemon is back.
final class AvahiClientBackend: MDNSBackend, @unchecked Sendable {
    // Safe to share: every mutable property below is touched only on the avahi poll thread (callbacks) or
    // while holding the poll lock (`poll.withLock`), which serialises the two.
    let mode = MDNSMode.avahi
    private let poll: ThreadedPoll
    private let events = BackendEvents()
    private let interfaces: [Int32]
    private let logger = Logger(label: "lyre.discovery.avahi")

    private var client: OpaquePointer?  // AvahiClient*
    private lazy var publication = makePublication()
    private lazy var resolution = makeResolution()
    private var browsers: [OpaquePointer] = []  // AvahiServiceBrowser*
    private var everConnected = false

    var publicationEvents: AsyncStream<PublicationEvent> { events.publication }

    /// Whether an avahi-daemon answers on the system bus right now.
    static func daemonIsReachable() -> Bool {
        guard let poll = try? ThreadedPoll() else { return false }
        var error: Int32 = 0
        guard let probe = avahi_client_new(poll.api, AvahiClientFlags(0), nil, nil, &error) else { return false }
        avahi_client_free(probe)
        return true
    }

    init(interfaces: [Int32]) throws(AvahiError) {
        self.interfaces = interfaces
        poll = try ThreadedPoll()
        try connect()
        try poll.start()
    }

    /// Creates the client; the state callback does the rest. On the poll thread or before it starts.
    private func connect() throws(AvahiError) {
        var error: Int32 = 0
        let context = Unmanaged.passUnretained(self).toOpaque()
        let callback: AvahiClientCallback = { c, state, context in
            guard let c, let context else { return }
            Unmanaged<AvahiClientBackend>.fromOpaque(context).takeUnretainedValue().clientChanged(c, state)
        }
        guard let made = avahi_client_new(poll.api, AVAHI_CLIENT_NO_FAIL, callback, context, &error) else {
            throw AvahiError(code: error, context: "connecting to avahi-daemon")
        }
        client = made
    }

    // MARK: Client state (poll thread)

    private func clientChanged(_ c: OpaquePointer, _ state: AvahiClientState) {
        client = c
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            if everConnected { logger.info("avahi-daemon is back; registering and browsing again") }
            everConnected = true
            publication.registerIfNeeded()
            startBrowsersIfNeeded()
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)established: withdraw until the server runs again.
            publication.withdraw()
        case AVAHI_CLIENT_FAILURE:
            let error = avahi_client_errno(c)
            if error == AVAHI_ERR_DISCONNECTED {
                logger.warning("lost avahi-daemon; waiting for it to come back")
                if publication.registration != nil { events.publish(.suspended(reason: "avahi-daemon went away")) }
                if events.isBrowsing { events.browse(.disconnected) }
                freeClientObjects()
                do { try connect() } catch {
                    logger.error("cannot reconnect to avahi-daemon: \(error)")
                    events.publish(.failed(reason: error.message))
                }
            } else {
                let failure = AvahiError(code: error, context: "avahi-daemon client failed")
                logger.error("\(failure)")
                events.publish(.failed(reason: failure.message))
            }
        case AVAHI_CLIENT_CONNECTING:
            logger.info("avahi-daemon is not running yet; waiting for it")
        default:
            break
        }
    }

    /// Frees every object that belongs to the client, then the client (avahi's order), and the browse's
    /// pending "all for now": a grace timer from the browse before (avahi-daemon restarted twice within
    /// ``reconnectGrace``) would otherwise end the next browse's before it has settled.
    private func freeClientObjects() {
        poll.cancelTimers()
        resolution.free()
        for browser in browsers { avahi_service_browser_free(browser) }
        browsers.removeAll()
        publication.free()
        if let client { avahi_client_free(client) }
        client = nil
    }

    // MARK: Publishing

    func publish(_ service: ServiceRegistration) throws(AvahiError) {
        try poll.withLock { () throws(AvahiError) in publication.publish(service) }
    }

    func updateTXT(_ txt: TXTRecord) throws(AvahiError) {
        try poll.withLock { () throws(AvahiError) in try publication.updateTXT(txt) }
    }

    private var interfaceList: [Int32] { interfaces.isEmpty ? [anyInterface] : interfaces }

    /// The service on the daemon, in an `AvahiEntryGroup` of the client's, on each interface asked for.
    private func makePublication() -> ServicePublication {
        let calls = EntryGroupCalls(
            isRunning: { [unowned self] in client.map { avahi_client_get_state($0) == AVAHI_CLIENT_S_RUNNING } ?? false },
            new: { [unowned self] in
                guard let client else { return nil }
                let callback: AvahiEntryGroupCallback = { g, state, context in
                    guard let g, let context else { return }
                    Unmanaged<AvahiClientBackend>.fromOpaque(context).takeUnretainedValue().publication.groupChanged(g, state)
                }
                return avahi_entry_group_new(client, callback, Unmanaged.passUnretained(self).toOpaque())
            },
            isEmpty: { avahi_entry_group_is_empty($0) != 0 },
            add: { [unowned self] group, name, registration, list in
                var result: Int32 = 0
                for interface in interfaceList where result == 0 {
                    result = avahi_entry_group_add_service_strlst(
                        group, interface, anyProtocol, AvahiPublishFlags(0), name, registration.type, nil, nil,
                        registration.port, list)
                }
                return result
            },
            updateTXT: { [unowned self] group, name, registration, list in
                var result: Int32 = 0
                for interface in interfaceList where result == 0 {
                    result = avahi_entry_group_update_service_txt_strlst(
                        group, interface, anyProtocol, AvahiPublishFlags(0), name, registration.type, nil, list)
                }
                return result
            },
            reset: { avahi_entry_group_reset($0) },
            commit: { avahi_entry_group_commit($0) },
            free: { avahi_entry_group_free($0) },
            lastError: { [unowned self] in client.map { avahi_client_errno($0) } })
        return ServicePublication(calls, events: events, logger: logger)
    }

    // MARK: Browsing

    func browse(type: String) throws(AvahiError) -> AsyncStream<BrowseEvent> {
        try poll.withLock { () throws(AvahiError) in
            resolution.type = type
            let stream = events.makeBrowseStream()
            if let client, avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING { startBrowsersIfNeeded() }
            return stream
        }
    }

    private func startBrowsersIfNeeded() {
        guard let client, let type = resolution.type, browsers.isEmpty else { return }
        let wasDisconnected = everConnected && events.isBrowsing
        events.browserRestarted()
        if wasDisconnected { events.browse(.reconnected) }
        browsingAgain = wasDisconnected
        let callback: AvahiServiceBrowserCallback = { b, interface, proto, event, name, type, domain, flags, context in
            guard let b, let context else { return }
            Unmanaged<AvahiClientBackend>.fromOpaque(context).takeUnretainedValue()
                .browserEvent(b, interface, proto, event, name, type, domain)
        }
        for interface in interfaceList {
            guard
                let browser = avahi_service_browser_new(
                    client, interface, anyProtocol, type, nil, AvahiLookupFlags(0), callback,
                    Unmanaged.passUnretained(self).toOpaque())
            else {
                logger.error("\(AvahiError(code: avahi_client_errno(client), context: "starting the browser"))")
                continue
            }
            browsers.append(browser)
        }
        // Several browsers (one per interface) each say ALL_FOR_NOW; count them down.
        pendingAllForNow = browsers.count
    }

    private var pendingAllForNow = 0
    /// The browsers were started again after avahi-daemon came back: see ``reconnectGrace``.
    private var browsingAgain = false

    /// How long after a restarted avahi-daemon's ALL_FOR_NOW the browse waits before what it has not seen
    /// again is gone (`DeviceDirectory`, `.allForNow` after `.disconnected`). The daemon starts with an empty
    /// cache, and a receiver on this host registers with it again at the same moment as this browser: its
    /// service is probed for about a second (RFC 6762 §8.1) before any browser sees it, so at ALL_FOR_NOW a
    /// receiver playing all along could be reported gone and back (DiscoveryPeerTests.avahiRestartedWhileAFilePlaysLeavesThePlaybackAlone).
    static let reconnectGrace = 2000  // milliseconds

    private func browserEvent(
        _ b: OpaquePointer, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent,
        _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?
    ) {
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            resolution.browserEvent(event, interface, proto, name, type, domain)
        case AVAHI_BROWSER_ALL_FOR_NOW:
            pendingAllForNow -= 1
            guard pendingAllForNow <= 0 else { return }
            if browsingAgain { poll.sayAllForNow(to: events, after: Self.reconnectGrace) } else { events.browserAllForNow() }
        case AVAHI_BROWSER_FAILURE:
            let error = AvahiError(code: avahi_client_errno(avahi_service_browser_get_client(b)), context: "browsing")
            logger.error("\(error)")
        default:
            break
        }
    }

    /// The instances found, resolved by avahi-client's resolvers and their TXT watched by its record browsers.
    private func makeResolution() -> InstanceResolution {
        let calls = ResolverCalls(
            newResolver: { [unowned self] interface, proto, name, type, domain, context in
                guard let client else { return nil }
                let callback: AvahiServiceResolverCallback = {
                    r, interface, proto, event, name, type, domain, host, address, port, txt, flags, context in
                    guard let context else { return }
                    Unmanaged<InstanceResolution>.fromOpaque(context).takeUnretainedValue()
                        .resolverEvent(interface, proto, event, name, domain, host, address, port, txt)
                }
                return avahi_service_resolver_new(
                    client, interface, proto, name, type, domain, proto, AvahiLookupFlags(0), callback, context)
            },
            freeResolver: { avahi_service_resolver_free($0) },
            newTXTBrowser: { [unowned self] interface, proto, fullName, context in
                guard let client else { return nil }
                let callback: AvahiRecordBrowserCallback = {
                    b, interface, proto, event, name, clazz, type, rdata, size, flags, context in
                    guard let b, let context, event == AVAHI_BROWSER_NEW, let rdata else { return }
                    let bytes = Array(UnsafeRawBufferPointer(start: rdata, count: size))
                    Unmanaged<InstanceResolution>.fromOpaque(context).takeUnretainedValue().txtSeen(b, bytes)
                }
                return avahi_record_browser_new(
                    client, interface, proto, fullName, UInt16(AVAHI_DNS_CLASS_IN), UInt16(AVAHI_DNS_TYPE_TXT),
                    AvahiLookupFlags(0), callback, context)
            },
            freeTXTBrowser: { avahi_record_browser_free($0) },
            lastError: { [unowned self] in client.map { avahi_client_errno($0) } })
        return InstanceResolution(calls, events: events, logger: logger)
    }

    // MARK: Shutdown

    func shutdown() {
        poll.stop()
        freeClientObjects()  // freeing the group withdraws the service with goodbye packets
        events.finish()
    }

    deinit { shutdown() }
}
