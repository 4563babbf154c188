/// Another app's MPRIS player, as Lyre watches it on the bus (`lyre sink` bridges it to a receiver).
public struct WatchedPlayer: Sendable, Equatable {
    /// Its well-known name, e.g. `org.mpris.MediaPlayer2.mpv`.
    public var busName: String
    /// The process that owns the name (`GetConnectionUnixProcessID`), once known.
    public var processID: UInt32?
    /// `org.mpris.MediaPlayer2.Identity`, e.g. `mpv Media Player`, once known.
    public var identity: String?
    /// Its `org.mpris.MediaPlayer2.Player` properties; `Position` is extrapolated from the last one read
    /// (``MPRISState/position(at:)``).
    public var state: MPRISState

    public init(busName: String, processID: UInt32? = nil, identity: String? = nil, state: MPRISState = MPRISState()) {
        self.busName = busName
        self.processID = processID
        self.identity = identity
        self.state = state
    }

    /// What follows `org.mpris.MediaPlayer2.` in the bus name, up to an `.instance…` suffix: `mpv`, `firefox`.
    public var shortName: String {
        let rest = busName.dropFirst(MPRISName.busNamePrefix.count)
        return String(rest.split(separator: ".").first ?? rest[...])
    }
}

/// Which MPRIS players are on the bus and what each shows, without the bus (sans I/O): bus events and the
/// answers to its own calls go in, the calls to make and the players' changes come out. The clock is the
/// caller's (`now`, `CLOCK_MONOTONIC` ns), so positions are testable.
///
/// MPRIS never signals `Position`; so it is read again whenever the player says something that moves it (its
/// status, rate or track changed) besides `Seeked`, which carries it.
struct PlayerTracker: Sendable {
    enum Call: Sendable, Equatable {
        /// `org.freedesktop.DBus.ListNames`.
        case listNames
        /// `org.freedesktop.DBus.GetNameOwner(name)`.
        case owner(String)
        /// `org.freedesktop.DBus.GetConnectionUnixProcessID(name)`.
        case processID(String)
        /// `Properties.GetAll(interface)` of the player.
        case allProperties(String, interface: String)
        /// `Properties.Get(Player, Position)` of the player.
        case position(String)
    }

    enum Action: Sendable, Equatable {
        case call(Call)
        /// A player is new or shows something new (only once its player properties are read).
        case changed(WatchedPlayer)
        /// A player left the bus.
        case removed(busName: String)
    }

    /// By well-known name.
    private(set) var players: [String: WatchedPlayer] = [:]
    /// Which players' player properties have been read: only those are reported.
    private var loaded: Set<String> = []
    /// Unique connection name to well-known name: signals come from the unique name.
    private var owners: [String: String] = [:]

    static func isPlayer(_ name: String) -> Bool {
        name.hasPrefix(MPRISName.busNamePrefix) && name.count > MPRISName.busNamePrefix.count
    }

    /// At start: ask for every name on the bus.
    func start() -> [Action] { [.call(.listNames)] }

    /// The answer to `ListNames`.
    mutating func listed(_ names: [String]) -> [Action] {
        names.filter(Self.isPlayer).filter { players[$0] == nil }.sorted().flatMap { appeared($0, owner: nil) }
    }

    /// `NameOwnerChanged(name, old, new)`.
    mutating func ownerChanged(name: String, old: String, new: String) -> [Action] {
        guard Self.isPlayer(name) else { return [] }
        var actions: [Action] = []
        if !old.isEmpty || new.isEmpty { actions += removed(name) }
        if !new.isEmpty { actions += appeared(name, owner: new) }
        return actions
    }

    /// The answer to `GetNameOwner`.
    mutating func owner(of name: String, is unique: String) -> [Action] {
        guard players[name] != nil else { return [] }
        owners = owners.filter { $0.value != name }
        owners[unique] = name
        return []
    }

    mutating func processID(of name: String, is pid: UInt32) -> [Action] {
        guard players[name] != nil else { return [] }
        players[name]?.processID = pid
        return report(name)
    }

    /// The answer to `GetAll` of `interface`.
    mutating func properties(of name: String, interface: String, _ entries: [DBusDictEntry], now: UInt64) -> [Action] {
        guard var player = players[name] else { return [] }
        switch interface {
        case MPRISName.root:
            if case .string(let identity)? = entries.first(where: { $0.key == "Identity" })?.value { player.identity = identity }
        case MPRISName.player:
            MPRISProperties.apply(entries, to: &player.state, now: now)
            loaded.insert(name)
        default:
            return []
        }
        players[name] = player
        return report(name)
    }

    /// `PropertiesChanged(interface, changed, invalidated)` from the connection `sender`.
    mutating func propertiesChanged(sender: String, interface: String, _ changed: [DBusDictEntry], invalidated: [String],
                                    now: UInt64) -> [Action] {
        guard interface == MPRISName.player, let name = owners[sender], var player = players[name] else { return [] }
        let before = player.state
        MPRISProperties.apply(changed, to: &player.state, now: now)
        players[name] = player
        let moved = before.playbackStatus != player.state.playbackStatus || before.rate != player.state.rate
            || before.metadata?.trackID != player.state.metadata?.trackID
            || invalidated.contains("Position") || invalidated.contains("Metadata")
        var actions: [Action] = moved ? [.call(.position(name))] : []
        // A property a player only invalidates is read again whole.
        if invalidated.contains(where: { $0 != "Position" }) { actions.append(.call(.allProperties(name, interface: MPRISName.player))) }
        return actions + (before == player.state ? [] : report(name))
    }

    /// `Seeked(position)` from the connection `sender`.
    mutating func seeked(sender: String, positionMicroseconds: Int64, now: UInt64) -> [Action] {
        guard let name = owners[sender] else { return [] }
        return position(of: name, is: positionMicroseconds, now: now)
    }

    /// The answer to `Get(Position)`, or the position a `Seeked` carried.
    mutating func position(of name: String, is position: Int64, now: UInt64) -> [Action] {
        guard players[name] != nil else { return [] }
        MPRISProperties.apply([DBusDictEntry("Position", .int64(position))], to: &players[name]!.state, now: now)
        return report(name)
    }

    private mutating func appeared(_ name: String, owner: String?) -> [Action] {
        players[name] = WatchedPlayer(busName: name)
        if let owner { owners[owner] = name }
        return [
            owner == nil ? .call(.owner(name)) : nil, .call(.processID(name)),
            .call(.allProperties(name, interface: MPRISName.root)), .call(.allProperties(name, interface: MPRISName.player)),
        ].compactMap { $0 }
    }

    private mutating func removed(_ name: String) -> [Action] {
        owners = owners.filter { $0.value != name }
        guard players.removeValue(forKey: name) != nil else { return [] }
        return loaded.remove(name) == nil ? [] : [.removed(busName: name)]
    }

    private func report(_ name: String) -> [Action] {
        guard loaded.contains(name), let player = players[name] else { return [] }
        return [.changed(player)]
    }
}
