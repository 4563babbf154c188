import CDBus
import Testing

@testable import LyreMPRIS

/// Position extrapolation and the property values, without a bus.
@Suite struct MPRISStateTests {
    private let anchor: UInt64 = 1_000_000_000_000

    private func state(_ status: MPRISPlaybackStatus, rate: Double = 1, length: Int64? = nil) -> MPRISState {
        var state = MPRISState()
        state.metadata = MPRISMetadata(trackID: "/org/lyre/track/1", lengthMicroseconds: length)
        state.playbackStatus = status
        state.rate = rate
        state.positionMicroseconds = 10_000_000
        state.positionAnchor = anchor
        return state
    }

    @Test func positionAdvancesAtTheRateWhilePlaying() {
        #expect(state(.playing).position(at: anchor + 2_500_000_000) == 12_500_000)
        #expect(state(.playing, rate: 2).position(at: anchor + 1_000_000_000) == 12_000_000)
        #expect(state(.playing, rate: 0.5).position(at: anchor + 1_000_000_000) == 10_500_000)
        // A clock reading before the anchor goes backwards, never below zero.
        #expect(state(.playing).position(at: anchor - 1_000_000_000) == 9_000_000)
        #expect(state(.playing).position(at: anchor - 60_000_000_000) == 0)
    }

    @Test func positionIsFrozenUnlessPlaying() {
        #expect(state(.paused).position(at: anchor + 5_000_000_000) == 10_000_000)
        #expect(state(.stopped).position(at: anchor + 5_000_000_000) == 10_000_000)
    }

    @Test func positionIsClampedToTheTrack() {
        #expect(state(.playing, length: 11_000_000).position(at: anchor + 5_000_000_000) == 11_000_000)
        var negative = state(.paused)
        negative.positionMicroseconds = -5
        #expect(negative.position(at: anchor) == 0)
        #expect(state(.playing, rate: .nan).position(at: anchor + 5_000_000_000) == 10_000_000)
        #expect(state(.playing, rate: .infinity).position(at: anchor + 1) == 10_000_000)
    }

    @Test func theDefaultStateAllowsOnlyControl() {
        let state = MPRISState()
        #expect(state.playbackStatus == .stopped && state.rate == 1 && state.metadata == nil)
        #expect(state.canControl && !state.canPlay && !state.canPause && !state.canSeek)
        #expect(!state.canGoNext && !state.canGoPrevious)
        #expect(MPRISProperties.metadata(nil) == .dictionary([]))
    }

    @Test func metadataLeavesOutWhatIsUnknownAndReplacesAnInvalidTrackID() {
        let metadata = MPRISMetadata(trackID: "not a path", title: "T", trackNumber: 7)
        #expect(
            MPRISProperties.metadata(metadata)
                == .dictionary([
                    DBusDictEntry("mpris:trackid", .objectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")),
                    DBusDictEntry("xesam:title", .string("T")),
                    DBusDictEntry("xesam:trackNumber", .int32(7)),
                ]))
    }

    @Test func customKeysFollowTheStandardOnesInKeyOrderAndEmptyOnesAreLeftOut() {
        var metadata = MPRISMetadata(trackID: "/org/lyre/t", title: "T")
        metadata.custom = ["lyre:overlays": ["Doorbell duck -15.0 dB", "Radio mix"], "lyre:b": [], "lyre:a": ["x"]]
        #expect(
            MPRISProperties.metadata(metadata)
                == .dictionary([
                    DBusDictEntry("mpris:trackid", .objectPath("/org/lyre/t")),
                    DBusDictEntry("xesam:title", .string("T")),
                    DBusDictEntry("lyre:a", .stringArray(["x"])),
                    DBusDictEntry("lyre:overlays", .stringArray(["Doorbell duck -15.0 dB", "Radio mix"])),
                ]))
    }

    @Test func changesListOnlyDifferentValues() {
        var state = MPRISState()
        let before = MPRISProperties.player(state)
        state.volume = 0.5
        state.positionMicroseconds = 99
        state.canSeek = true
        let after = MPRISProperties.player(state)
        #expect(
            MPRISProperties.changes(from: before, to: after) == [
                DBusDictEntry("Volume", .double(0.5)), DBusDictEntry("CanSeek", .boolean(true)),
            ])
        #expect(MPRISProperties.changes(from: after, to: after).isEmpty)
        #expect(!after.contains { $0.key == "Position" })
        #expect(MPRISProperties.player(state, positionAt: 0).contains { $0.key == "Position" })
    }
}

