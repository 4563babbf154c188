import LyreWire
import Synchronization

/// Advertises one receiver as `_lyre._tcp` and keeps its TXT record current.
///
/// Status and volume changes rewrite the TXT record in place: the service is never withdrawn for them,
/// so senders see ``RouteChangeReason/deviceChanged``, not a device that leaves and comes back.
public final class ReceiverAdvertiser: Sendable {
    private let backend: any MDNSBackend
    /// The attributes advertised and the name asked for (the network may give it a suffix).
    private let state: Mutex<(receiver: ReceiverTXT, name: String)>
    private let port: UInt16

    /// Which mDNS stack is in use.
    public var mode: MDNSMode { backend.mode }
    /// What happens to the registration: established, renamed on a conflict, suspended, failed.
    public var events: AsyncStream<PublicationEvent> { backend.publicationEvents }
    /// The attributes now advertised.
    public var receiver: ReceiverTXT { state.withLock { $0.receiver } }

    public init(backend: any MDNSBackend, name: String, port: UInt16, receiver: ReceiverTXT) {
        self.backend = backend
        self.port = port
        self.state = Mutex((receiver, name))
    }

    /// Registers the service; events report when it is established.
    public func start() throws(AvahiError) {
        // Under the state lock, so an `update` racing with the start is never lost between reading the TXT
        // and registering it.
        try state.withLock { (state) throws(AvahiError) in
            try backend.publish(ServiceRegistration(name: state.name, port: port, txt: state.receiver.txtRecord))
        }
    }

    /// Advertises under `name` from now on: the old name is withdrawn and the new one registered (as
    /// `Name (2)` if taken), with the same id, so senders see the device renamed, not another device.
    public func rename(to name: String) throws(AvahiError) {
        try state.withLock { (state) throws(AvahiError) in
            state.name = name
            try backend.publish(ServiceRegistration(name: name, port: port, txt: state.receiver.txtRecord))
        }
    }

    /// Changes the advertised status.
    public func setStatus(_ status: ReceiverStatus) throws(AvahiError) {
        try update { $0.status = status }
    }

    /// Changes the advertised volume (dB, −30…0, or −144 for mute).
    public func setVolume(_ volume: Double) throws(AvahiError) {
        try update { $0.volume = volume }
    }

    /// Changes any attribute; the device id cannot change.
    public func update(_ change: (inout ReceiverTXT) -> Void) throws(AvahiError) {
        try state.withLock { (state) throws(AvahiError) in
            let id = state.receiver.deviceID
            change(&state.receiver)
            state.receiver.deviceID = id
            try backend.updateTXT(state.receiver.txtRecord)
        }
    }

    /// How long ``withdraw()`` gives the `st=leaving` announcement to go out before the goodbye.
    public static let leavingAnnouncement = Duration.milliseconds(250)

    /// Leaves the network the fast way: announces `st=leaving` (browsers drop the receiver as soon as they
    /// see it), waits ``leavingAnnouncement`` for that to go out, then withdraws with goodbye packets.
    /// A goodbye alone takes a second to act (RFC 6762 §10.1 keeps the record one more second).
    public func withdraw() async {
        if (try? update({ $0.status = .leaving })) != nil {
            try? await Task.sleep(for: Self.leavingAnnouncement)
        }
        stop()
    }

    /// Withdraws the service at once (goodbye packets) and frees the stack.
    public func stop() { backend.shutdown() }
}
