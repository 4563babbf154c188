import Foundation
import Testing

@testable import LyreMPRIS

#if canImport(FoundationXML)
import FoundationXML
#endif

/// What other clients see on the bus: signals (through `dbus-monitor`), property access, introspection, and the
/// answers to bad input (through `dbus-send`).
@Suite(.timeLimit(.minutes(1))) struct MPRISBusProtocolTests {
    private func player(_ name: String, _ log: CommandLog = CommandLog()) throws -> MPRISPlayer {
        try BusClients.requireSessionBus()
        return try MPRISPlayer(bus: .session, name: name, identity: "Lyre test \(name)", handler: log.handler)
    }

    /// The top-level property names of each `PropertiesChanged` in `dbus-monitor` output, in order.
    private func changedProperties(_ monitor: String) -> [[String]] {
        var signals: [[String]] = []
        var lines = monitor.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let line = lines.popFirst() {
            if line.hasPrefix("signal "), line.contains("member=PropertiesChanged") {
                signals.append([])
            } else if line == "      dict entry(", !signals.isEmpty, let key = lines.first,
                key.hasPrefix("         string \"")
            {
                signals[signals.count - 1].append(String(key.dropFirst(17).dropLast()))
            } else if line.hasPrefix("signal ") {
                continue
            }
        }
        return signals
    }

    @Test func updatesEmitOnlyChangedPropertiesAndSeekedEmitsSeeked() async throws {
        let player = try player("lyredsignals")
        defer { player.close() }
        var state = MPRISState.playing()
        player.update(state)

        let monitor = try Child(
            "dbus-monitor",
            ["--session", "type='signal',sender='\(player.busName)',path='/org/mpris/MediaPlayer2'"])
        defer { monitor.terminate() }
        #expect(try await BusClients.eventually { monitor.standardOutput.contains("member=NameLost") })

        state.playbackStatus = .paused
        state.canGoNext = false
        state.positionMicroseconds += 1_000_000  // Position is never announced
        player.update(state)
        player.update(state)  // nothing changed: no signal
        state.rate = 1.5
        player.update(state)
        state.metadata?.title = "So What"
        player.update(state)
        player.seeked(positionMicroseconds: 42_000_000)
        // Until the signal's argument line is in too: dbus-monitor's output can be read between its lines.
        #expect(try await BusClients.eventually { monitor.standardOutput.contains("member=Seeked\n   int64") })
        let output = monitor.standardOutput
        #expect(
            changedProperties(output) == [["PlaybackStatus", "CanGoNext"], ["Rate"], ["Metadata"]], "\(output)")
        #expect(output.contains("string \"So What\""))
        #expect(output.contains("member=Seeked\n   int64 42000000\n"), "\(output)")
        #expect(output.contains("   string \"org.mpris.MediaPlayer2.Player\"\n"))

        let canGoNext = try await BusClients.getPlayerProperty(player.busName, "CanGoNext")
        #expect(canGoNext.standardOutput.contains("variant       boolean false"), "\(canGoNext)")
    }

    @Test func propertiesAnswerGetAndGetAll() async throws {
        let player = try player("lyredproperties")
        defer { player.close() }
        var state = MPRISState.playing()
        state.volume = 0.25
        player.update(state)

        let identity = try await BusClients.send(
            to: player.busName, "org.freedesktop.DBus.Properties.Get", "string:org.mpris.MediaPlayer2",
            "string:Identity")
        #expect(identity.standardOutput.contains("variant       string \"Lyre test lyredproperties\""), "\(identity)")
        let all = try await BusClients.send(
            to: player.busName, "org.freedesktop.DBus.Properties.GetAll", "string:org.mpris.MediaPlayer2.Player")
        for expected in [
            "string \"LoopStatus\"\n         variant             string \"None\"",
            "string \"Volume\"\n         variant             double 0.25",
            "string \"Shuffle\"\n         variant             boolean false",
            "string \"Position\"\n         variant             int64 ",
            "string \"MaximumRate\"\n         variant             double 2",
            "string \"xesam:genre\"",
        ] {
            #expect(all.standardOutput.contains(expected), "\(expected) in \(all)")
        }
        let root = try await BusClients.send(
            to: player.busName, "org.freedesktop.DBus.Properties.GetAll", "string:org.mpris.MediaPlayer2")
        #expect(root.standardOutput.contains("string \"HasTrackList\"\n         variant             boolean false"))
    }

    @Test func introspectionDescribesTheInterfaces() async throws {
        let player = try player("lyredintrospect")
        defer { player.close() }
        let reply = try await BusClients.send(to: player.busName, "org.freedesktop.DBus.Introspectable.Introspect")
        #expect(reply.status == 0, "\(reply)")
        for interface in [
            "org.mpris.MediaPlayer2", "org.mpris.MediaPlayer2.Player", "org.freedesktop.DBus.Properties",
            "org.freedesktop.DBus.Introspectable",
        ] {
            #expect(reply.standardOutput.contains("<interface name=\"\(interface)\">"), "\(interface)")
        }
        #expect(reply.standardOutput.contains("<method name=\"SetPosition\">"))
        #expect(reply.standardOutput.contains("<signal name=\"Seeked\">"))
        let xml = MPRISIntrospection.xml.data(using: .utf8)!
        #expect(XMLParser(data: xml).parse(), "the introspection XML is well-formed")
        // The parent nodes are introspectable too (libdbus lists the children), as d-feet walks them.
        let parent = try await BusClients.run(
            "dbus-send",
            [
                "--session", "--print-reply", "--dest=\(player.busName)", "/org/mpris",
                "org.freedesktop.DBus.Introspectable.Introspect",
            ])
        #expect(parent.standardOutput.contains("<node name=\"MediaPlayer2\"/>"), "\(parent)")
    }

    @Test func badInputIsAnErrorReplyAndThePlayerKeepsAnswering() async throws {
        let (mpris, properties) = ("org.mpris.MediaPlayer2.Player", "org.freedesktop.DBus.Properties")
        let log = CommandLog()
        let player = try player("lyredgarbage", log)
        defer { player.close() }
        player.update(.playing())
        let (get, getAll, set) = ("\(properties).Get", "\(properties).GetAll", "\(properties).Set")
        let (root, playerInterface) = ("string:org.mpris.MediaPlayer2", "string:org.mpris.MediaPlayer2.Player")
        let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        let readOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        let cases: [(arguments: [String], error: String)] = [
            (["\(mpris).Seek", "string:five"], invalidArgs),
            (["\(mpris).Seek"], invalidArgs),
            (["\(mpris).Seek", "int64:1", "int64:2"], invalidArgs),
            (["\(mpris).SetPosition", "string:/x", "int64:1"], invalidArgs),
            (["\(mpris).Play", "int32:1"], invalidArgs),
            ([get, playerInterface], invalidArgs),
            ([get, playerInterface, "string:Colour"], "org.freedesktop.DBus.Error.UnknownProperty"),
            ([get, "string:org.example.Nothing", "string:Rate"], "org.freedesktop.DBus.Error.UnknownInterface"),
            ([getAll, "string:org.example.Nothing"], "org.freedesktop.DBus.Error.UnknownInterface"),
            ([set, playerInterface, "string:Rate", "variant:string:fast"], invalidArgs),
            ([set, playerInterface, "string:Rate", "variant:double:9"], invalidArgs),
            ([set, playerInterface, "string:Volume", "variant:string:loud"], invalidArgs),
            ([set, playerInterface, "string:PlaybackStatus", "variant:string:Paused"], readOnly),
            ([set, playerInterface, "string:Shuffle", "variant:boolean:true"], readOnly),
            ([set, playerInterface, "string:LoopStatus", "variant:string:Track"], readOnly),
            ([set, root, "string:Identity", "variant:string:x"], readOnly),
            (
                [set, playerInterface, "string:Colour", "variant:string:x"],
                "org.freedesktop.DBus.Error.UnknownProperty"
            ),
            (["\(mpris).OpenUri", "string:file:///a.flac"], "org.freedesktop.DBus.Error.NotSupported"),
            (["\(mpris).Eject"], "org.freedesktop.DBus.Error.UnknownMethod"),
            (["org.example.Nothing.Play"], "org.freedesktop.DBus.Error.UnknownMethod"),
        ]
        for (arguments, error) in cases {
            let output = try await BusClients.run(
                "dbus-send",
                ["--session", "--print-reply", "--dest=\(player.busName)", "/org/mpris/MediaPlayer2"] + arguments)
            #expect(output.status != 0 && output.standardError.hasPrefix("Error \(error): "), "\(arguments): \(output)")
        }
        #expect(log.received.isEmpty)
        for method in ["org.mpris.MediaPlayer2.Raise", "org.mpris.MediaPlayer2.Quit", "org.freedesktop.DBus.Peer.Ping"]
        {
            let output = try await BusClients.send(to: player.busName, method)
            #expect(output.status == 0, "\(method): \(output)")
        }
        #expect(try await BusClients.playerctl("lyredgarbage", "status").trimmed == "Playing")
    }
}
