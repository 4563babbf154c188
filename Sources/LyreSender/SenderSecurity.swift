import LyreDiscovery
import LyreIdentity
import LyrePairing
import LyreRTSP
import LyreWire
import NIOSSL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// What a sender proves and pins (Protocol/pairing.md §6): its own key, as a TLS identity, and the keys of
/// the receivers it paired with, by id. A stream to a paired receiver runs over TLS 1.3 and fails unless the
/// receiver holds the key it paired with; to any other receiver it runs in plain RTSP, as before pairing.
public struct SenderSecurity: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The sender's state directory: `$XDG_STATE_HOME/lyre`, else `~/.local/state/lyre`.
    public static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((environment["HOME"] ?? "/tmp") + "/.local/state")
        return base + "/lyre"
    }

    /// This sender as pairing tells it.
    public let identity: PairingParty
    let context: NIOSSLContext
    /// Paired receivers' keys, by id, as read when loaded.
    public let pairedKeys: [String: [UInt8]]

    /// The sender's id and key from `directory` (made there on first use), its TLS identity, and its pairings.
    public static func load(name: String, directory: String = defaultDirectory) throws(Failure) -> SenderSecurity {
        do {
            let id = try DeviceIdentity.loadOrCreate(in: directory)
            let key = try DeviceKey.loadOrCreate(in: directory)
            let paired = try PairedDevices(path: directory + "/" + PairedDevices.receiversFile).load()
            let tls = try TLSIdentity(key: key.privateKey, name: name)
            return SenderSecurity(identity: PairingParty(publicKey: key.publicKeyBytes, id: id.rawValue, name: name),
                                  context: try tls.clientContext(),
                                  pairedKeys: Dictionary(paired.map { ($0.id, $0.publicKeyBytes) }) { first, _ in first })
        } catch let error as DeviceIdentityError {
            throw Failure(description: error.description)
        } catch {
            throw Failure(description: "\(error)")
        }
    }

    /// How to reach `route`: TLS pinned to the key it paired with, or plain when it is not paired. A receiver
    /// that advertises another key than the paired one is refused before anything is sent.
    func connection(to route: OutputRoute) throws(RTSPClient.Failure) -> RTSPClient.PinnedTLS? {
        guard let key = pairedKey(of: route) else { return nil }
        if let advertised = route.keyFingerprint, advertised != DeviceKey.fingerprint(of: key) {
            throw Self.keyChanged(route)
        }
        return RTSPClient.PinnedTLS(context: context, key: key)
    }

    /// The key `route`'s receiver paired with; nil when it is not paired, and its session runs in plain RTSP
    /// and RTP, unencrypted.
    public func pairedKey(of route: OutputRoute) -> [UInt8]? { route.id.flatMap { pairedKeys[$0] } }

    static func keyChanged(_ route: OutputRoute) -> RTSPClient.Failure {
        // Pairing again the way it was reached: by name, or, for a receiver reached at HOST:PORT, by its id
        // and `--host` (a name that is an address names no pairing and no device).
        let byAddress = route.name == route.address
        let forget = byAddress ? (route.id ?? "ID (see lyre pair --list)") : "'\(route.name)'"
        return .keyChanged("its key is not the one paired with (another device may have taken its name and id); "
            + "nothing was sent. If it was reinstalled: lyre pair --forget \(forget), then \(route.pairCommand)")
    }
}

extension OutputRoute {
    /// The command that pairs with this receiver the way it was reached: by name, or, for a receiver reached
    /// at HOST:PORT, with `--host` (a name that is an address names no device).
    public var pairCommand: String { name == address ? "lyre pair --host \(address)" : "lyre pair '\(name)'" }
}
