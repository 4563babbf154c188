import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Pairing with real components (Protocol/pairing.md): lyred in the test network shows a PIN on its control
/// socket, `lyre pair` finds it by name over mDNS, reads the PIN from its standard input as a script would, and
/// both keep the other's key across restarts. Wrong PINs lock pairing.
@Suite(.serialized)
struct PairingTests {
    struct Receiver {
        let network: TestNetwork
        let state: String
        let socket: String
        var process: Spawned

        init(network: TestNetwork, name: String = "Kitchen") async throws {
            self.network = network
            state = network.scratch.appendingPathComponent("\(name).state").path
            socket = network.scratch.appendingPathComponent("\(name).sock").path
            process = try Self.start(network, name: name, state: state, socket: socket)
        }

        static func start(_ network: TestNetwork, name: String, state: String, socket: String) throws -> Spawned {
            try network.spawn(["lyred", "--name", name, "--port", "7750", "--state-dir", state, "--output", "null",
                               "--control-socket", socket, "--mpris", "off", "--log-level", "info"], name: "lyred-\(name)")
        }

        func waitUntilAdvertised() async {
            let up = await eventually { process.stderr.contains("advertised as") }
            #expect(up, "lyred did not come up: \(process.stderr)")
        }

        mutating func restart() async throws {
            process.signal(SIGTERM)
            try await process.waitForExit(timeout: 10)
            process = try Self.start(network, name: "Kitchen", state: state, socket: socket)
            await waitUntilAdvertised()
        }

        func remote(_ words: [String]) async throws -> Spawned {
            try await network.run(["lyre", "remote", "--socket", socket] + words)
        }

        /// The PIN lyred shows, read from its control socket as a user at the receiver would.
        func pin() async throws -> String? {
            let answer = try await remote(["pairing", "--json"])
            guard answer.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any] else {
                return nil
            }
            return object["pin"] as? String
        }
    }

    /// Runs `lyre pair Kitchen`, typing what `typed` makes of the PIN the receiver shows.
    static func pair(_ receiver: Receiver, typed: (String) -> String = { $0 }) async throws -> Spawned {
        let pair = try receiver.network.spawn(["lyre", "pair", "Kitchen", "--name", "Test sender"], input: true)
        var pin: String?
        _ = try await eventually(timeout: 15) {
            pin = try await receiver.pin()
            return pin != nil || !pair.isRunning
        }
        if let pin {
            #expect(pin.count == 6 && pin.allSatisfy(\.isNumber))
            // The prompt is on the terminal before the PIN is typed.
            #expect(await eventually { pair.stderr.contains("PIN shown by 'Kitchen'") }, "\(pair.stderr)")
            pair.type(typed(pin))
        }
        try await pair.waitForExit(timeout: 20)
        return pair
    }

    @Test func pairingWithTheRightPINSurvivesRestartsOfBothSides() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        var receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()

        let pair = try await Self.pair(receiver)
        #expect(pair.status == 0, "lyre pair: \(pair.stderr)")
        #expect(pair.stdout.contains("paired with 'Kitchen'"), "\(pair.stdout)")
        // No PIN is left to use.
        #expect(try await receiver.pin() == nil)

        // The sender kept the key the receiver advertises (TXT pk), under the receiver's id.
        let devices = try await network.run(["lyre", "devices", "--json", "--timeout", "3"])
        let found = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]] ?? []
        let advertised = try #require(found.first { $0["name"] as? String == "Kitchen" }, "\(devices.stdout)")
        let fingerprint = try #require(advertised["keyFingerprint"] as? String)
        let id = try #require(advertised["id"] as? String)
        var listed = try await network.run(["lyre", "pair", "--list"])
        #expect(listed.stdout.contains("Kitchen  \(id)  key \(fingerprint)"), "\(listed.stdout)")

        // The receiver kept the sender, and still has it after a restart; so does the sender (its files).
        try await receiver.restart()
        let paired = try await receiver.remote(["paired", "--json"])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(paired.stdout.utf8)) as? [[String: Any]], "\(paired.stdout)")
        #expect(entries.count == 1)
        #expect(entries.first?["name"] as? String == "Test sender")
        let senderID = try #require(entries.first?["id"] as? String)
        let senderIDFile = network.scratch.appendingPathComponent("state/lyre/device-id").path
        #expect(try String(contentsOfFile: senderIDFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == senderID)
        for file in ["state/lyre/device-key", "state/lyre/paired-receivers.json", "Kitchen.state/paired-senders.json"] {
            let mode = try FileManager.default.attributesOfItem(atPath: network.scratch.appendingPathComponent(file).path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file) is \(String(mode ?? 0, radix: 8))")
        }
        listed = try await network.run(["lyre", "pair", "--list"])
        #expect(listed.stdout.contains(id))

        // Forgetting, on each side.
        #expect(try await receiver.remote(["unpair", senderID]).status == 0)
        #expect(try await receiver.remote(["paired"]).stdout.contains("no paired senders"))
        let forgot = try await network.run(["lyre", "pair", "--forget", "kitchen"])
        #expect(forgot.status == 0, "\(forgot.stderr)")
        #expect(try await network.run(["lyre", "pair", "--list"]).stdout.contains("no paired receivers"))
    }

    @Test func fiveWrongPINsLockPairing() async throws {
        let network = try TestNetwork()
        defer { network.close() }
        let receiver = try await Receiver(network: network)
        await receiver.waitUntilAdvertised()
        for attempt in 1...5 {
            // A wrong PIN: the one shown, with its last digit changed.
            let pair = try await Self.pair(receiver) { pin in String(pin.dropLast()) + (pin.last == "0" ? "1" : "0") }
            #expect(pair.status != 0, "attempt \(attempt) paired with a wrong PIN")
            // One line: the prompt, then the error after it.
            #expect(pair.stderr.contains("wrong PIN") && pair.stderr.split(separator: "\n").count == 1, "attempt \(attempt): \(pair.stderr)")
        }
        // The sixth is refused before any PIN is shown, with when to try again.
        let locked = try await network.run(["lyre", "pair", "Kitchen"])
        #expect(locked.status != 0)
        let wait = locked.stderr.firstMatch(of: /\(in (\d+) s\)/).flatMap { Int($0.1) }
        #expect(locked.stderr.contains("locked after 5 wrong PINs") && (50...60).contains(wait ?? 0), "\(locked.stderr)")
        #expect(try await receiver.pin() == nil)
        #expect(try await network.run(["lyre", "pair", "--list"]).stdout.contains("no paired receivers"))
        #expect(try await receiver.remote(["paired"]).stdout.contains("no paired senders"))
    }
}
