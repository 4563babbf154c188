/// One method call to `/org/mpris/MediaPlayer2`, and what it is answered with: a reply now, or a command for the
/// handler. Every argument is checked against the method's signature first; bad input is an error reply
/// (`InvalidArgs`, `UnknownMethod`, …), never a crash.
struct MethodCall {
    /// What a call is answered with.
    enum Answer: Equatable {
        case reply(ReplyBody)
        case command(MPRISCommand)
    }

    let message: BusMessage
    let identity: String
    /// The state when the call arrived; `Position` is extrapolated to `now`.
    let state: MPRISState
    let now: UInt64

    /// The interface of each method, for calls that name none (allowed by D-Bus).
    private static let interfaceOfMethod: [String: String] = [
        "Introspect": MPRISName.introspectable,
        "Get": MPRISName.properties, "GetAll": MPRISName.properties, "Set": MPRISName.properties,
        "Raise": MPRISName.root, "Quit": MPRISName.root,
        "Next": MPRISName.player, "Previous": MPRISName.player, "Pause": MPRISName.player,
        "PlayPause": MPRISName.player, "Stop": MPRISName.player, "Play": MPRISName.player,
        "Seek": MPRISName.player, "SetPosition": MPRISName.player, "OpenUri": MPRISName.player,
    ]

    /// The player methods without arguments, and the command each sends.
    private static let simpleCommands: [String: MPRISCommand] = [
        "Next": .next, "Previous": .previous, "Pause": .pause, "PlayPause": .playPause, "Stop": .stop, "Play": .play,
    ]

    func answer() -> Answer {
        let member = message.member ?? ""
        let interface = message.interface ?? Self.interfaceOfMethod[member] ?? ""
        var arguments = DBusMessageReader(message)
        switch (interface, member) {
        case (MPRISName.introspectable, "Introspect"):
            return expecting("") { .reply(.values([.string(MPRISIntrospection.xml)])) }
        case (MPRISName.properties, "Get"):
            return expecting("ss") { get(interface: arguments.readString()!, property: arguments.readString()!) }
        case (MPRISName.properties, "GetAll"):
            return expecting("s") { getAll(interface: arguments.readString()!) }
        case (MPRISName.properties, "Set"):
            return expecting("ssv") {
                set(interface: arguments.readString()!, property: arguments.readString()!, to: arguments.readVariant())
            }
        case (MPRISName.root, "Raise"), (MPRISName.root, "Quit"):
            return expecting("") { .reply(.empty) }
        case (MPRISName.player, "Seek"):
            return expecting("x") { .command(.seek(offsetMicroseconds: arguments.readInt64()!)) }
        case (MPRISName.player, "SetPosition"):
            return expecting("ox") { setPosition(track: arguments.readObjectPath()!, to: arguments.readInt64()!) }
        case (MPRISName.player, "OpenUri"):
            return expecting("s") { error(DBusErrorName.notSupported, "\(identity) does not open URIs") }
        case (MPRISName.player, _) where Self.simpleCommands[member] != nil:
            return expecting("") { .command(Self.simpleCommands[member]!) }
        default:
            return error(
                DBusErrorName.unknownMethod,
                "no method \(interface).\(member)(\(message.signature)) on \(MPRISName.objectPath)")
        }
    }

    /// `body`'s answer when the call's arguments have `signature` (so `body` may read them with `!`), else
    /// `InvalidArgs`.
    private func expecting(_ signature: String, _ body: () -> Answer) -> Answer {
        let actual = message.signature
        guard actual == signature else {
            return error(
                DBusErrorName.invalidArgs,
                "\(message.member ?? "") takes arguments (\(signature)), not (\(actual))")
        }
        return body()
    }

    private func error(_ name: String, _ message: String) -> Answer { .reply(.error(name: name, message: message)) }

    // MARK: - org.freedesktop.DBus.Properties

    /// The properties of `interface` (`""` means both MPRIS interfaces); `nil` for an unknown interface.
    private func properties(of interface: String) -> [DBusDictEntry]? {
        switch interface {
        case MPRISName.root: MPRISProperties.root(identity: identity)
        case MPRISName.player: MPRISProperties.player(state, positionAt: now)
        case "": MPRISProperties.root(identity: identity) + MPRISProperties.player(state, positionAt: now)
        case MPRISName.properties, MPRISName.introspectable, MPRISName.peer: []
        default: nil
        }
    }

    private func get(interface: String, property: String) -> Answer {
        guard let properties = properties(of: interface) else { return unknownInterface(interface) }
        guard let entry = properties.first(where: { $0.key == property }) else {
            return unknownProperty(property, interface)
        }
        return .reply(.values([.variant(entry.value)]))
    }

    private func getAll(interface: String) -> Answer {
        guard let properties = properties(of: interface) else { return unknownInterface(interface) }
        return .reply(.values([.dictionary(properties)]))
    }

    private func set(interface: String, property: String, to value: DBusValue?) -> Answer {
        guard let properties = properties(of: interface) else { return unknownInterface(interface) }
        guard properties.contains(where: { $0.key == property }) else { return unknownProperty(property, interface) }
        guard MPRISProperties.writablePlayerProperties.contains(property), interface != MPRISName.root else {
            return error(DBusErrorName.propertyReadOnly, "\(property) is read-only on \(identity)")
        }
        if property == "Volume" {
            guard case .double(let volume) = value, volume.isFinite else { return error(DBusErrorName.invalidArgs, "Volume is a finite double (d)") }
            return .command(.setVolume(min(max(volume, 0), 1)))
        }
        guard case .double(let rate) = value else { return error(DBusErrorName.invalidArgs, "Rate is a double (d)") }
        if rate == 0 { return .command(.pause) }  // the specification: act as though Pause was called
        guard rate.isFinite, rate >= state.minimumRate, rate <= state.maximumRate else {
            return error(
                DBusErrorName.invalidArgs,
                "rate \(rate) is outside MinimumRate...MaximumRate (\(state.minimumRate)...\(state.maximumRate))")
        }
        return .command(.setRate(rate))
    }

    private func unknownInterface(_ interface: String) -> Answer {
        error(DBusErrorName.unknownInterface, "no interface \(interface) on \(MPRISName.objectPath)")
    }

    private func unknownProperty(_ property: String, _ interface: String) -> Answer {
        error(DBusErrorName.unknownProperty, "no property \(property) in interface \(interface)")
    }

    // MARK: - org.mpris.MediaPlayer2.Player

    /// `SetPosition` is ignored (answered with success, as the specification asks) for another track than the
    /// current one, and for a position outside the track.
    private func setPosition(track: String, to position: Int64) -> Answer {
        guard let metadata = state.metadata, track == MPRISProperties.trackID(metadata), position >= 0,
            position <= metadata.lengthMicroseconds ?? .max
        else { return .reply(.empty) }
        return .command(.setPosition(trackID: track, positionMicroseconds: position))
    }
}
