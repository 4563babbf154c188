import Crypto
import Foundation
@testable import LyrePairing
import LyreClock
import LyreWire
import Synchronization
import Testing

/// Both ends of pairing, sans I/O, on an injected clock (Protocol/pairing.md §4).
struct PairingTests {
    static let second: UInt64 = 1_000_000_000
    static func party(_ name: String) -> (party: PairingParty, key: Curve25519.Signing.PrivateKey) {
        let key = Curve25519.Signing.PrivateKey()
        return (PairingParty(publicKey: Array(key.publicKey.rawRepresentation), id: DeviceID.random().rawValue, name: name), key)
    }
    static func fingerprint(_ key: [UInt8]) -> String { DeviceID.hex(SHA256.hash(data: key).prefix(8)) }

    let receiver = Self.party("Kitchen").party
    let sender = Self.party("Laptop").party

    /// One whole run; returns what the receiver paired, or the refusal/failure.
    func pair(_ responder: inout PairingResponder, typed: ((String) -> String)? = nil, connection: Int = 1, now: UInt64 = 0,
              advertised: String? = nil) throws -> PairingParty
    {
        var initiator = PairingInitiator(sender: sender, advertisedFingerprint: advertised ?? Self.fingerprint(receiver.publicKey))
        let (reply, pin) = try responder.start(connection: connection, body: initiator.startBody, now: now)
        #expect(PairingProtocol.isPIN(pin))
        #expect(responder.pending(now: now)?.pin == pin)
        #expect(responder.pending(now: now)?.senderName == "Laptop")
        let told = try initiator.started(reply, fingerprint: Self.fingerprint)
        #expect(told == receiver)
        let exchanged = try responder.exchange(connection: connection, body: initiator.exchange(pin: typed?(pin) ?? pin), now: now)
        #expect(responder.pending(now: now) == nil, "a PIN is single-use")
        let confirm = try initiator.finish(exchanged)
        return try responder.confirm(connection: connection, body: confirm, now: now)
    }

    @Test func theRightPINPairsBothSides() throws {
        var responder = PairingResponder(receiver: receiver)
        #expect(try pair(&responder) == sender)
    }

