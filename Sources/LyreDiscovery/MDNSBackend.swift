import LyreWire

/// Which mDNS stack to use.
public enum MDNSMode: String, Sendable, CaseIterable {
    /// The system avahi-daemon when it answers, else the embedded responder.
    case auto
    /// The system avahi-daemon over D-Bus (avahi-client); waits for it if it is not running yet.
    case avahi
    /// An mDNS responder inside this process (avahi-core), for hosts without avahi-daemon.
    case embedded
}

/// One service instance as mDNS names it: the same receiver seen on two interfaces or over IPv4 and IPv6
/// is two instances of one device.
public struct ServiceInstanceKey: Hashable, Sendable, Comparable {
    public var interface: String
    public var ipv6: Bool
    public var name: String
    public var domain: String

    public init(interface: String, ipv6: Bool, name: String, domain: String) {
        self.interface = interface
        self.ipv6 = ipv6
        self.name = name
        self.domain = domain
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.name, a.interface, a.ipv6 ? 1 : 0, a.domain) < (b.name, b.interface, b.ipv6 ? 1 : 0, b.domain)
    }
}

/// What a resolver learned about one instance.
public struct ResolvedService: Sendable, Equatable {
    public var host: String
    public var address: String?
    public var port: UInt16
    /// The TXT RDATA exactly as received.
    public var txt: [UInt8]

    public init(host: String, address: String?, port: UInt16, txt: [UInt8]) {
        self.host = host
        self.address = address
        self.port = port
        self.txt = txt
    }
}

/// Raw events from a backend's browser and resolvers, before they are grouped into devices.
public enum BrowseEvent: Sendable, Equatable {
    /// An instance was resolved, or its records changed.
    case resolved(ServiceInstanceKey, ResolvedService)
    /// An instance is gone.
    case removed(ServiceInstanceKey)
    /// The browser has reported what it knows and every pending resolver has answered.
    case allForNow
    /// The backend lost its mDNS stack (avahi-daemon went away); what it listed may be stale.
    case disconnected
    /// The backend is browsing again after ``disconnected``; an ``allForNow`` will follow.
    case reconnected
}

/// What happened to a published service.
public enum PublicationEvent: Sendable, Equatable {
    /// The service is registered under `name` and announced.
    case established(name: String)
    /// The name was taken on the network; the service is being re-registered as `to`.
    case renamed(from: String, to: String)
    /// The mDNS stack went away; the service will be registered again when it is back.
    case suspended(reason: String)
    /// Registration failed for good.
    case failed(reason: String)
}

/// The service a receiver publishes.
public struct ServiceRegistration: Sendable, Equatable {
    public var name: String
    public var type: String
    public var port: UInt16
    public var txt: TXTRecord

    public init(name: String, type: String = lyreServiceType, port: UInt16, txt: TXTRecord) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
    }
}

/// An mDNS stack: avahi-daemon through avahi-client, or avahi-core embedded. Both behave alike, so the
/// advertiser and the browser are written once over this protocol (and engines can be tested with a fake).
///
/// A backend publishes at most one service and runs at most one browse; events arrive on the streams.
public protocol MDNSBackend: AnyObject, Sendable {
    /// Which stack this is.
    var mode: MDNSMode { get }
    /// Publication events; finishes when the backend shuts down.
    var publicationEvents: AsyncStream<PublicationEvent> { get }
    /// Registers `service`; on a name conflict it is renamed as ``ServiceName/alternative(after:)`` says.
    /// Called again, it replaces the service: the old name is withdrawn and the new one registered.
    func publish(_ service: ServiceRegistration) throws(AvahiError)
    /// Replaces the TXT record of the published service in place, without withdrawing it.
    func updateTXT(_ txt: TXTRecord) throws(AvahiError)
    /// Starts browsing for `type`; events arrive on the returned stream.
    func browse(type: String) throws(AvahiError) -> AsyncStream<BrowseEvent>
    /// Withdraws what was published (sending goodbyes), stops browsing and frees the stack.
    func shutdown()
}

/// Opens the backend `mode` asks for; `auto` picks avahi-daemon when it answers, else embedded.
/// `interfaces` restricts publishing and browsing to those interface names (empty: all).
public func openMDNSBackend(
    mode: MDNSMode, interfaces: [String], publishing: Bool
) throws(AvahiError) -> any MDNSBackend {
    let indexes = try InterfaceIndex.resolve(interfaces)
    switch mode {
    case .avahi:
        return try AvahiClientBackend(interfaces: indexes)
    case .embedded:
        return try EmbeddedBackend(interfaces: interfaces, publishing: publishing)
    case .auto:
        if AvahiClientBackend.daemonIsReachable() {
            return try AvahiClientBackend(interfaces: indexes)
        }
        return try EmbeddedBackend(interfaces: interfaces, publishing: publishing)
    }
}
