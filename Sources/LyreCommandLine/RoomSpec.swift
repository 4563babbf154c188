import ArgumentParser
import LyreWire

/// One room as the command line names it: `NAME|ID[=CHANNELS]` (--to, lyre group add) or
/// `HOST:PORT[=CHANNELS]` (--host).
public struct RoomSpec: Sendable {
    public var name: String
    public var channels: ChannelMap
    /// Set when the room is HOST:PORT.
    public var hostPort: (String, UInt16)?

    /// A name is the user's and may hold `=` itself: the text after the last `=` is the channels only when it
    /// is one of `ChannelMap.choices`, and a trailing `=` alone ends a name that itself ends in `=stereo` or the
    /// like (`Den=mono=` is the room `Den=mono`, in stereo).
    public init(_ text: String) throws {
        var name = text
        channels = .stereo
        if let equals = text.lastIndex(of: "=") {
            let suffix = text[text.index(after: equals)...]
            if let map = ChannelMap(parsing: suffix) {
                channels = map
                name = String(text[..<equals])
            } else if suffix.isEmpty {
                name = String(text[..<equals])
            }
        }
        guard !name.isEmpty else { throw ValidationError("'\(text)' names no receiver") }
        self.name = name
        hostPort = HostPort.parse(name)
    }
}
