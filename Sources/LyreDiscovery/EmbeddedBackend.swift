import CAvahiCore
// avahi-common's declarations (AvahiServerState, errors, string lists) are shared by both avahi modules;
// clang files them under the module that includes them first, which is CAvahiClient in this target.
import CAvahiClient
import LyreWire
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// An mDNS responder inside this process, on avahi-core: for hosts where no avahi-daemon runs.
///
/// It shares UDP port 5353 with any other stack on the host (avahi sets SO_REUSEADDR), so it also works
/// beside a running daemon. Its host name may collide with the daemon's; it then takes avahi's alternative.
final class EmbeddedBackend: MDNSBackend, @unchecked Sendable {
    // Safe to share: every mutable property below is touched only on the avahi poll thread (callbacks) or
    // while holding the poll lock (`poll.withLock`), which serialises the two.
    let mode = MDNSMode.embedded
    private let poll: ThreadedPoll
    private let events = BackendEvents()
    private let logger = Logger(label: "lyre.discovery.embedded")

    private var server: OpaquePointer?  // AvahiServer*
    private lazy var publication = makePublication()
    private var browser: OpaquePointer?  // AvahiSServiceBrowser*
    private lazy var resolution = makeResolution()

    var publicationEvents: AsyncStream<PublicationEvent> { events.publication }

    /// - Parameters:
    ///   - interfaces: interface names to use (avahi's `allow-interfaces`); empty for all.
    ///   - publishing: `false` for a browse-only stack, which then announces nothing, not even its host.
    init(interfaces: [String], publishing: Bool) throws(AvahiError) {
        var loadError: UnsafePointer<CChar>?
        guard lyre_avahi_core_load(&loadError) == 0 else {
            throw AvahiError(message: "cannot use the embedded mDNS responder: " + String(cString: loadError!))
        }
        lyre_avahi_set_log_function { level, text in
            guard let text else { return }
            // avahi-core narrates every interface and notes other stacks on the host: detail, not news.
            let logger = Logger(label: "lyre.discovery.avahi-core")
            if level == AVAHI_LOG_ERROR {
                logger.warning("\(String(cString: text))")
            } else {
                logger.debug("\(String(cString: text))")
            }
        }
        poll = try ThreadedPoll()
        var config = AvahiServerConfig()
        lyre_avahi_server_config_init(&config)
        defer { lyre_avahi_server_config_free(&config) }
        config.publish_hinfo = 0
        config.publish_workstation = 0
        config.publish_domain = 0
        config.publish_addresses = publishing ? 1 : 0
        config.disable_publishing = publishing ? 0 : 1
        config.use_ipv6 = 1
        for name in interfaces { config.allow_interfaces = avahi_string_list_add(config.allow_interfaces, name) }

        let callback: AvahiServerCallback = { s, state, context in
            guard let s, let context else { return }
            Unmanaged<EmbeddedBackend>.fromOpaque(context).takeUnretainedValue().serverChanged(s, state)
        }
        var error: Int32 = 0
        guard let made = lyre_avahi_server_new(poll.api, &config, callback, Unmanaged.passUnretained(self).toOpaque(), &error)
        else {
            throw AvahiError(code: error, context: "starting the embedded mDNS responder (is UDP port 5353 usable?)")
        }
        server = made
        try poll.start()
    }

    // MARK: Server state (poll thread)

    private func serverChanged(_ s: OpaquePointer, _ state: AvahiServerState) {
        server = s
        switch state {
        case AVAHI_SERVER_RUNNING:
            publication.registerIfNeeded()
        case AVAHI_SERVER_COLLISION:
            // Another host (often the local avahi-daemon) owns our host name: take avahi's alternative.
            let current = lyre_avahi_server_get_host_name(s).map { String(cString: $0) } ?? ""
            if let next = avahi_alternative_host_name(current) {
                logger.notice("host name '\(current)' is taken; using '\(String(cString: next))'")
                lyre_avahi_server_set_host_name(s, next)
                avahi_free(next)
            }
            publication.withdraw()
        case AVAHI_SERVER_REGISTERING:
            publication.withdraw()
        case AVAHI_SERVER_FAILURE:
            let error = AvahiError(code: lyre_avahi_server_errno(s), context: "embedded mDNS responder failed")
            logger.error("\(error)")
            events.publish(.failed(reason: error.message))
        default:
            break
        }
    }

    // MARK: Publishing

    func publish(_ service: ServiceRegistration) throws(AvahiError) {
        try poll.withLock { () throws(AvahiError) in publication.publish(service) }
    }

    func updateTXT(_ txt: TXTRecord) throws(AvahiError) {
        try poll.withLock { () throws(AvahiError) in try publication.updateTXT(txt) }
    }

