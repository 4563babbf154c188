import ArgumentParser
import LyreCommandLine
import LyreDiscovery
import LyreIdentity
import LyrePairing
import LyreSender
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `lyre pair`: pairs this user's sender with a receiver (Protocol/pairing.md), lists and forgets pairings.
struct Pair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pair with a receiver: type the PIN it shows, and each side keeps the other's key.",
        discussion: """
            The receiver shows a fresh 6-digit PIN in its log and through 'lyre remote pairing' on it. The PIN is \
            read from the terminal, or from standard input when that is not one. A PIN works once, for 2 minutes; \
            after 5 wrong PINs the receiver refuses pairing for a minute, then longer.
            """)

    @Argument(help: ArgumentHelp("The receiver, by name or id.", valueName: "NAME"))
    var receiver: String?

    @Option(help: ArgumentHelp("Connect to HOST:PORT directly, without mDNS (the receiver's key is then taken as it comes: compare its fingerprint).", valueName: "HOST:PORT"))
    var host: String?

    @Flag(help: "List the receivers this sender is paired with.")
    var list = false

    @Option(help: ArgumentHelp("Forget the pairing with a receiver, by name or id.", valueName: "NAME"))
    var forget: String?

    @Option(help: "The name the receiver keeps for this sender (default: user@host).")
    var name: String?

    @Option(help: "Seconds to look for the receiver.")
    var timeout: Double = 5

    @OptionGroup var mdns: MDNSOptions

    func validate() throws {
        let actions = [receiver != nil || host != nil, list, forget != nil].filter { $0 }.count
        guard actions == 1 else { throw ValidationError("name a receiver to pair with, or pass --list or --forget NAME") }
        if receiver != nil, host != nil { throw ValidationError("name the receiver or give --host, not both") }
    }

    func run() async throws {
        let paired = SenderState.pairedReceivers
        if list {
            let entries: [PairedDevices.Entry]
            do { entries = try paired.load() } catch { throw CommandFailure("\(error)") }
            guard !entries.isEmpty else { return print("no paired receivers; pair with 'lyre pair NAME'") }
            for entry in entries {
                let key = DeviceKey.fingerprint(of: entry.publicKeyBytes)
                print("\(entry.name)  \(entry.id)  key \(key)  paired \(entry.pairedText)")
            }
            return
        }
        if let forget {
            let entry: PairedDevices.Entry?
            do { entry = try paired.remove(forget) } catch { throw CommandFailure("\(error)") }
            guard let entry else { throw CommandFailure("not paired with '\(forget)'; see lyre pair --list") }
            return print("forgot '\(entry.name)' (\(entry.id)); it keeps this sender until 'lyre remote unpair' there")
        }

        let route: OutputRoute
        if let host {
            route = try RoomSpec(host).directRoute ?? { throw CommandFailure("--host needs HOST:PORT") }()
        } else {
            let resolver = RouteResolver(mode: mdns.mdns, interfaces: mdns.interfaces, timeout: timeout)
            guard let found = try await resolver.routes([RoomSpec(receiver!)]).first else { throw CommandFailure("no receiver found") }
            route = found
        }
        let sender = try SenderState.security(name: name ?? Play.defaultSenderName()).identity
        let result: PairingParty
        do {
            result = try PairingClient.pair(with: route, as: sender) {
                Console.standardError.write("PIN shown by \(route) (its log, or 'lyre remote pairing' there): ")
                guard let line = readLine(strippingNewline: true) else { throw CommandFailure("no PIN was typed") }
                return PathText.trimmed(line)
            }
        } catch { throw CommandFailure("\(error)") }
        do { try paired.add(result) } catch { throw CommandFailure("\(error)") }
        KnownReceivers().remember([OutputRoute(host: route.host, port: route.port, name: result.name, id: result.id)])
        print("paired with '\(result.name)' (\(result.id), key \(DeviceKey.fingerprint(of: result.publicKey)))")
    }
}

/// What the sender keeps in `$XDG_STATE_HOME/lyre`: its id and key (made on first use, as a receiver's are),
/// the receivers it is paired with, the addresses it last found them at.
enum SenderState {
    static var directory: String { SenderSecurity.defaultDirectory }

    static var pairedReceivers: PairedDevices { PairedDevices(path: directory + "/" + PairedDevices.receiversFile) }

    /// This sender's key, TLS identity and pairings, as `name`.
    static func security(name: String) throws -> SenderSecurity {
        do { return try SenderSecurity.load(name: name, directory: directory) } catch { throw CommandFailure("\(error)") }
    }
}
