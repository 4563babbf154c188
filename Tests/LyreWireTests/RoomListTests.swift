import LyreWire
import Testing

/// The rooms a sender tells each receiver of its playback (streaming.md §3 `room`).
struct RoomListTests {
    @Test func namesCrossTheWireWhole() throws {
        let names = ["Kitchen", "Living Room", "Bed \"Room\" = 2: upstairs", "Küche ☕"]
        let text = RoomList(names).parameters.serialized
        #expect(try RoomList(parsing: TextParameters(parsing: text))?.names == names)
        #expect(try RoomList(parsing: TextParameters(parsing: "volume: -3\r\n")) == nil)
    }

    /// A name is anyone's text: a line break in it cannot add a parameter, and it fits one label.
    @Test func aNameIsMadeFitForALine() throws {
        #expect(RoomList.printable("Den\r\nvolume: 0") == "Den  volume: 0")
        #expect(RoomList.printable(String(repeating: "é", count: 40)).utf8.count <= 63)
        let text = RoomList([RoomList.printable("A\nroom: B")]).parameters.serialized
        #expect(try RoomList(parsing: TextParameters(parsing: text))?.names == ["A room: B"])
    }

    @Test func tooManyOrTooLongIsRefused() {
        let many = TextParameters((0...RoomList.maximumRooms).map { ("room", "R\($0)") })
        #expect(throws: RemoteCommandError.self) { try RoomList(parsing: many) }
        #expect(throws: RemoteCommandError.self) { try RoomList(parsing: TextParameters([("room", String(repeating: "x", count: 64))])) }
        #expect(throws: RemoteCommandError.self) { try RoomList(parsing: TextParameters([("room", "")])) }
        // What a sender makes never exceeds the limits.
        #expect(RoomList((0..<40).map { "R\($0)" }).parameters.entries.count == RoomList.maximumRooms)
    }
}