    /// The service in this process's responder, in an `AvahiSEntryGroup`, on every interface it uses.
    private func makePublication() -> ServicePublication {
        let calls = EntryGroupCalls(
            isRunning: { [unowned self] in server.map { lyre_avahi_server_get_state($0) == AVAHI_SERVER_RUNNING } ?? false },
            new: { [unowned self] in
                guard let server else { return nil }
                let callback: AvahiSEntryGroupCallback = { s, g, state, context in
                    guard let g, let context else { return }
                    Unmanaged<EmbeddedBackend>.fromOpaque(context).takeUnretainedValue().publication.groupChanged(g, state)
                }
                return lyre_avahi_s_entry_group_new(server, callback, Unmanaged.passUnretained(self).toOpaque())
            },
            isEmpty: { lyre_avahi_s_entry_group_is_empty($0) != 0 },
            add: { [unowned self] group, name, registration, list in
                guard let server else { return Int32(AVAHI_ERR_BAD_STATE) }
                return lyre_avahi_server_add_service_strlst(
                    server, group, anyInterface, anyProtocol, AvahiPublishFlags(0), name, registration.type, nil, nil,
                    registration.port, list)
            },
            updateTXT: { [unowned self] group, name, registration, list in
                guard let server else { return Int32(AVAHI_ERR_BAD_STATE) }
                return lyre_avahi_server_update_service_txt_strlst(
                    server, group, anyInterface, anyProtocol, AvahiPublishFlags(0), name, registration.type, nil, list)
            },
            reset: { lyre_avahi_s_entry_group_reset($0) },
            commit: { lyre_avahi_s_entry_group_commit($0) },
            free: { lyre_avahi_s_entry_group_free($0) },
            lastError: { [unowned self] in server.map { lyre_avahi_server_errno($0) } })
        return ServicePublication(calls, events: events, logger: logger)
    }

    // MARK: Browsing

    func browse(type: String) throws(AvahiError) -> AsyncStream<BrowseEvent> {
        try poll.withLock { () throws(AvahiError) in
            guard let server else { throw AvahiError(message: "the embedded mDNS responder has stopped") }
            let stream = events.makeBrowseStream()
            resolution.type = type
            let callback: AvahiSServiceBrowserCallback = { b, interface, proto, event, name, type, domain, flags, context in
                guard let context else { return }
                Unmanaged<EmbeddedBackend>.fromOpaque(context).takeUnretainedValue()
                    .browserEvent(interface, proto, event, name, type, domain)
            }
            guard
                let made = lyre_avahi_s_service_browser_new(
                    server, anyInterface, anyProtocol, type, nil, AvahiLookupFlags(0), callback,
                    Unmanaged.passUnretained(self).toOpaque())
            else { throw AvahiError(code: lyre_avahi_server_errno(server), context: "starting the browser") }
            browser = made
            return stream
        }
    }

    private func browserEvent(
        _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent,
        _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?
    ) {
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            resolution.browserEvent(event, interface, proto, name, type, domain)
        case AVAHI_BROWSER_ALL_FOR_NOW:
            // avahi-core says this one second after the browser starts, from a timer. An embedded stack
            // starts with an empty cache, and when the first query's answers are lost to the start-up race
            // the next query goes out at that same second: give its answers time before saying "all".
            poll.sayAllForNow(to: events, after: Self.coldCacheGrace)
        case AVAHI_BROWSER_FAILURE:
            if let server { logger.error("\(AvahiError(code: lyre_avahi_server_errno(server), context: "browsing"))") }
        default:
            break
        }
    }

    /// The instances found, resolved by avahi-core's resolvers and their TXT watched by its record browsers.
    private func makeResolution() -> InstanceResolution {
        let calls = ResolverCalls(
            newResolver: { [unowned self] interface, proto, name, type, domain, context in
                guard let server else { return nil }
                let callback: AvahiSServiceResolverCallback = {
                    r, interface, proto, event, name, type, domain, host, address, port, txt, flags, context in
                    guard let context else { return }
                    Unmanaged<InstanceResolution>.fromOpaque(context).takeUnretainedValue()
                        .resolverEvent(interface, proto, event, name, domain, host, address, port, txt)
                }
                return lyre_avahi_s_service_resolver_new(
                    server, interface, proto, name, type, domain, proto, AvahiLookupFlags(0), callback, context)
            },
            freeResolver: { lyre_avahi_s_service_resolver_free($0) },
            newTXTBrowser: { [unowned self] interface, proto, fullName, context in
                guard let server,
                    let key = lyre_avahi_key_new(fullName, UInt16(AVAHI_DNS_CLASS_IN), UInt16(AVAHI_DNS_TYPE_TXT))
                else { return nil }
                defer { lyre_avahi_key_unref(key) }
                let callback: AvahiSRecordBrowserCallback = { b, interface, proto, event, record, flags, context in
                    guard let b, let context, let record, event == AVAHI_BROWSER_NEW else { return }
                    let txt = StringList.bytes(lyre_avahi_record_txt(record))
                    Unmanaged<InstanceResolution>.fromOpaque(context).takeUnretainedValue().txtSeen(b, txt)
                }
                return lyre_avahi_s_record_browser_new(
                    server, interface, proto, key, AvahiLookupFlags(AVAHI_LOOKUP_USE_MULTICAST.rawValue), callback,
                    context)
            },
            freeTXTBrowser: { lyre_avahi_s_record_browser_free($0) },
            lastError: { [unowned self] in server.map { lyre_avahi_server_errno($0) } })
        return InstanceResolution(calls, events: events, logger: logger)
    }

    /// How long after avahi-core's ALL_FOR_NOW the embedded browser waits for the second query round.
    static let coldCacheGrace = 500  // milliseconds

    // MARK: Shutdown

    func shutdown() {
        poll.stop()
        resolution.free()
        if let browser { lyre_avahi_s_service_browser_free(browser) }
        browser = nil
        publication.free()  // sends goodbyes
        if let server { lyre_avahi_server_free(server) }
        server = nil
        events.finish()
    }

    deinit { shutdown() }
}
