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

/// Each command's argument and its range (now-playing.md §4.2), as the control line (§5) writes it and as the
/// wire carries it: what is in range round-trips, what is not is `malformed`.
@Suite struct RemoteCommandArgumentTests {
    func roundTrips(_ event: RemoteCommandEvent) throws -> Bool {
        try RemoteCommandEvent(parsing: TextParameters(parsing: event.parameters.serialized)) == event
    }

    func refused(_ body: String) -> Bool {
        do {
            _ = try RemoteCommandEvent(parsing: TextParameters(parsing: body))
            return false
        } catch { return true }
    }

    /// skipForward/skipBackward: 0 < interval ≤ 3600 s.
    @Test func aSkipIntervalIsAboveZeroAndAtMostAnHour() throws {
        for interval in [0.5, 15, 3600] { #expect(try roundTrips(RemoteCommandEvent(.skipForward, interval: interval)), "\(interval)") }
        for interval in ["0", "-5", "3600.5", "inf", "nan"] {
            #expect(refused("remote-command: skipBackward\r\ninterval: \(interval)\r\n"), "\(interval)")
        }
        #expect(refused("remote-command: skipForward\r\n"))
        #expect(try ControlRequest(line: "skip +3600") == .command(RemoteCommandEvent(.skipForward, interval: 3600)))
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "skip +3601") }
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "skip 0") }
        #expect(throws: RemoteCommandError.malformed("skip-interval must be 0 to 3600 s")) {
            try EnabledCommands(list: "skipForward", skipInterval: "3601")
        }
        #expect(try EnabledCommands(list: "skipForward", skipInterval: "30").skipInterval == 30)
    }

    /// changePlaybackRate: 0 < rate ≤ 32.
    @Test func aRateIsAboveZeroAndAtMost32() throws {
        for rate in [0.25, 1, 32] { #expect(try roundTrips(RemoteCommandEvent(.changePlaybackRate, rate: rate)), "\(rate)") }
        for rate in ["0", "-1", "32.5", "loud"] {
            #expect(refused("remote-command: changePlaybackRate\r\nrate: \(rate)\r\n"), "\(rate)")
        }
        #expect(try ControlRequest(line: "rate 1.5") == .command(RemoteCommandEvent(.changePlaybackRate, rate: 1.5)))
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "rate 33") }
    }

    /// seekForward/seekBackward carry `phase: begin|end`; the control line's `seek-forward begin|end`.
    @Test func aSeekCarriesItsPhase() throws {
        for command in [RemoteCommand.seekForward, .seekBackward] {
            for phase in [SeekPhase.begin, .end] {
                let event = RemoteCommandEvent(command, phase: phase)
                #expect(try roundTrips(event))
                let verb = command == .seekForward ? "seek-forward" : "seek-backward"
                #expect(try ControlRequest(line: "\(verb) \(phase.rawValue)") == .command(event))
            }
            #expect(refused("remote-command: \(command.rawValue)\r\n"))
            #expect(refused("remote-command: \(command.rawValue)\r\nphase: middle\r\n"))
        }
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "seek-forward") }
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "seek-backward sideways") }
    }

    /// changeRepeatMode `repeat-mode: off|one|all`, changeShuffleMode `shuffle-mode: off|items|collection`.
    @Test func repeatAndShuffleCarryTheirModes() throws {
        for mode in RepeatMode.allCases {
            let event = RemoteCommandEvent(.changeRepeatMode, repeatMode: mode)
            #expect(try roundTrips(event))
            #expect(try ControlRequest(line: "repeat \(mode.rawValue)") == .command(event))
        }
        for mode in ShuffleMode.allCases {
            let event = RemoteCommandEvent(.changeShuffleMode, shuffleMode: mode)
            #expect(try roundTrips(event))
            #expect(try ControlRequest(line: "shuffle \(mode.rawValue)") == .command(event))
        }
        #expect(RepeatMode.allCases.map(\.rawValue) == ["off", "one", "all"])
        #expect(ShuffleMode.allCases.map(\.rawValue) == ["off", "items", "collection"])
        #expect(refused("remote-command: changeRepeatMode\r\n"))
        #expect(refused("remote-command: changeRepeatMode\r\nrepeat-mode: twice\r\n"))
        #expect(refused("remote-command: changeShuffleMode\r\nshuffle-mode: songs\r\n"))
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "repeat twice") }
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "shuffle") }
    }

    /// An empty `remote-commands` list accepts nothing.
    @Test func anEmptyListAcceptsNothing() throws {
        #expect(try EnabledCommands(list: "", skipInterval: nil).commands.isEmpty)
        #expect(try EnabledCommands(list: " , ", skipInterval: nil).commands.isEmpty)
    }
}
