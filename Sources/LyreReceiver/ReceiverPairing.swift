import FoundationEssentials
import Logging
import LyreClock
import LyrePairing
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// The receiver's pairing (Protocol/pairing.md §4): the `PairingResponder` every connection's `PAIR` requests
/// go to, and the senders it paired, kept in the state directory. Confined to the receiver's event loop, with
/// the registry that owns it.
final class ReceiverPairing {
    private var responder: PairingResponder
    let paired: PairedDevices
    private let logger: Logger
    /// The paired senders' keys, read at start and kept as pairings come and go.
    private var keys: Set<[UInt8]> = []
    /// The lockout, kept beside the paired senders so that a restart does not forget it, and what was last
    /// kept of it.
    private let lockoutFile: LockoutFile
    private var kept: Lockout?

    init(receiver: PairingParty, pairedSendersPath: String, logger: Logger) {
        responder = PairingResponder(receiver: receiver)
        paired = PairedDevices(path: pairedSendersPath)
        lockoutFile = LockoutFile(path: PathText.directory(of: pairedSendersPath) + "/" + LockoutFile.fileName)
        self.logger = logger
        reload()
        do {
            if let saved = try lockoutFile.load() {
                responder.restore(saved, now: HostClock.now(), wallNow: Self.wallClock())
                kept = saved
            }
        } catch {
            // A damaged file must not reset the count a guesser has run up: one more failure locks.
            logger.error("\(error); pairing locks at the next wrong PIN")
            responder.restore(Lockout(failures: .max, lockedUntil: 0, nextLockoutSeconds: 0), now: HostClock.now(), wallNow: Self.wallClock())
        }
    }

    private static func wallClock() -> Int { Int(time(nil)) }

    /// Keeps the lockout when it changed: its count, its next length, or whether one is in force (not each
    /// second of one, so that requests refused while locked write nothing).
    private func keepLockout() {
        let now = responder.lockout(now: HostClock.now(), wallNow: Self.wallClock())
        if let kept, kept.failures == now.failures, kept.nextLockoutSeconds == now.nextLockoutSeconds,
            (kept.lockedUntil == 0) == (now.lockedUntil == 0)
        {
            return
        }
        do {
            try lockoutFile.save(now)
            kept = now
        } catch {
            logger.error("cannot keep the pairing lockout: \(error)")
        }
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
        defer { keepLockout() }
        let now = HostClock.now()
        do {
            switch step {
            case .start:
                let (reply, pin) = try responder.start(connection: connection, body: body, now: now)
                let name = responder.pending(now: now)?.senderName ?? "?"
                // The PIN is shown where the receiver's owner looks: the log, and `lyre remote pairing`.
                logger.notice("pairing with \(Printable.quoted(name)) at \(peer): PIN \(pin) (valid 2 minutes, once)")
                return .success(reply)
            case .exchange:
                return .success(try responder.exchange(connection: connection, body: body, now: now))
            case .confirm:
                let sender = try responder.confirm(connection: connection, body: body, now: now)
                do {
                    try paired.add(sender)
                    reload()
                } catch {
                    logger.error("paired with \(Printable.quoted(sender.name)) but cannot keep it: \(error)")
                    return .failure(PairingRefusal(500, "the receiver cannot keep the pairing: \(error)"))
                }
                logger.notice("paired with \(Printable.quoted(sender.name)) (\(sender.id), key \(DeviceID.hex(sender.publicKey.prefix(8)))…)")
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
