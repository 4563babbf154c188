/// The rooms of a playback, as the sender tells each of them: `room: NAME` lines in a `text/parameters`
/// SET_PARAMETER (streaming.md §3), so that a receiver shows its group.
public struct RoomList: Sendable, Equatable {
    /// The most rooms told, and the longest name (one DNS-SD label).
    public static let maximumRooms = 32
    public static let maximumNameBytes = ServiceName.maximumBytes

    public var names: [String]

    public init(_ names: [String]) { self.names = names }

    /// A receiver's name as it can go on a line: control characters become spaces (a name is anyone's text),
    /// cut to 63 bytes at a character boundary.
    public static func printable(_ name: String) -> String {
        ReceiverTXT.truncated(String(name.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }), bytes: maximumNameBytes)
    }

    public var parameters: TextParameters { TextParameters(names.prefix(Self.maximumRooms).map { ("room", $0) }) }

    /// The `room` entries of `parameters`; nil when there are none. More than 32, or a name over 63 bytes, is refused.
    public init?(parsing parameters: TextParameters) throws(RemoteCommandError) {
        let names = parameters.entries.filter { $0.name == "room" }.map(\.value)
        guard !names.isEmpty else { return nil }
        guard names.count <= Self.maximumRooms else { throw .malformed("at most \(Self.maximumRooms) rooms") }
        guard names.allSatisfy({ !$0.isEmpty && $0.utf8.count <= Self.maximumNameBytes }) else {
            throw .malformed("a room's name is 1 to \(Self.maximumNameBytes) bytes")
        }
        self.names = names
    }
}