    @Test func aWrongPINFailsAtTheSenderAndCountsAtTheReceiver() throws {
        var responder = PairingResponder(receiver: receiver)
        for attempt in 1...5 {
            #expect(throws: PairingInitiator.Failure.self, "attempt \(attempt)") {
                try pair(&responder, typed: { pin in pin == "000000" ? "000001" : "000000" }, now: UInt64(attempt) * Self.second)
            }
        }
        // Five wrong PINs: locked for a minute, then open again; then two minutes after five more.
        var refusal: PairingRefusal?
        do { _ = try responder.start(connection: 2, body: PairingMessage.Start(senderName: "x").encoded, now: 10 * Self.second) } catch {
            refusal = error
        }
        #expect(refusal?.status == 503)
        #expect(refusal?.retryAfter == 55)
        #expect(try pair(&responder, now: 66 * Self.second) == sender)
    }

    @Test func lockoutsDoubleUntilAPairingSucceeds() throws {
        var responder = PairingResponder(receiver: receiver)
        var now: UInt64 = 0
        func failFive() {
            for _ in 0..<5 {
                _ = try? pair(&responder, typed: { pin in pin == "000000" ? "000001" : "000000" }, now: now)
                // The sender, told its PIN was wrong, hangs up.
                responder.connectionClosed(1)
            }
        }
        func lockedFor() -> Int? {
            do {
                _ = try responder.start(connection: 9, body: PairingMessage.Start(senderName: "x").encoded, now: now)
                responder.connectionClosed(9)
                return nil
            } catch { return error.retryAfter }
        }
        failFive()
        #expect(lockedFor() == 60)
        now += 60 * Self.second
        #expect(lockedFor() == nil)
        failFive()
        #expect(lockedFor() == 120)
        now += 120 * Self.second
        failFive()
        #expect(lockedFor() == 240)
        now += 240 * Self.second
        #expect(try pair(&responder, now: now) == sender)
        failFive()
        #expect(lockedFor() == 60, "a success starts the doubling again")
    }

    @Test func aPINExpiresAfterTwoMinutes() throws {
        var responder = PairingResponder(receiver: receiver)
        var initiator = PairingInitiator(sender: sender, advertisedFingerprint: nil)
        let (reply, pin) = try responder.start(connection: 1, body: initiator.startBody, now: 0)
        _ = try initiator.started(reply, fingerprint: Self.fingerprint)
        #expect(responder.pending(now: 119 * Self.second)?.secondsLeft == 1)
        #expect(responder.pending(now: 120 * Self.second) == nil)
        #expect(throws: PairingRefusal(410, "the PIN expired: pair again for a new one")) {
            try responder.exchange(connection: 1, body: initiator.exchange(pin: pin), now: 120 * Self.second)
        }
    }

    @Test func onePairingAtATime() throws {
        var responder = PairingResponder(receiver: receiver)
        let start = PairingMessage.Start(senderName: "a").encoded
        _ = try responder.start(connection: 1, body: start, now: 0)
        #expect(throws: PairingRefusal.self) { try responder.start(connection: 2, body: start, now: Self.second) }
        // Another connection cannot use the first one's PIN either.
        #expect(throws: PairingRefusal.self) { try responder.exchange(connection: 2, body: [], now: Self.second) }
        // When the first connection goes, the next may pair.
        responder.connectionClosed(1)
        _ = try responder.start(connection: 2, body: start, now: 2 * Self.second)
        // A second start on the same connection makes a new PIN.
        _ = try responder.start(connection: 2, body: start, now: 3 * Self.second)
        #expect(responder.pending(now: 3 * Self.second)?.secondsLeft == 120)
    }

    @Test func pinsAreUniformAndNeverFixed() throws {
        var rules = PairingResponder.Rules()
        rules.attemptsBeforeLockout = .max  // 2000 starts, none confirmed
        var responder = PairingResponder(receiver: receiver, rules: rules)
        var seen = Set<String>()
        var firstDigits = [Int](repeating: 0, count: 10)
        for connection in 0..<2000 {
            let (_, pin) = try responder.start(connection: connection, body: PairingMessage.Start(senderName: "a").encoded, now: 0)
            responder.connectionClosed(connection)
            seen.insert(pin)
            firstDigits[Int(pin.utf8.first! - UInt8(ascii: "0"))] += 1
        }
        // About 2 repeats among 2000 of a million; 20 or more, one run in 10^12 (10, once in 20,000 runs, was the bound).
        #expect(seen.count > 1980, "\(2000 - seen.count) repeated")
        // Each leading digit about 200 times in 2000 (a uniform PIN); 120 is over 5 standard deviations off.
        #expect(firstDigits.allSatisfy { $0 > 120 && $0 < 280 }, "\(firstDigits)")
    }

    @Test func aReceiverWhoseKeyDoesNotMatchItsFingerprintIsRefused() throws {
        var responder = PairingResponder(receiver: receiver)
        #expect(throws: PairingInitiator.Failure.self) { try pair(&responder, advertised: "0123456789abcdef") }
    }

    /// A client cannot hold the one pairing slot by starting again and again, on one connection or on new
    /// ones: each start counts as a run that did not confirm, and five lock pairing as five wrong PINs do.
    @Test func startingAgainAndAgainLocksPairing() throws {
        let start = PairingMessage.Start(senderName: "squatter").encoded
        var responder = PairingResponder(receiver: receiver)
        for restart in 0..<5 { _ = try responder.start(connection: 1, body: start, now: UInt64(restart) * 10 * Self.second) }
        #expect(throws: PairingRefusal.self) { try responder.start(connection: 1, body: start, now: 50 * Self.second) }
        var reconnecting = PairingResponder(receiver: receiver)
        for connection in 0..<5 {
            _ = try reconnecting.start(connection: connection, body: start, now: 0)
            reconnecting.connectionClosed(connection)
        }
        var refusal: PairingRefusal?
        do { _ = try reconnecting.start(connection: 9, body: start, now: 0) } catch { refusal = error }
        #expect(refusal?.status == 503 && refusal?.retryAfter == 60, "\(String(describing: refusal))")
        // The owner who knows the PIN pairs once the lockout is over.
        #expect(try pair(&reconnecting, now: 60 * Self.second) == sender)
    }

    /// The lockout is kept across a restart (the state is saved on the wall clock): a fresh responder that
    /// takes it up still refuses, for what is left of it; a wall clock set back does not lengthen it.
    @Test func aLockoutOutlivesARestart() throws {
        var responder = PairingResponder(receiver: receiver)
        for attempt in 1...5 {
            _ = try? pair(&responder, typed: { pin in pin == "000000" ? "000001" : "000000" }, now: UInt64(attempt) * Self.second)
        }
        // Locked at 5 s on this clock for 60 s, which is 1005 s on the wall clock.
        let saved = responder.lockout(now: 5 * Self.second, wallNow: 1000)
        #expect(saved == Lockout(failures: 0, lockedUntil: 1060, nextLockoutSeconds: 120))
        let start = PairingMessage.Start(senderName: "x").encoded
        var restarted = PairingResponder(receiver: receiver)
        restarted.restore(saved, now: 7 * Self.second, wallNow: 1010)
        var refusal: PairingRefusal?
        do { _ = try restarted.start(connection: 1, body: start, now: 7 * Self.second) } catch { refusal = error }
        #expect(refusal?.status == 503 && refusal?.retryAfter == 50, "\(String(describing: refusal))")
        var setBack = PairingResponder(receiver: receiver)
        setBack.restore(Lockout(failures: 9, lockedUntil: 10_000_000, nextLockoutSeconds: 1 << 40), now: 0, wallNow: 0)
        do { _ = try setBack.start(connection: 1, body: start, now: 0) } catch { refusal = error }
        #expect(refusal?.retryAfter == 24 * 3600, "never longer than the longest lockout: \(String(describing: refusal))")
        // Four unconfirmed runs kept: the next one locks.
        var counted = PairingResponder(receiver: receiver)
        counted.restore(Lockout(failures: 4, lockedUntil: 0, nextLockoutSeconds: 60), now: 0, wallNow: 0)
        _ = try counted.start(connection: 1, body: start, now: 0)
        counted.connectionClosed(1)
        #expect(throws: PairingRefusal.self) { try counted.start(connection: 2, body: start, now: Self.second) }
    }

    @Test func malformedBodiesAreRefusedAndCount() throws {
        var responder = PairingResponder(receiver: receiver)
        #expect(throws: PairingRefusal.self) { try responder.start(connection: 1, body: [0x05, 1], now: 0) }
        for _ in 0..<5 {
            _ = try responder.start(connection: 1, body: PairingMessage.Start(senderName: "a").encoded, now: 0)
            #expect(throws: PairingRefusal.self) { try responder.exchange(connection: 1, body: [1, 2, 3], now: 0) }
        }
        #expect(throws: PairingRefusal.self) { try responder.start(connection: 1, body: PairingMessage.Start(senderName: "a").encoded, now: 0) }
    }

    @Test func pairedDevicesAreKeptPrivately() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-paired-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = PairedDevices(path: directory + "/" + PairedDevices.sendersFile)
        #expect(try store.load().isEmpty)
        try store.add(sender, at: 1)
        try store.add(receiver, at: 2)
        var renamed = sender
        renamed.name = "Laptop 2"
        try store.add(renamed, at: 3)
        #expect(try store.load().map(\.name) == ["Laptop 2", "Kitchen"])
        #expect(try store.find("kitchen")?.publicKeyBytes == receiver.publicKey)
        #expect(try store.find(sender.id)?.name == "Laptop 2")
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try store.remove("KITCHEN")?.id == receiver.id)
        #expect(try store.load().count == 1)
        try Data("not json".utf8).write(to: URL(fileURLWithPath: store.path))
        #expect(throws: PairedDevices.Failure.damaged(path: store.path)) { try store.load() }
    }

    /// Writers at once (two `lyre pair`, a pairing beside `lyre remote unpair`) each keep the other's change:
    /// 32 pairings added from 32 threads, each through its own store, are all there, in a file that reads.
    @Test func pairingsAddedAtOnceAreAllKept() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-paired-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + PairedDevices.sendersFile
        let parties = (0..<32).map { Self.party("Sender \($0)").party }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: parties.count) { index in
            do { try PairedDevices(path: path).add(parties[index], at: index) } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(Set(try PairedDevices(path: path).load().map(\.id)) == Set(parties.map(\.id)))
    }
}

