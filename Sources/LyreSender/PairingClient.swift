import LyreDiscovery
import LyreIdentity
import LyrePairing
import LyreWire

/// Pairs this sender with a receiver (Protocol/pairing.md §3): `PAIR` start, the PIN the receiver shows,
/// exchange, confirm, over one RTSP connection. Blocks its caller (never an event loop); `pin` is asked for
/// once the receiver shows one.
public enum PairingClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Returns the receiver as it proved itself (its key, id and name), for the caller to keep.
    public static func pair(with route: OutputRoute, as sender: PairingParty, pin: () throws -> String) throws(Failure) -> PairingParty {
        let client: RTSPClient
        do {
            client = try RTSPClient.connected(host: route.host, port: route.port, onRequest: { _, reply in reply(405, []) }, onClose: {})
        } catch { throw Failure(description: error.description) }
        defer { client.close() }
        var initiator = PairingInitiator(sender: sender, advertisedFingerprint: route.keyFingerprint)

        func step(_ step: PairingMessage.Step, _ body: [UInt8]) throws(Failure) -> [UInt8] {
            let answer: RTSPMessage
            do {
                answer = try client.request("PAIR", headers: [(PairingMessage.stepHeader, step.rawValue), ("Content-Type", "application/octet-stream")],
                                            body: body, timeout: 10)
            } catch { throw Failure(description: "\(route) \(error.description)") }
            switch answer.status {
            case 200:
                guard answer.body.count <= PairingMessage.maximumBody else { throw Failure(description: "\(route) answered with an oversized body") }
                return answer.body
            case 405, 501:
                throw Failure(description: "\(route) does not pair (a receiver older than pairing); update its lyred")
            default:
                var message = "\(route) refused pairing: \(answer.headers["Lyre-Error"] ?? "status \(answer.status ?? 0)")"
                if let seconds = answer.headers["Retry-After"] { message += " (in \(seconds) s)" }
                throw Failure(description: message)
            }
        }

        let started = try step(.start, initiator.startBody)
        let receiver: PairingParty
        do { receiver = try initiator.started(started, fingerprint: DeviceKey.fingerprint(of:)) } catch {
            throw Failure(description: "\(route): \(error.description)")
        }
        if let id = route.id, id != receiver.id {
            throw Failure(description: "\(route) answered as another receiver (\(receiver.id)); refusing to pair")
        }
        let typed: String
        do { typed = try pin() } catch { throw Failure(description: "\(error)") }
        guard PairingProtocol.isPIN(typed) else { throw Failure(description: "a PIN is 6 digits; run lyre pair again for a new one") }
        let exchanged = try step(.exchange, initiator.exchange(pin: typed))
        let confirm: [UInt8]
        do { confirm = try initiator.finish(exchanged) } catch { throw Failure(description: error.description) }
        _ = try step(.confirm, confirm)
        return receiver
    }
}
