import Foundation
import Logging
import LyreClock
import LyrePairing
import LyreWire

/// The receiver's pairing (Protocol/pairing.md §4): the `PairingResponder` every connection's `PAIR` requests
/// go to, and the senders it paired, kept in the state directory. Confined to the receiver's event loop, with
/// the registry that owns it.
final class ReceiverPairing {
    private var responder: PairingResponder
    let paired: PairedDevices
    private let logger: Logger
    /// The paired senders' keys, read at start and kept as pairings come and go.
    private var keys: Set<[UInt8]> = []

    init(receiver: PairingParty, pairedSendersPath: String, logger: Logger) {
        responder = PairingResponder(receiver: receiver)
        paired = PairedDevices(path: pairedSendersPath)
        self.logger = logger
        reload()
    }

    var receiverName: String { responder.receiver.name }

    /// Tells senders that pair from now on the receiver's new name.
    func rename(_ name: String) { responder.rename(name) }

    /// Whether a sender holding `key` is paired.
    func isPaired(_ key: [UInt8]) -> Bool { keys.contains(key) }

    /// Forgets the paired sender with id or name `name`.
    func forget(_ name: String) throws(PairedDevices.Failure) -> PairedDevices.Entry? {
        let entry = try paired.remove(name)
        reload()
        return entry
    }

    private func reload() {
        do { keys = Set(try paired.load().map(\.publicKeyBytes)) } catch {
            // A damaged file pairs nobody, and says so; it is not replaced.
            logger.error("\(error)")
            keys = []
        }
    }

    /// One `PAIR` step from connection `connection`: the answer's body, or the refusal.
    func step(_ step: PairingMessage.Step, connection: Int, body: [UInt8], peer: String) -> Result<[UInt8], PairingRefusal> {
        let now = HostClock.now()
        do {
            switch step {
            case .start:
                let (reply, pin) = try responder.start(connection: connection, body: body, now: now)
                let name = responder.pending(now: now)?.senderName ?? "?"
                // The PIN is shown where the receiver's owner looks: the log, and `lyre remote pairing`.
                logger.notice("pairing with '\(name)' at \(peer): PIN \(pin) (valid 2 minutes, once)")
                return .success(reply)
            case .exchange:
                return .success(try responder.exchange(connection: connection, body: body, now: now))
            case .confirm:
                let sender = try responder.confirm(connection: connection, body: body, now: now)
                do {
                    try paired.add(sender)
                    reload()
                } catch {
                    logger.error("paired with '\(sender.name)' but cannot keep it: \(error)")
                    return .failure(PairingRefusal(500, "the receiver cannot keep the pairing: \(error)"))
                }
                logger.notice("paired with '\(sender.name)' (\(sender.id), key \(DeviceID.hex(sender.publicKey.prefix(8)))…)")
                return .success([])
            }
        } catch {
            logger.info("pairing step \(step.rawValue) from \(peer) refused: \(error.status) \(error.message)")
            return .failure(error)
        }
    }

    func connectionClosed(_ connection: Int) { responder.connectionClosed(connection) }

    /// What `lyre remote pairing` shows.
    var pending: PairingResponder.Pending? { responder.pending(now: HostClock.now()) }
}
