import Crypto
import LyreWire

/// What both ends of a pairing compute the same way (Protocol/pairing.md §3).
public enum PairingProtocol {
    /// PINs have this many digits.
    public static let pinDigits = 6
    /// CI: both long-term keys, the receiver's first, so the generator is bound to the keys being paired.
    static func channelIdentifier(receiver: [UInt8], sender: [UInt8]) -> [UInt8] {
        PrefixFree.cat([Array("lyre-pair-1".utf8), receiver, sender])
    }

    /// Each side's key-confirmation tag: HMAC-SHA-512 under the ISK, over the side's role.
    static func tag(isk: [UInt8], role: String) -> [UInt8] {
        Array(HMAC<SHA512>.authenticationCode(for: Array("lyre-pair-1 confirm \(role)".utf8), using: SymmetricKey(data: isk)))
    }

    /// Whether `tag` is the role's tag under the ISK (swift-crypto compares in constant time).
    static func verify(_ tag: [UInt8], isk: [UInt8], role: String) -> Bool {
        HMAC<SHA512>.isValidAuthenticationCode(tag, authenticating: Array("lyre-pair-1 confirm \(role)".utf8), using: SymmetricKey(data: isk))
    }

    /// A PIN is exactly 6 ASCII digits.
    public static func isPIN(_ text: String) -> Bool {
        text.utf8.count == pinDigits && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}

/// A refusal of a pairing step: the RTSP status, one line that says what to do, and when to try again.
public struct PairingRefusal: Error, Equatable, Sendable {
    public var status: Int
    public var message: String
    /// Seconds until pairing is possible again, for `Retry-After`.
    public var retryAfter: Int?

    public init(_ status: Int, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.message = message
        self.retryAfter = retryAfter
    }
}

/// A receiver's pairing lockout, as kept in its state directory (`pairing-lockout.json`), so that restarting
/// lyred does not give a guesser five more PINs.
public struct Lockout: Codable, Equatable, Sendable {
    /// Runs that did not confirm since the last success or lockout.
    public var failures: Int
    /// When the lockout in force ends, seconds since 1970; 0 for none.
    public var lockedUntil: Int
    /// How long the next lockout lasts, seconds.
    public var nextLockoutSeconds: Int

    public init(failures: Int, lockedUntil: Int, nextLockoutSeconds: Int) {
        self.failures = failures
        self.lockedUntil = lockedUntil
        self.nextLockoutSeconds = nextLockoutSeconds
    }
}

/// The receiver's side of pairing, sans I/O (Protocol/pairing.md §4): one pairing at a time, a fresh PIN for
/// each, single-use and valid for 2 minutes; after 5 runs that did not confirm, pairing is refused for a
/// minute, then two, doubling each time until one succeeds. A run counts as failed from its `start` until it
/// confirms, so a client that starts again and again (to hold the one pairing slot) locks itself out like one
/// that guesses. Connections are told apart by an opaque number; time is the caller's clock in nanoseconds;
/// randomness can be injected for tests. The lockout can be kept across restarts (``lockout(now:wallNow:)``,
/// ``restore(_:now:wallNow:)``).
public struct PairingResponder {
    public struct Rules: Sendable {
        public var pinLifetime: UInt64 = 120 * 1_000_000_000
        public var attemptsBeforeLockout = 5
        public var firstLockout: UInt64 = 60 * 1_000_000_000
        /// Lockouts double up to this.
        public var longestLockout: UInt64 = 24 * 3600 * 1_000_000_000
        public init() {}
    }

    /// What the receiver shows while a pairing waits for its PIN: the `pairing` answer of its control socket
    /// and its web API (control-api.md), which `lyre remote pairing` reads.
    public struct Pending: Codable, Equatable, Sendable {
        public var pin: String
        public var senderName: String
        /// Seconds until the PIN expires.
        public var secondsLeft: Int

        public init(pin: String, senderName: String, secondsLeft: Int) {
            self.pin = pin
            self.senderName = senderName
            self.secondsLeft = secondsLeft
        }

        private enum CodingKeys: String, CodingKey {
            case pin, secondsLeft
            case senderName = "sender"
        }
    }

    private enum Run {
        case idle
        /// A PIN shown, waiting for the sender's share.
        case started(connection: Int, senderName: String, pin: String, sid: [UInt8], expires: UInt64)
        /// The PIN used; waiting for the sender's tag.
        case exchanged(connection: Int, sender: PairingParty, isk: [UInt8], expires: UInt64)
    }

    /// Who the receiver is: its key and id never change, its name may (a receiver renamed while it runs).
    public private(set) var receiver: PairingParty
    public let rules: Rules
    private var run = Run.idle
    private var failures = 0
    private var lockedUntil: UInt64 = 0
    private var nextLockout: UInt64
    private let random: (Int) -> [UInt8]

    public init(receiver: PairingParty, rules: Rules = Rules(), random: @escaping (Int) -> [UInt8] = PairingResponder.systemRandom) {
        self.receiver = receiver
        self.rules = rules
        self.random = random
        nextLockout = rules.firstLockout
    }