extension PairingTests {
    /// pairing.md §5: at most 256 pairings are kept, newest first; one more drops the oldest. The file holds
    /// each as `{"id", "name", "publicKey" (64 hex digits), "paired" (Unix seconds)}`.
    @Test func atMost256PairingsAreKeptAndTheOldestGoes() throws {
        #expect(PairedDevices.capacity == 256)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-paired-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = PairedDevices(path: directory + "/" + PairedDevices.receiversFile)
        let parties = (0..<258).map { Self.party("Room \($0)").party }
        for (index, party) in parties.enumerated() { try store.add(party, at: 1_700_000_000 + index) }
        let kept = try store.load()
        #expect(kept.count == 256)
        #expect(kept.first?.name == "Room 257" && kept.last?.name == "Room 2")
        #expect(try store.find("Room 1") == nil && store.find("Room 0") == nil)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: store.path))) as? [[String: Any]])
        #expect(json.count == 256)
        let first = try #require(json.first)
        #expect(Set(first.keys) == ["id", "name", "publicKey", "paired"])
        #expect(first["id"] as? String == parties[257].id && first["paired"] as? Int == 1_700_000_257)
        #expect((first["publicKey"] as? String)?.wholeMatch(of: /[0-9a-f]{64}/) != nil, "\(first)")
    }

