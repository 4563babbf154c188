import LyreWire

/// Groups resolved mDNS service instances into devices by their TXT `id`, and says what changed.
///
/// A pure state machine: feed it ``BrowseEvent``s, get back ``RouteChange``s. No I/O, no clock.
/// The same receiver seen on two interfaces or over IPv4 and IPv6 is one device; an instance whose TXT
/// is not a valid Lyre record is kept out of the listing (and counted), so it cannot disturb the others.
public struct DeviceDirectory: Sendable {
    private struct Instance: Sendable {
        var service: ResolvedService
        var parsed: Result<(ReceiverTXT, [String: String]), RejectedRecord>
        var stale = false
    }

    /// Why an instance was kept out of the listing.
    public struct RejectedRecord: Error, Sendable, Equatable, CustomStringConvertible {
        public var instance: String
        public var reason: String
        public var description: String { "ignoring '\(instance)': \(reason)" }
    }

    private var instances: [ServiceInstanceKey: Instance] = [:]
    private var devices: [DeviceID: Device] = [:]

    /// How many resolved records were rejected as malformed, since the start.
    public private(set) var rejectedCount = 0

    public init() {}

    /// The devices now listed, sorted by name then id.
    public var currentDevices: [Device] {
        devices.values.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Applies one backend event. Returns the route changes it causes and, for a rejected record, why.
    public mutating func apply(_ event: BrowseEvent) -> (changes: [RouteChange], rejected: RejectedRecord?) {
        switch event {
        case .resolved(let key, let service):
            let before = instances[key].flatMap { try? $0.parsed.get().0.deviceID }
            let parsed = Self.parse(service.txt, instance: key.name)
            var rejected: RejectedRecord?
            if case .failure(let reason) = parsed {
                // Count a record once, not on every re-announcement of the same bytes.
                if instances[key]?.service.txt != service.txt { rejectedCount += 1 }
                rejected = reason
            }
            instances[key] = Instance(service: service, parsed: parsed)
            let after = try? parsed.get().0.deviceID
            return (recompute(Set([before, after].compactMap { $0 })), rejected)
        case .removed(let key):
            guard let gone = instances.removeValue(forKey: key) else { return ([], nil) }
            return (recompute(Set([try? gone.parsed.get().0.deviceID].compactMap { $0 })), nil)
        case .disconnected:
            // Keep listing what we had; whatever is not seen again by the next allForNow is gone.
            for key in instances.keys { instances[key]?.stale = true }
            return ([], nil)
        case .reconnected:
            return ([], nil)
        case .allForNow:
            let staleKeys = instances.filter { $0.value.stale }.map(\.key)
            guard !staleKeys.isEmpty else { return ([], nil) }
            var affected = Set<DeviceID>()
            for key in staleKeys {
                if let id = try? instances[key]?.parsed.get().0.deviceID { affected.insert(id) }
                instances[key] = nil
            }
            return (recompute(affected), nil)
        }
    }

    /// Rebuilds the named devices from their instances and diffs them against what was listed.
    private mutating func recompute(_ ids: Set<DeviceID>) -> [RouteChange] {
        var changes: [RouteChange] = []
        for id in ids.sorted() {
            // A receiver announcing `st=leaving` is about to send goodbyes: it is gone already.
            let members = instances.filter {
                guard let (receiver, _) = try? $0.value.parsed.get() else { return false }
                return receiver.deviceID == id && receiver.status != .leaving
            }.sorted { $0.key < $1.key }
            let old = devices[id]
            guard let (firstKey, first) = members.first, case .success(let (receiver, txt)) = first.parsed else {
                if let old {
                    devices[id] = nil
                    changes.append(RouteChange(reason: .deviceUnavailable, device: old))
                }
                continue
            }
            let addresses = Set(members.compactMap(\.value.service.address))
            let device = Device(
                id: id, name: firstKey.name, host: first.service.host,
                addresses: addresses.sorted { ($0.contains(":") ? 1 : 0, $0) < ($1.contains(":") ? 1 : 0, $1) },
                port: first.service.port, interfaces: Set(members.map(\.key.interface)).sorted(),
                receiver: receiver, txt: txt)
            devices[id] = device
            if old == nil {
                changes.append(RouteChange(reason: .deviceAvailable, device: device))
            } else if old != device {
                changes.append(RouteChange(reason: .deviceChanged, device: device))
            }
        }
        return changes
    }

    private static func parse(_ bytes: [UInt8], instance: String)
        -> Result<(ReceiverTXT, [String: String]), RejectedRecord>
    {
        do {
            let record = try TXTRecord.parse(bytes)
            let receiver = try ReceiverTXT(record)
            var txt: [String: String] = [:]
            for (key, value) in record.attributes { txt[key] = value ?? "" }
            return .success((receiver, txt))
        } catch {
            return .failure(RejectedRecord(instance: instance, reason: "\(error)"))
        }
    }
}