    /// The name told to senders that pair from now on.
    public mutating func rename(_ name: String) { receiver.name = name }

    public static func systemRandom(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The PIN to show, while one waits.
    public func pending(now: UInt64) -> Pending? {
        guard case .started(_, let name, let pin, _, let expires) = run, now < expires else { return nil }
        return Pending(pin: pin, senderName: name, secondsLeft: Int((expires - now + 999_999_999) / 1_000_000_000))
    }

    /// `start`: a fresh PIN for `connection`, unless another connection's pairing is under way or pairing is
    /// locked. Returns the answer's body and the PIN to show.
    public mutating func start(connection: Int, body: [UInt8], now: UInt64) throws(PairingRefusal) -> (reply: [UInt8], pin: String) {
        let request: PairingMessage.Start
        do { request = try PairingMessage.Start(parsing: body) } catch { throw PairingRefusal(400, "\(error)") }
        try checkLock(now: now)
        switch run {
        case .started(let owner, _, _, _, let expires) where owner != connection && now < expires:
            throw PairingRefusal(503, "another pairing is under way; try again when it ends", retryAfter: Self.seconds(expires - now))
        case .exchanged(let owner, _, _, let expires) where owner != connection && now < expires:
            throw PairingRefusal(503, "another pairing is under way; try again when it ends", retryAfter: Self.seconds(expires - now))
        default:
            break
        }
        // Counted as failed until it confirms: a run replaced, expired or dropped stays counted.
        fail(now: now)
        let pin = makePIN()
        let sid = random(PairingMessage.sidLength)
        run = .started(connection: connection, senderName: request.senderName, pin: pin, sid: sid, expires: now + rules.pinLifetime)
        return (PairingMessage.Started(sid: sid, receiver: receiver).encoded, pin)
    }

    /// `exchange`: uses the PIN (whatever follows, it is spent) and answers with the receiver's share and tag.
    /// The run stays counted as failed until the sender's tag confirms it.
    public mutating func exchange(connection: Int, body: [UInt8], now: UInt64) throws(PairingRefusal) -> [UInt8] {
        guard case .started(let owner, _, let pin, let sidB, let expires) = run, owner == connection else {
            throw PairingRefusal(455, "no pairing started on this connection: send PAIR start first")
        }
        run = .idle
        guard now < expires else { throw PairingRefusal(410, "the PIN expired: pair again for a new one") }
        let request: PairingMessage.Exchange
        do { request = try PairingMessage.Exchange(parsing: body) } catch { throw PairingRefusal(400, "\(error)") }
        let sid = request.sid + sidB
        let ci = PairingProtocol.channelIdentifier(receiver: receiver.publicKey, sender: request.share.party.publicKey)
        let me = CPace.Party(prs: Array(pin.utf8), ci: ci, sid: sid)
        let msgA = request.share.encoded
        let share = PairingMessage.Share(element: me.share, party: receiver)
        let isk: [UInt8]
        do { isk = try me.sessionKey(peerShare: request.share.element, msgA: msgA, msgB: share.encoded) } catch {
            throw PairingRefusal(400, error.description)
        }
        run = .exchanged(connection: connection, sender: request.share.party, isk: isk, expires: expires)
        return PairingMessage.Exchanged(share: share, tag: PairingProtocol.tag(isk: isk, role: "receiver")).encoded
    }

    /// `confirm`: the sender's tag. Right: the sender is paired (the caller stores it) and the count of
    /// failures starts again. Wrong: a wrong PIN, counted at its start.
    public mutating func confirm(connection: Int, body: [UInt8], now: UInt64) throws(PairingRefusal) -> PairingParty {
        guard case .exchanged(let owner, let sender, let isk, let expires) = run, owner == connection else {
            throw PairingRefusal(455, "no pairing exchanged on this connection")
        }
        run = .idle
        guard now < expires else { throw PairingRefusal(410, "the PIN expired: pair again for a new one") }
        guard let confirm = try? PairingMessage.Confirm(parsing: body), PairingProtocol.verify(confirm.tag, isk: isk, role: "sender") else {
            throw PairingRefusal(403, "wrong PIN: pair again for a new one")
        }
        // The right PIN: whatever this run counted (even a lockout its start began) is forgiven.
        failures = 0
        lockedUntil = 0
        nextLockout = rules.firstLockout
        return sender
    }

    /// The connection closed: its pairing, if any, ends (an exchanged run stays counted as failed).
    public mutating func connectionClosed(_ connection: Int) {
        switch run {
        case .started(let owner, _, _, _, _) where owner == connection: run = .idle
        case .exchanged(let owner, _, _, _) where owner == connection: run = .idle
        default: break
        }
    }

    /// The lockout as it stands, to keep across a restart: `now` on the responder's clock is `wallNow` on the
    /// wall clock (seconds since 1970), which is what a restart (or a reboot, which restarts the monotonic
    /// clock) can compare.
    public func lockout(now: UInt64, wallNow: Int) -> Lockout {
        Lockout(failures: failures, lockedUntil: lockedUntil > now ? wallNow + Self.seconds(lockedUntil - now) : 0,
                nextLockoutSeconds: Self.seconds(nextLockout))
    }

    /// Takes up a kept lockout. What is left of it is measured on the wall clock, never longer than the
    /// longest lockout (a clock set back cannot lengthen it); the counts are kept within the rules.
    public mutating func restore(_ saved: Lockout, now: UInt64, wallNow: Int) {
        let left = min(max(saved.lockedUntil - wallNow, 0), Self.seconds(rules.longestLockout))
        lockedUntil = left > 0 ? now + UInt64(left) * 1_000_000_000 : 0
        failures = min(max(saved.failures, 0), rules.attemptsBeforeLockout - 1)
        let next = UInt64(min(max(saved.nextLockoutSeconds, 0), Self.seconds(rules.longestLockout))) * 1_000_000_000
        nextLockout = min(max(next, rules.firstLockout), rules.longestLockout)
    }

    private func checkLock(now: UInt64) throws(PairingRefusal) {
        guard now < lockedUntil else { return }
        throw PairingRefusal(503, "pairing is locked after \(rules.attemptsBeforeLockout) wrong PINs; try again later",
                             retryAfter: Self.seconds(lockedUntil - now))
    }

    private mutating func fail(now: UInt64) {
        failures += 1
        guard failures >= rules.attemptsBeforeLockout else { return }
        failures = 0
        lockedUntil = now + nextLockout
        nextLockout = min(nextLockout * 2, rules.longestLockout)
    }

    /// A uniform 6-digit PIN: rejection sampling over 3 random bytes.
    private func makePIN() -> String {
        while true {
            let bytes = random(3)
            let value = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
            if value < 16_000_000 {
                let digits = String(value % 1_000_000)
                return String(repeating: "0", count: PairingProtocol.pinDigits - digits.count) + digits
            }
        }
    }

    private static func seconds(_ nanoseconds: UInt64) -> Int { Int((nanoseconds + 999_999_999) / 1_000_000_000) }
}

/// The sender's side of pairing, sans I/O: `start`'s answer, then the PIN, then `exchange`'s answer.
public struct PairingInitiator {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public let sender: PairingParty
    /// The fingerprint the receiver advertised (TXT `pk`), when known: the key it tells must match it.
    public let advertisedFingerprint: String?
    private var sidB: [UInt8] = []
    public private(set) var receiver: PairingParty?
    private var me: CPace.Party?
    private var msgA: [UInt8] = []

