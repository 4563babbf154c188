import LyreWire

/// The DNS-SD service type every Lyre receiver registers.
public let lyreServiceType = "_lyre._tcp"

/// A receiver as a sender sees it: the counterpart of an AVAudioSession output port description.
///
/// A device is identified by ``id``, never by its name or its position in a list.
public struct Device: Sendable, Equatable, Identifiable {
    /// Stable identity from the TXT `id` key.
    public var id: DeviceID
    /// The service instance name, shown to people (`Kitchen`, `Kitchen (2)`).
    public var name: String
    /// The host name the SRV record points at (`kitchen-pi.local`).
    public var host: String
    /// Every address seen for the host, sorted, IPv4 first.
    public var addresses: [String]
    /// The RTSP port from the SRV record.
    public var port: UInt16
    /// The interfaces it was seen on, sorted.
    public var interfaces: [String]
    /// The parsed receiver attributes.
    public var receiver: ReceiverTXT
    /// Every TXT attribute as sent, keys lower-cased, first occurrence of a key kept.
    public var txt: [String: String]

    public init(
        id: DeviceID, name: String, host: String, addresses: [String], port: UInt16, interfaces: [String],
        receiver: ReceiverTXT, txt: [String: String]
    ) {
        self.id = id
        self.name = name
        self.host = host
        self.addresses = addresses
        self.port = port
        self.interfaces = interfaces
        self.receiver = receiver
        self.txt = txt
    }
}

extension Device {
    /// The address a sender streams to (streaming.md §1): its first IPv4 address, else its first IPv6 one that is
    /// not link-local, else a link-local one with the zone of the interface it was found on (`fe80::1%eth0`).
    public var streamAddress: String? {
        addresses.first { !$0.contains(":") } ?? addresses.first { $0.contains(":") && !HostPort.isLinkLocal($0) }
            ?? addresses.first { HostPort.isLinkLocal($0) }
    }
}

/// Why the set of available routes changed (AVAudioSession.RouteChangeReason's counterpart for discovery).
public enum RouteChangeReason: String, Sendable, Equatable, CaseIterable {
    /// A receiver appeared on the network.
    case deviceAvailable
    /// A receiver left the network (goodbye, expiry, or the interface went away).
    case deviceUnavailable
    /// A receiver's TXT attributes, name, host, port or addresses changed.
    case deviceChanged
}

/// One change to the set of receivers, with the device as it now is (or as it last was, when it left).
public struct RouteChange: Sendable, Equatable {
    public var reason: RouteChangeReason
    public var device: Device

    public init(reason: RouteChangeReason, device: Device) {
        self.reason = reason
        self.device = device
    }
}

extension Device {
    /// False while the receiver says it is leaving or its output cannot open: no sender plays to it then.
    public var isPlayable: Bool { receiver.status != .leaving && receiver.status != .unavailable }
}
