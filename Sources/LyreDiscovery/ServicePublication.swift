import CAvahiClient
import CAvahiCore
import LyreWire
import Logging

/// What `ServicePublication` calls on one avahi stack's entry groups: avahi-client's (`AvahiEntryGroup`, over
/// D-Bus to the daemon) or avahi-core's (`AvahiSEntryGroup`, in this process). Each backend fills it in with its
/// own C functions; a group it makes reports its state changes to `ServicePublication.groupChanged`.
struct EntryGroupCalls {
    /// Whether the stack runs (registered host name), so that a service can be added now.
    var isRunning: () -> Bool
    /// A new, empty group; nil when the stack refused one.
    var new: () -> OpaquePointer?
    var isEmpty: (OpaquePointer) -> Bool
    /// Adds the service under a name to a group, with its TXT; avahi's error code, or 0.
    var add: (OpaquePointer, String, ServiceRegistration, UnsafeMutablePointer<AvahiStringList>?) -> Int32
    /// Replaces the TXT of the service of that name in the group; avahi's error code, or 0.
    var updateTXT: (OpaquePointer, String, ServiceRegistration, UnsafeMutablePointer<AvahiStringList>?) -> Int32
    var reset: (OpaquePointer) -> Void
    var commit: (OpaquePointer) -> Int32
    /// Frees a group, which withdraws its records (goodbye packets).
    var free: (OpaquePointer) -> Void
    /// The stack's last error, which a group's failure is (nil when the stack has stopped).
    var lastError: () -> Int32?
}

/// The receiver's service as one avahi stack publishes it (discovery.md §6): registered when the stack runs,
/// renamed on a conflict found locally or on the network, its TXT rewritten in place, a rename's old name
/// withdrawn only once the new one is established, so browsers see the device renamed and never gone. Both
/// backends publish through it. Touched only on the avahi poll thread or under its lock, as the backend is.
final class ServicePublication {
    private let calls: EntryGroupCalls
    private let events: BackendEvents
    private let logger: Logger
    private var group: OpaquePointer?
    /// The group of the name before a rename, kept until the new name is established and then freed (its
    /// goodbyes sent).
    private var retiring: OpaquePointer?
    private(set) var registration: ServiceRegistration?
    private var currentName: String?

    init(_ calls: EntryGroupCalls, events: BackendEvents, logger: Logger) {
        self.calls = calls
        self.events = events
        self.logger = logger
    }

    /// Publishes `service`; a second publish is a rename: the new name is registered in a group of its own,
    /// and the old one withdrawn once it is established.
    func publish(_ service: ServiceRegistration) {
        registration = service
        currentName = ServiceName.sanitized(service.name)
        if let group, !calls.isEmpty(group) {
            retireOldName()
            retiring = group
            self.group = nil
        }
        if calls.isRunning() { registerIfNeeded() }
    }

    /// Rewrites the TXT in place (discovery.md §6, live changes); kept for the next registration when the
    /// service is not registered now.
    func updateTXT(_ txt: TXTRecord) throws(AvahiError) {
        registration?.txt = txt
        guard let group, let name = currentName, let registration, !calls.isEmpty(group) else { return }
        let list = StringList.make(txt)
        defer { avahi_string_list_free(list) }
        try avahiCheck(calls.updateTXT(group, name, registration, list), "updating the TXT record")
    }

    /// Adds the service to the group and commits it, renaming on a local collision; once the stack runs.
    func registerIfNeeded() {
        guard let registration, let name = currentName else { return }
        if group == nil { group = calls.new() }
        guard let group else {
            // The stack refused a group: its reason is the failure; a stack that is gone says nothing here (its
            // own state change reports it).
            if let code = calls.lastError() { events.publish(.failed(reason: AvahiError(code: code, context: "entry group").message)) }
            return
        }
        guard calls.isEmpty(group) else { return }
        if let committed = addRenamingOnCollision(registration, as: name, to: group) { currentName = committed }
    }

    /// Adds the service under `initial`, renaming it on a local collision (`AVAHI_ERR_COLLISION` at add time,
    /// when the same stack already holds the name), then commits.
    ///
    /// - Returns: the name it was committed under, or `nil` after a failure (already reported to `events`).
    private func addRenamingOnCollision(_ registration: ServiceRegistration, as initial: String, to group: OpaquePointer) -> String? {
        let list = StringList.make(registration.txt)
        defer { avahi_string_list_free(list) }
        var name = initial
        for _ in 0..<100 {
            let result = calls.add(group, name, registration, list)
            if result == AVAHI_ERR_COLLISION {
                let next = ServiceName.alternative(after: name)
                logger.notice("service name '\(name)' is taken; renaming to '\(next)'")
                events.publish(.renamed(from: name, to: next))
                calls.reset(group)
                name = next
                continue
            }
            if result < 0 {
                events.publish(.failed(reason: AvahiError(code: result, context: "adding the service").message))
                return nil
            }
            let committed = calls.commit(group)
            if committed < 0 {
                events.publish(.failed(reason: AvahiError(code: committed, context: "committing the service").message))
                return nil
            }
            return name
        }
        events.publish(.failed(reason: "no free service name after 100 tries"))
        return nil
    }

    /// A group's state changed: a change of the group being retired is ignored; once established, the name a
    /// rename replaced is withdrawn and the new one announced; on a collision with another host that probed
    /// the name first (RFC 6762 §9), the next name is picked, said, and registered.
    func groupChanged(_ g: OpaquePointer, _ state: AvahiEntryGroupState) {
        guard g != retiring else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            retireOldName()
            if let currentName { events.publish(.established(name: currentName)) }
        case AVAHI_ENTRY_GROUP_COLLISION:
            guard let name = currentName else { return }
            let next = ServiceName.alternative(after: name)
            logger.notice("service name '\(name)' collided on the network; renaming to '\(next)'")
            events.publish(.renamed(from: name, to: next))
            currentName = next
            calls.reset(g)
            registerIfNeeded()
        case AVAHI_ENTRY_GROUP_FAILURE:
            if let code = calls.lastError() { events.publish(.failed(reason: AvahiError(code: code, context: "entry group").message)) }
        default:
            break
        }
    }

    /// The stack is (re)establishing its host name: withdraw until it runs again.
    func withdraw() {
        if let group { calls.reset(group) }
        retireOldName()
    }

    /// Frees the groups (goodbye packets), before the stack itself is freed; the registration is kept, to be
    /// registered again when a new stack runs.
    func free() {
        if let group { calls.free(group) }
        group = nil
        retireOldName()
    }

    /// Withdraws the name a rename replaced (goodbye packets).
    private func retireOldName() {
        if let retiring { calls.free(retiring) }
        retiring = nil
    }
}
