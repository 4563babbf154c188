/// The rooms of a playback waited for after their receivers were lost, and the one whose return is being tried
/// (issue 27; `lyre play`'s `RoomReturns` drives it). A plain value, so that its rules are tested without a
/// receiver: a room is waited for once however often it is lost; a try that joins ends its wait, unless the
/// user removed the room meanwhile, or the room was lost again while it joined (it is then waited for again,
/// rather than forgotten), or both (it has left, and stays out).
public struct ReturnWaitList: Sendable {
    /// Lost rooms waiting to come back, in the order they were lost.
    public private(set) var waiting: [OutputRoute] = []
    /// The room whose try is joining: whether it was lost again meanwhile, and what the user did to it meanwhile.
    private var joining: (key: String, lostAgain: Bool, change: Reason?)?

    public init() {}

    /// Why a room is no longer waited for.
    public enum Reason: Sendable, Equatable {
        /// The user removed it from the playback.
        case removed
        /// The user added it by hand (by name, or at a new address): it plays, and its loss from then on is a
        /// loss like any other.
        case added
    }

    /// What became of a try that joined.
    public enum Joined: Sendable, Equatable {
        /// It is back; it is no longer waited for.
        case back
        /// The user removed it while it joined: it should leave again, as they asked.
        case removedMeanwhile
        /// It was lost again while it joined: it is still waited for, as a new loss.
        case lostAgain
        /// The user removed it, and it was lost again, while it joined (in either order): it has left already,
        /// and is not waited for.
        case removedAndLost
    }

    /// `route` was lost. False when it is waited for already (the same receiver: its id, else its address), and
    /// when the user removed it while its try joins: the try's end decides (`joined`).
    public mutating func lost(_ route: OutputRoute) -> Bool {
        let key = Self.key(route)
        if joining?.key == key, waits(for: key) || joining?.change == .removed {
            joining?.lostAgain = true
            return false
        }
        guard !waits(for: key) else { return false }
        waiting.append(route)
        return true
    }

    /// mDNS saw the receiver `id` at `host`:`port`: a room waiting for it is tried there. False when none waits.
    public mutating func seen(id: String, host: String, port: UInt16) -> Bool {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return false }
        waiting[index].host = host
        waiting[index].port = port
        return true
    }

    /// A try of `route` starts.
    public mutating func trying(_ route: OutputRoute) { joining = (Self.key(route), false, nil) }

    /// The try of `route` joined the playback.
    public mutating func joined(_ route: OutputRoute) -> Joined {
        let key = Self.key(route)
        let attempt = joining?.key == key ? joining : nil
        joining = nil
        let lostAgain = attempt?.lostAgain == true
        if attempt?.change == .removed { return lostAgain ? .removedAndLost : .removedMeanwhile }
        // Marked only while it was waited for (added by hand meanwhile: since), and it still is.
        if lostAgain { return .lostAgain }
        // Added by hand meanwhile, it is back all the same (and waited for no more if lost since).
        guard waits(for: key) || attempt?.change == .added else { return .removedMeanwhile }
        waiting.removeAll { Self.key($0) == key }
        return .back
    }

    /// The try of `route` failed: it is still waited for, when it was. Whether it was.
    public mutating func failed(_ route: OutputRoute) -> Bool {
        joining = nil
        return isWaiting(route)
    }

    public func isWaiting(_ route: OutputRoute) -> Bool { waits(for: Self.key(route)) }

    private func waits(for key: String) -> Bool { waiting.contains { Self.key($0) == key } }

    /// Stops waiting for the rooms `matches` picks, for `reason`; whether there were any. The room being tried
    /// keeps the reason for its try's end.
    public mutating func forget(_ reason: Reason, where matches: (OutputRoute) -> Bool) -> Bool {
        let forgotten = waiting.filter(matches)
        waiting.removeAll(where: matches)
        if let key = joining?.key, forgotten.contains(where: { Self.key($0) == key }) {
            joining?.change = reason
            // Added by hand, it plays: a loss before that is over; one after it counts anew (`lost`).
            if reason == .added { joining?.lostAgain = false }
        }
        return !forgotten.isEmpty
    }

    /// Whether `a` and `b` are the same receiver: its id, else its address.
    public static func same(_ a: OutputRoute, _ b: OutputRoute) -> Bool { key(a) == key(b) }

    /// A room's receiver: its id, else its address.
    public static func key(_ route: OutputRoute) -> String { route.id ?? route.address }
}