    /// pairing.md §3: sender and party names are 1 to 63 bytes of UTF-8; a longer one is cut when sent, at a
    /// character boundary, and refused when received.
    @Test func namesAreOneTo63BytesOfUTF8() throws {
        let key = Array(repeating: UInt8(7), count: 32), id = DeviceID.random().rawValue
        func party(_ name: [UInt8]) -> [UInt8] { PrefixFree.cat([key, Array(id.utf8), name]) }
        let longest = String(repeating: "a", count: 63)
        #expect(try PairingParty(parsing: party(Array(longest.utf8))).name == longest)
        #expect(try PairingMessage.Start(parsing: PrefixFree.cat([Array(longest.utf8)])).senderName == longest)
        for bad in [[UInt8](), Array(repeating: 0x61, count: 64), [0x61, 0xff, 0x62]] {
            #expect(throws: PairingMessageError.self, "\(bad.count) bytes") { try PairingParty(parsing: party(bad)) }
            #expect(throws: PairingMessageError.self, "\(bad.count) bytes") { try PairingMessage.Start(parsing: PrefixFree.cat([bad])) }
        }
        // Sent: cut to 63 bytes without splitting "é" (2 bytes): 31 of them.
        let long = String(repeating: "é", count: 40)
        #expect(try PairingMessage.Start(parsing: PairingMessage.Start(senderName: long).encoded).senderName == String(repeating: "é", count: 31))
        #expect(try PairingParty(parsing: PairingParty(publicKey: key, id: id, name: long).encoded).name == String(repeating: "é", count: 31))
    }
}

/// pairing.md §2: the key-confirmation tags are compared in constant time (swift-crypto's
/// `isValidAuthenticationCode`), measured as TimingAuthenticatorTests.tagsAreComparedInConstantTime measures the
/// timing tags: a tag wrong in its first byte against one wrong in its last, beside the same work compared with
/// `==`.
struct KeyConfirmationTimingTests {
    @Test func keyConfirmationTagsAreComparedInConstantTime() {
        let isk = (0..<64).map { UInt8($0) }
        let tag = PairingProtocol.tag(isk: isk, role: "receiver")
        var early = tag, late = tag
        early[0] ^= 1
        late[tag.count - 1] ^= 1
        let leaky = Leakage.readings(over: 20) { Leakage.welchT(early, late) { PairingProtocol.tag(isk: isk, role: "receiver") == $0 } }
        let confirmation = Leakage.readings(under: 10) { Leakage.welchT(early, late) { PairingProtocol.verify($0, isk: isk, role: "receiver") } }
        print("key confirmation: |t| \(confirmation); an early-exit comparison: |t| \(leaky)")
        #expect(leaky.last! > 20, "the measurement did not see an early exit: |t| \(leaky)")
        #expect(confirmation.last! < 10, "key confirmation leaks where the tags differ: |t| \(confirmation)")
    }
}
