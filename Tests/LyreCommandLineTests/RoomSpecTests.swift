import LyreCommandLine
import LyreWire
import Testing

/// How `--to`, `--host` and `lyre group add` read a room (README "rooms", streaming.md §9.4): a name is the
/// user's and may hold `=`, spaces and quotes; the text after the last `=` is a channel map only when it is one.
struct RoomSpecTests {
    @Test(arguments: [
        ("Kitchen", "Kitchen", ChannelMap.stereo),
        ("Bedroom=mono", "Bedroom", .mono),
        ("Left=left", "Left", .left),
        ("Living Room=right", "Living Room", .right),
        ("Den=mono=", "Den=mono", .stereo),  // a trailing `=` ends a name that itself ends in a map
        ("Den=mono=mono", "Den=mono", .mono),
        ("A=B", "A=B", .stereo),  // not a map: part of the name
        ("Kitchen=", "Kitchen", .stereo),
        ("\"Quoted\" = yes", "\"Quoted\" = yes", .stereo),
        ("Café ☕=left", "Café ☕", .left),
    ])
    func aNameAndItsChannels(text: String, name: String, channels: ChannelMap) throws {
        let room = try RoomSpec(text)
        #expect(room.name == name && room.channels == channels, "\(text) → \(room.name) \(room.channels)")
        #expect(room.hostPort == nil)
    }

    @Test func hostAndPortWithOrWithoutChannels() throws {
        let plain = try RoomSpec("192.0.2.7:7700")
        #expect(plain.hostPort?.0 == "192.0.2.7" && plain.hostPort?.1 == 7700 && plain.channels == .stereo)
        let right = try RoomSpec("[fe80::1%eth0]:7701=right")
        #expect(right.hostPort?.0 == "fe80::1%eth0" && right.hostPort?.1 == 7701 && right.channels == .right)
        #expect(try RoomSpec("kitchen.local").hostPort == nil, "a name without a port is looked up, not dialled")
    }

    @Test(arguments: ["", "=", "=mono", "=left"]) func nothingToNameIsRefused(text: String) {
        #expect(throws: (any Error).self, "'\(text)' was taken as a room") { try RoomSpec(text) }
    }
}
