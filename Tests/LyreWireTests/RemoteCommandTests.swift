import LyreWire
import Testing

/// The volume a receiver's slider asks for (now-playing.md §4.2, §5): `volume DB` on the control line,
/// `changeVolume` with `volume: DB` on the wire.
@Suite struct RemoteCommandTests {
    @Test func aLevelOnTheControlLineIsChangeVolume() throws {
        #expect(try ControlRequest(line: "volume -12.5") == .command(RemoteCommandEvent(.changeVolume, volume: -12.5)))
        #expect(try ControlRequest(line: "volume 0") == .command(RemoteCommandEvent(.changeVolume, volume: 0)))
        #expect(try ControlRequest(line: "volume mute") == .command(RemoteCommandEvent(.changeVolume, volume: -144)))
        #expect(try ControlRequest(line: "volume -144") == .command(RemoteCommandEvent(.changeVolume, volume: -144)))
        #expect(try ControlRequest(line: "volume up") == .command(RemoteCommandEvent(.volumeUp)))
        #expect(try ControlRequest(line: "volume DOWN") == .command(RemoteCommandEvent(.volumeDown)))
        for bad in ["volume", "volume -31", "volume 1", "volume nan", "volume -50", "volume up down", "volume loud"] {
            #expect(throws: RemoteCommandError.self, "\(bad)") { try ControlRequest(line: bad) }
        }
    }

    @Test func changeVolumeCrossesTheWireAndIsCheckedThere() throws {
        let event = RemoteCommandEvent(.changeVolume, volume: -9.5)
        #expect(event.parameters.serialized == "remote-command: changeVolume\r\nvolume: -9.5\r\n")
        #expect(try RemoteCommandEvent(parsing: event.parameters) == event)
        #expect(throws: RemoteCommandError.malformed("changeVolume needs a volume of -30 to 0 dB, or -144 for mute")) {
            try RemoteCommandEvent(parsing: TextParameters(parsing: "remote-command: changeVolume\r\n"))
        }
        #expect(throws: RemoteCommandError.self) {
            try RemoteCommandEvent(parsing: TextParameters(parsing: "remote-command: changeVolume\r\nvolume: 3\r\n"))
        }
        #expect(try EnabledCommands(list: "volumeUp,volumeDown,changeVolume", skipInterval: nil).commands == [.volumeUp, .volumeDown, .changeVolume])
    }
}
