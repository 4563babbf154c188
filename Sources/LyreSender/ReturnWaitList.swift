/// The rooms of a playback waited for after their receivers were lost, and the one whose return is being tried
/// (issue 27; `lyre play`'s `RoomReturns` drives it). A plain value, so that its rules are tested without a
/// receiver: a room is waited for once however often it is lost; a try that joins ends its wait, unless the
/// user removed the room meanwhile, or the room was lost again while it joined (it is then waited for again,
/// rather than forgotten), or both (it has left, and stays out).
public struct ReturnWaitList: Sendable {
    /// Lost rooms waiting to come back, in the order they were lost.
    public private(set) var waiting: [OutputRoute] = []
    /// The room whose try is joining, and whether it was lost again meanwhile.
    private var joining: (key: String, lostAgain: Bool)?

    public init() {}

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
    /// while its try joins: the try's end decides (`joined`), as the user may have removed it meanwhile.
    public mutating func lost(_ route: OutputRoute) -> Bool {
        let key = Self.key(route)
        if joining?.key == key {
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
    public mutating func trying(_ route: OutputRoute) { joining = (Self.key(route), false) }

    /// The try of `route` joined the playback.
    public mutating func joined(_ route: OutputRoute) -> Joined {
        let key = Self.key(route)
        let lostAgain = joining?.key == key && joining?.lostAgain == true
        joining = nil
        guard waits(for: key) else { return lostAgain ? .removedAndLost : .removedMeanwhile }
        if lostAgain { return .lostAgain }
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

    /// Stops waiting for the rooms `matches` picks; whether there were any.
    public mutating func forget(where matches: (OutputRoute) -> Bool) -> Bool {
        let before = waiting.count
        waiting.removeAll(where: matches)
        return waiting.count != before
    }

    /// Whether `a` and `b` are the same receiver: its id, else its address.
    public static func same(_ a: OutputRoute, _ b: OutputRoute) -> Bool { key(a) == key(b) }

    /// A room's receiver: its id, else its address.
    public static func key(_ route: OutputRoute) -> String { route.id ?? route.address }
}