/// How method calls are answered, on messages built without a bus (`dbus_message_new_method_call`).
@Suite struct MethodCallTests {
    private func answer(
        _ interface: String?, _ member: String, _ arguments: [DBusValue] = [], state: MPRISState = .playing()
    ) throws -> MethodCall.Answer {
        let raw = try #require(dbus_message_new_method_call(nil, "/org/mpris/MediaPlayer2", interface, member))
        let message = BusMessage(adopting: raw)
        try #require(DBusMessageWriter.append(arguments, to: raw))
        return MethodCall(message: message, identity: "Lyre", state: state, now: MPRISState.monotonicNow).answer()
    }

    private func errorName(_ answer: MethodCall.Answer) -> String? {
        guard case .reply(.error(let name, _)) = answer else { return nil }
        return name
    }

    @Test func commandsWithAndWithoutAnInterface() throws {
        #expect(try answer("org.mpris.MediaPlayer2.Player", "PlayPause") == .command(.playPause))
        #expect(try answer(nil, "Next") == .command(.next))
        #expect(try answer(nil, "Seek", [.int64(-7)]) == .command(.seek(offsetMicroseconds: -7)))
        #expect(
            try answer(nil, "SetPosition", [.objectPath("/org/lyre/track/3"), .int64(9)])
                == .command(.setPosition(trackID: "/org/lyre/track/3", positionMicroseconds: 9)))
        #expect(try answer("org.mpris.MediaPlayer2", "Raise") == .reply(.empty))
    }

    @Test func setRateChecksTheRangeAndZeroPauses() throws {
        let player = "org.mpris.MediaPlayer2.Player"
        #expect(try answer(nil, "Set", [.string(player), .string("Rate"), .variant(.double(0))]) == .command(.pause))
        #expect(
            try answer(nil, "Set", [.string(player), .string("Rate"), .variant(.double(0.5))])
                == .command(.setRate(0.5)))
        for rate in [0.25, 2.5, .nan, .infinity] {
            #expect(
                errorName(try answer(nil, "Set", [.string(player), .string("Rate"), .variant(.double(rate))]))
                    == "org.freedesktop.DBus.Error.InvalidArgs", "rate \(rate)")
        }
        #expect(
            errorName(try answer(nil, "Set", [.string(player), .string("Rate"), .variant(.int64(1))]))
                == "org.freedesktop.DBus.Error.InvalidArgs")
    }

    /// `playerctl volume 0.5`: Volume may be set, clamped to 0…1 as the specification says; not a number is refused.
    @Test func setVolumeIsClampedToTheRange() throws {
        let player = "org.mpris.MediaPlayer2.Player"
        for (volume, sent) in [(0.5, 0.5), (0.0, 0.0), (-3.0, 0.0), (7.0, 1.0)] {
            #expect(try answer(nil, "Set", [.string(player), .string("Volume"), .variant(.double(volume))]) == .command(.setVolume(sent)), "\(volume)")
        }
        for bad: DBusValue in [.double(.nan), .double(.infinity), .string("loud")] {
            #expect(errorName(try answer(nil, "Set", [.string(player), .string("Volume"), .variant(bad)])) == "org.freedesktop.DBus.Error.InvalidArgs")
        }
    }

    @Test func propertiesOfBothInterfacesAndOfNone() throws {
        guard case .reply(.values(let values)) = try answer(nil, "GetAll", [.string("")]),
            case .dictionary(let all) = values.first
        else { Issue.record("GetAll(\"\") is not a dictionary"); return }
        #expect(all.contains { $0.key == "Identity" } && all.contains { $0.key == "Position" })
        #expect(
            try answer(nil, "GetAll", [.string("org.freedesktop.DBus.Properties")])
                == .reply(.values([.dictionary([])])))
        #expect(
            try answer(nil, "Get", [.string("org.mpris.MediaPlayer2"), .string("Identity")])
                == .reply(.values([.variant(.string("Lyre"))])))
        var stopped = MPRISState()
        stopped.positionMicroseconds = 4
        #expect(
            try answer(nil, "Get", [.string("org.mpris.MediaPlayer2.Player"), .string("Position")], state: stopped)
                == .reply(.values([.variant(.int64(4))])))
    }

    @Test func wrongArgumentsAreInvalidArgs() throws {
        #expect(errorName(try answer(nil, "Seek", [.double(1)])) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(try answer(nil, "Get", [.string("x")])) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(try answer(nil, "Introspect", [.int32(1)])) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(try answer(nil, "Frobnicate")) == "org.freedesktop.DBus.Error.UnknownMethod")
    }
}
