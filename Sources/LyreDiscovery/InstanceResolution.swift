import CAvahiClient
import CAvahiCore
import Logging

/// What `InstanceResolution` calls on one avahi stack: avahi-client's resolvers and record browsers (over D-Bus
/// to the daemon) or avahi-core's (in this process). Each backend fills it in with its own C functions. What
/// they start reports to `context`, the `InstanceResolution`: a resolver's answers to `resolverEvent`, a TXT
/// record browser's records to `txtSeen`.
struct ResolverCalls {
    /// A resolver of the instance that stays open, so that later TXT and address changes are reported too. It
    /// resolves the address of the instance's own family: with either family allowed, avahi reports whichever
    /// record it sees first, and an instance found over IPv4 could resolve to an IPv6 address only ("no IPv4
    /// address", one play in eight right after another, issue 12). Nil when the stack refused one.
    var newResolver:
        (
            _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ name: UnsafePointer<CChar>,
            _ type: UnsafePointer<CChar>, _ domain: UnsafePointer<CChar>, _ context: UnsafeMutableRawPointer
        ) -> OpaquePointer?
    var freeResolver: (OpaquePointer) -> Void
    /// A browser of the TXT record of an instance's full name (`Name._type._tcp.domain`); nil when refused.
    var newTXTBrowser:
        (
            _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ fullName: UnsafePointer<CChar>,
            _ context: UnsafeMutableRawPointer
        ) -> OpaquePointer?
    var freeTXTBrowser: (OpaquePointer) -> Void
    /// The stack's last error (nil when the stack has stopped).
    var lastError: () -> Int32?
}

/// The instances one avahi stack's browse has found, each resolved and its TXT record watched (see
/// ``TXTWatches`` for why), reported through `BackendEvents`. Both backends browse through it. Touched only on
/// the avahi poll thread or under its lock, as the backend is.
final class InstanceResolution {
    private let calls: ResolverCalls
    private let events: BackendEvents
    private let logger: Logger
    private var resolvers: [ServiceInstanceKey: OpaquePointer] = [:]
    /// The service type browsed (`_lyre._tcp`), set when the browse starts.
    var type: String?

    init(_ calls: ResolverCalls, events: BackendEvents, logger: Logger) {
        self.calls = calls
        self.events = events
        self.logger = logger
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// A browser's NEW or REMOVE: a new instance is resolved, a removed one reported gone and its resolver and
    /// TXT watcher freed.
    func browserEvent(
        _ event: AvahiBrowserEvent, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ name: UnsafePointer<CChar>?,
        _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?
    ) {
        guard let name, let type, let domain else { return }
        let key = ServiceInstanceKey(interface: interface, proto: proto, name: name, domain: domain)
        if event == AVAHI_BROWSER_NEW {
            guard resolvers[key] == nil else { return }
            if let resolver = calls.newResolver(interface, proto, name, type, domain, context) {
                resolvers[key] = resolver
                events.resolverStarted(key)
            } else {
                let code = calls.lastError() ?? Int32(AVAHI_ERR_FAILURE)
                logger.debug("\(AvahiError(code: code, context: "resolving \(key.name)"))")
            }
        } else if event == AVAHI_BROWSER_REMOVE {
            if let resolver = resolvers.removeValue(forKey: key) { calls.freeResolver(resolver) }
            if let watcher = events.instanceRemoved(key) { calls.freeTXTBrowser(watcher) }
        }
    }

    /// A resolver's answer, as avahi-client and avahi-core both give it: a service found is reported and its
    /// TXT record watched from then on; a failure counts as answered.
    func resolverEvent(
        _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiResolverEvent,
        _ name: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?,
        _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16, _ txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard let name, let domain else { return }
        let key = ServiceInstanceKey(interface: interface, proto: proto, name: name, domain: domain)
        if event == AVAHI_RESOLVER_FOUND, let host {
            events.resolverFound(
                key,
                ResolvedService(
                    host: String(cString: host), address: addressString(address, interface: interface), port: port,
                    txt: StringList.bytes(txt)))
            watchTXT(key, interface: interface, proto: proto, name: name, domain: domain)
        } else {
            logger.debug("could not resolve '\(key.name)' on \(key.interface)")
            events.resolverAnswered(key)
        }
    }

    /// A TXT record browser saw a record.
    func txtSeen(_ watcher: OpaquePointer, _ txt: [UInt8]) { events.txtSeen(watcher, txt) }

    private func watchTXT(
        _ key: ServiceInstanceKey, interface: AvahiIfIndex, proto: AvahiProtocol, name: UnsafePointer<CChar>,
        domain: UnsafePointer<CChar>
    ) {
        guard !events.isWatchingTXT(key), let type else { return }
        var fullName = [CChar](repeating: 0, count: Int(AVAHI_DOMAIN_NAME_MAX))
        guard avahi_service_name_join(&fullName, fullName.count, name, type, domain) == 0,
            let watcher = calls.newTXTBrowser(interface, proto, fullName, context)
        else { return }
        events.addTXTWatcher(watcher, for: key)
    }

    /// Frees every resolver and TXT watcher: before the browsers and the stack that own them (avahi's order).
    func free() {
        for watcher in events.removeAllTXTWatchers() { calls.freeTXTBrowser(watcher) }
        for resolver in resolvers.values { calls.freeResolver(resolver) }
        resolvers.removeAll()
    }
}
