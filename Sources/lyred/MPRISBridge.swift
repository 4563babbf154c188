import Dispatch
import Logging
import LyreAudio
import LyreClock
import LyreMPRIS
import LyreReceiver
import LyreWire
import Synchronization

/// Shows the receiver's now-playing state on D-Bus as an MPRIS player, and relays what MPRIS clients
/// (playerctl, desktop media keys, KDE Connect, Home Assistant) ask to the sender (now-playing.md §6).
/// What is shown and what a call becomes is ``MPRISView``'s to decide; this only moves it to and from the bus.
final class MPRISBridge: Sendable {
    /// The player on the bus, put back when the bus restarts; its value is nil while the bus is away.
    private let presence = Mutex<BusReconnector<MPRISPlayer>?>(nil)
    private var player: MPRISPlayer? { presence.withLock { $0 }?.value }
    /// What the player shows and its name: what a player made again after the bus restarts starts from, so
    /// the closure that makes it holds them too.
    private final class Shown: Sendable {
        let view = Mutex(MPRISView())
        let identity: Mutex<String>
        init(identity: String) { self.identity = Mutex(identity) }
    }
    private let shown: Shown
    private let bus: MPRISBus
    private let handler: @Sendable (MPRISCommand, _ reply: @escaping @Sendable (MPRISCommandResult) -> Void) -> Void
    private let logger: Logger

    /// The bus name of the player now (its `.instancePID` form when another owned the name).
    var busName: String { player?.busName ?? "org.mpris.MediaPlayer2.lyred" }

    init(bus: MPRISBus, identity: String, receiver: Receiver, logger: Logger) throws(MPRISError) {
        let box = Mutex<MPRISBridge?>(nil)
        self.bus = bus
        shown = Shown(identity: identity)
        self.logger = logger
        handler = { command, reply in
            guard let bridge = box.withLock({ $0 }), let event = bridge.shown.view.withLock({ $0.event(for: command) }) else {
                reply(.success)  // SetPosition for another track: ignored, as the MPRIS spec says
                return
            }
            Task {
                let outcome = await receiver.send(event)
                if outcome.succeeded {
                    reply(.success)
                } else {
                    logger.notice("MPRIS \(event.command.rawValue) refused: \(outcome.message)")
                    reply(.failed(errorName: MPRISView.errorName(outcome.kind), message: outcome.message))
                }
            }
        }
        box.withLock { $0 = self }
        let (bus, logger, shown, handler) = (bus, logger, shown, handler)
        let made = try BusReconnector<MPRISPlayer>(
            label: "lyred-mpris",
            // A player on the bus, showing the last state.
            make: { lost throws(MPRISError) in
                let made = try MPRISPlayer(bus: bus, identity: shown.identity.withLock { $0 }, handler: handler, onLost: lost)
                made.update(shown.view.withLock { $0.state })
                return made
            },
            close: { $0.close() },
            onLost: { logger.warning("MPRIS: the \(bus.rawValue) bus went away; trying again every second") },
            onBack: { player in logger.notice("MPRIS back on the \(bus.rawValue) bus as \(player.busName)") })
        presence.withLock { $0 = made }
    }

    /// A new snapshot (nil: the session ended).
    func show(_ snapshot: NowPlayingSnapshot?) {
        let (state, seeked) = shown.view.withLock { view in
            let seeked = view.show(snapshot)
            return (view.state, seeked)
        }
        let player = player
        player?.update(state)
        if let seeked { player?.seeked(positionMicroseconds: Int64(seeked * 1e6)) }
    }

    func volumeChanged(_ db: Double) {
        let state = shown.view.withLock { view in
            view.volume = db
            return view.state
        }
        player?.update(state)
    }

    /// What plays over the session changed.
    func overlaysChanged(_ overlays: [ReceiverOverlay]) {
        let state = shown.view.withLock { view in
            view.overlays = overlays
            return view.state
        }
        player?.update(state)
    }

    /// The `Identity` of the receiver named `name`.
    static func identity(_ name: String) -> String { "Lyre receiver \(name)" }

    /// The receiver was renamed (control-api.md §3.1): MPRIS clients see the new name.
    func rename(to name: String) {
        shown.identity.withLock { $0 = Self.identity(name) }
        player?.rename(identity: Self.identity(name))
    }

    func close() {
        presence.withLock { $0 }?.shutdown()
    }
}
