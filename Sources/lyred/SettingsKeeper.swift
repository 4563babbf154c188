import Logging
import LyreCommandLine
import LyreDiscovery
import LyreReceiver
import Synchronization

/// Keeps what the page and `lyre remote` change while lyred runs (control-api.md §3): a new name is
/// advertised at once, and both the name and the output delay are written to the config file lyred reads at
/// start (the one it read, else the first place it looks), in place, its comments kept. So a restart keeps
/// them, and a reload (SIGHUP) finds nothing to undo.
final class SettingsKeeper: Sendable {
    private let commandLine: [String]
    private let logger: Logger
    /// The live settings, shared with ``ReloadService``, which compares a reloaded file with them.
    let running: Mutex<Lyred.Live>
    private let parts = Mutex<(receiver: Receiver, advertiser: ReceiverAdvertiser)?>(nil)
    private let mpris = Mutex<MPRISBridge?>(nil)
    /// One change written at a time (the receiver also hands them over one by one): two at once would share
    /// the file beside it.
    private let writing = Mutex<Void>(())

    init(commandLine: [String], running: Lyred.Live, logger: Logger) {
        self.commandLine = commandLine
        self.running = Mutex(running)
        self.logger = logger
    }

    /// What a rename acts on, once lyred has made them.
    func attach(receiver: Receiver, advertiser: ReceiverAdvertiser) {
        parts.withLock { $0 = (receiver, advertiser) }
    }

    /// The MPRIS player, whose `Identity` a rename changes too.
    func attach(mpris: MPRISBridge) {
        self.mpris.withLock { $0 = mpris }
    }

    /// The file settings are written to.
    var path: String { ConfiguredArguments.option("config", in: commandLine) ?? Lyred.defaultConfigPath() ?? Lyred.configCandidates()[0] }

    /// nil when `setting` is in effect and kept; else why not, one line.
    func keep(_ setting: ReceiverSetting) async -> String? {
        switch setting {
        case .name(let name):
            guard let (receiver, advertiser) = parts.withLock({ $0 }) else { return "lyred is still starting; try again" }
            let old = running.withLock { $0.name }
            do { try advertiser.rename(to: name) } catch { return "cannot advertise the name '\(name)': \(error)" }
            await receiver.setName(name)
            mpris.withLock { $0 }?.rename(to: name)
            running.withLock { $0.name = name }
            logger.notice("renamed from '\(old)' to '\(name)'")
            return write("name", name)
        case .outputDelay(let milliseconds):
            running.withLock { $0.outputDelay = milliseconds }
            return write("output-delay", "\(milliseconds)")
        }
    }

    private func write(_ key: String, _ value: String) -> String? {
        if ConfiguredArguments.option(key, in: commandLine) != nil {
            return "changed until lyred restarts: --\(key) on its command line sets it at every start"
        }
        let path = self.path
        // The closure throws nothing: a typed-throws closure's thunk crashed swiftc 6.3.1 at -O here.
        return writing.withLock { _ -> String? in
            do {
                try ConfigFile.set(key, to: value, inFileAt: path, repeatable: Lyred.repeatableKeys)
                logger.info("kept \(key) = \(value) in \(path)")
                return nil
            } catch {
                logger.warning("cannot keep \(key) = \(value): \(error)")
                return "changed until lyred restarts: \(error) (lyred's user must be able to write it)"
            }
        }
    }
}