    public init(sender: PairingParty, advertisedFingerprint: String?) {
        self.sender = sender
        self.advertisedFingerprint = advertisedFingerprint
    }

    public var startBody: [UInt8] { PairingMessage.Start(senderName: sender.name).encoded }

    /// `start`'s answer: who the receiver says it is, checked against what it advertised.
    public mutating func started(_ body: [UInt8], fingerprint: ([UInt8]) -> String) throws(Failure) -> PairingParty {
        let started: PairingMessage.Started
        do { started = try PairingMessage.Started(parsing: body) } catch { throw Failure(description: "the receiver's answer: \(error)") }
        if let advertisedFingerprint, fingerprint(started.receiver.publicKey) != advertisedFingerprint {
            throw Failure(description: "the receiver's key does not match the fingerprint it advertises: refusing to pair")
        }
        sidB = started.sid
        receiver = started.receiver
        return started.receiver
    }

    /// The `exchange` body for `pin`.
    public mutating func exchange(pin: String, random: (Int) -> [UInt8] = PairingResponder.systemRandom) -> [UInt8] {
        guard let receiver else { preconditionFailure("exchange before start") }
        let sidA = random(PairingMessage.sidLength)
        let ci = PairingProtocol.channelIdentifier(receiver: receiver.publicKey, sender: sender.publicKey)
        let party = CPace.Party(prs: Array(pin.utf8), ci: ci, sid: sidA + sidB)
        me = party
        let share = PairingMessage.Share(element: party.share, party: sender)
        msgA = share.encoded
        return PairingMessage.Exchange(sid: sidA, share: share).encoded
    }

    /// `exchange`'s answer: checks the receiver's tag (a wrong one means a wrong PIN) and returns the
    /// `confirm` body. The receiver is paired once `confirm` is answered 200.
    public func finish(_ body: [UInt8]) throws(Failure) -> [UInt8] {
        guard let me, let receiver else { preconditionFailure("finish before exchange") }
        let answer: PairingMessage.Exchanged
        do { answer = try PairingMessage.Exchanged(parsing: body) } catch { throw Failure(description: "the receiver's answer: \(error)") }
        guard answer.share.party == receiver else { throw Failure(description: "the receiver changed who it is during pairing") }
        let isk: [UInt8]
        do { isk = try me.sessionKey(peerShare: answer.share.element, msgA: msgA, msgB: answer.share.encoded) } catch {
            throw Failure(description: error.description)
        }
        guard PairingProtocol.verify(answer.tag, isk: isk, role: "receiver") else {
            throw Failure(description: "wrong PIN: run lyre pair again for a new one")
        }
        return PairingMessage.Confirm(tag: PairingProtocol.tag(isk: isk, role: "sender")).encoded
    }
}
