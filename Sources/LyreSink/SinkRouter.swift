import LyreAudio

/// What `lyre sink` decides, without the sound server or the network (sans I/O): one output (a sink named
/// `lyre_<receiver id>`) per receiver on the network; a stream to a receiver while an app plays into its
/// output; system sounds sent there moved to the local output. With announcements on, each receiver has a
/// second output (`lyre_<receiver id>_announcements`) whose stream plays over what the receiver plays,
/// ducking it (streaming.md §7), and announcements sent to the first output are moved there. Events go in,
/// actions come out; the caller (`lyre sink`) carries the actions out on PulseAudio and LyreSender and
/// reports back what they did.
public struct SinkRouter: Sendable {
    /// One of a receiver's outputs: the one apps play to, or the one whose stream ducks what plays.
    public struct OutputID: Hashable, Comparable, Sendable, CustomStringConvertible {
        public enum Kind: Int, Sendable { case main, announcements }
        public var receiver: String
        public var kind: Kind

        public init(_ receiver: String, _ kind: Kind = .main) {
            self.receiver = receiver
            self.kind = kind
        }

        /// The sink's name on the sound server.
        public var sinkName: String { SinkRouter.sinkPrefix + receiver + (kind == .announcements ? "_announcements" : "") }

        public var description: String { sinkName }

        public static func < (a: Self, b: Self) -> Bool { (a.receiver, a.kind.rawValue) < (b.receiver, b.kind.rawValue) }
    }

    public enum Action: Sendable, Equatable {
        /// Make an output: a sink called `output.sinkName`, shown as `description`.
        case loadSink(OutputID, description: String)
        /// Remove an output (its module).
        case unloadSink(OutputID, module: UInt32)
        /// Move a stream to the machine's own output.
        case moveToLocal(input: UInt32)
        /// Move a stream to another of Lyre's outputs (an announcement to its receiver's announcements output).
        case moveToOutput(input: UInt32, OutputID)
        /// Start streaming the output's monitor to its receiver; an announcements output's stream asks to duck
        /// (`Lyre-Mix: duck`).
        case startStream(OutputID)
        /// End that stream (TEARDOWN).
        case stopStream(OutputID)
    }

    /// An output's prefix; the rest is the receiver's id.
    public static let sinkPrefix = "lyre_"

    /// Roles of sounds that belong to this machine, not the living room: PulseAudio's `event` and the
    /// notification roles PipeWire and desktop sessions use.
    public static let localRoles: Set<String> = ["event", "notification", "alert", "alarm"]

    /// Roles that, with announcements on, play over what the receiver plays instead of staying local or
    /// taking it over (PipeWire's and PulseAudio's names, compared without case).
    public static let announcementRoles: Set<String> = ["announcement", "alert"]

    /// Whether receivers get an announcements output.
    public let announcements: Bool

    struct Output {
        var name: String
        var module: UInt32?
        var sink: UInt32?
        var streaming = false
    }

    struct Input {
        var sink: UInt32
        var role: String?
    }

    private var outputs: [OutputID: Output] = [:]
    private var inputs: [UInt32: Input] = [:]

    public init(announcements: Bool = false) {
        self.announcements = announcements
    }

    /// A sound that stays on this machine: a system sound, unless it is an announcement and those go to
    /// the receivers.
    public func isSystemSound(role: String?) -> Bool {
        guard let role = role?.lowercased(), Self.localRoles.contains(role) else { return false }
        return !isAnnouncement(role: role)
    }

    public func isAnnouncement(role: String?) -> Bool {
        announcements && role.map { Self.announcementRoles.contains($0.lowercased()) } == true
    }

    /// A receiver was found: it gets its output, and its announcements output when those are on (again, if
    /// making it failed).
    public mutating func receiverAppeared(id: String, name: String) -> [Action] {
        var actions: [Action] = []
        for kind in announcements ? [OutputID.Kind.main, .announcements] : [.main] {
            let output = OutputID(id, kind)
            guard outputs[output] == nil else { continue }
            outputs[output] = Output(name: name)
            actions.append(.loadSink(output, description: kind == .main ? "\(name) (Lyre)" : "\(name) announcements (Lyre)"))
        }
        return actions
    }

    /// The output exists now, as module `module` and sink `sink`.
    public mutating func sinkLoaded(_ output: OutputID, module: UInt32, sink: UInt32) -> [Action] {
        guard outputs[output] != nil else { return [.unloadSink(output, module: module)] }
        outputs[output]?.module = module
        outputs[output]?.sink = sink
        // Streams may have been reported before the sink's index was known.
        return inputs.keys.sorted().flatMap { settle(input: $0) } + update(output)
    }

    /// The output could not be made: it is forgotten (the receiver's next change tries again), and the
    /// announcements waiting for it go to the local output.
    public mutating func sinkFailed(_ output: OutputID) -> [Action] {
        outputs.removeValue(forKey: output)
        return inputs.keys.sorted().flatMap { settle(input: $0) }
    }

    /// The receiver left the network: its streams end, the apps playing to its outputs move to the local
    /// output (as from a headset unplugged), and its outputs go.
    public mutating func receiverGone(id: String) -> [Action] {
        var actions: [Action] = []
        for output in [OutputID(id), OutputID(id, .announcements)] {
            guard let state = outputs.removeValue(forKey: output) else { continue }
            if state.streaming { actions.append(.stopStream(output)) }
            if let sink = state.sink {
                actions += inputs.filter { $0.value.sink == sink }.keys.sorted().map { .moveToLocal(input: $0) }
            }
            if let module = state.module { actions.append(.unloadSink(output, module: module)) }
        }
        return actions
    }

    /// A stream appeared or changed (moved, or its properties changed).
    public mutating func inputChanged(index: UInt32, sink: UInt32, role: String?) -> [Action] {
        let before = inputs[index]?.sink
        inputs[index] = Input(sink: sink, role: role)
        var actions = settle(input: index)
        if let before, before != sink { actions += updateSink(before) }
        return actions + updateSink(sink)
    }

    /// A stream ended.
    public mutating func inputRemoved(index: UInt32) -> [Action] {
        guard let input = inputs.removeValue(forKey: index) else { return [] }
        return updateSink(input.sink)
    }

    /// The output's stream ended on its own (the receiver went away, another sender took it over, or it
    /// refused one more announcement): the apps playing into it move to the local output rather than play to
    /// nothing.
    public mutating func streamEnded(_ output: OutputID) -> [Action] {
        guard let state = outputs[output], state.streaming else { return [] }
        outputs[output]?.streaming = false
        guard let sink = state.sink else { return [] }
        return inputs.filter { $0.value.sink == sink }.keys.sorted().map { .moveToLocal(input: $0) }
    }

    /// The streams that play into an output: system sounds aside, and on the main output announcements
    /// aside, which are on their way to the announcements output.
    public func appStreams(_ output: OutputID) -> Int {
        streams(output).count
    }

    /// The stream that speaks for a receiver's output (now playing, and where its controls go): the app stream
    /// that started last there. The sound server numbers streams in the order they start.
    public func nowPlayingInput(receiver: String) -> UInt32? {
        streams(OutputID(receiver)).max()
    }

    public var receivers: [String] { Set(outputs.keys.map(\.receiver)).sorted() }

    /// The sink of an output, once it exists.
    public func sink(of output: OutputID) -> UInt32? { outputs[output]?.sink }

    /// The output that is sink `sink`.
    public func output(ofSink sink: UInt32) -> OutputID? {
        outputs.first { $0.value.sink == sink }?.key
    }

    /// What lyre sink multiplies a main output's recording by, so that its slider lowers what plays once, at
    /// the receiver. The sound server applies a sink's volume before its monitor, which lyre sink records:
    /// PulseAudio and PipeWire both did so here (SinkTests.anOutputsSliderLowersWhatPlaysOnce), and a song at
    /// 50 % came out at −36.1 dB where −18.06 was asked. So the recording is brought back up by the slider's
    /// gain. Under −30 dB or muted the receiver is muted, and the recording is left as it is. An announcements
    /// output's slider is the announcements' own level, which the server's volume already is: 1.
    public static func captureGain(_ kind: OutputID.Kind, outputDecibels decibels: Double, muted: Bool) -> Float {
        guard kind == .main, decibels.isFinite, receiverVolume(outputDecibels: decibels, muted: muted) > VolumePolicy.mute else { return 1 }
        return Float(1 / VolumePolicy.gain(decibels))
    }

    /// The receiver's volume (streaming.md: −30…0 dB, −144 for mute) for an output's slider at `decibels`
    /// (libpulse's dB: 0 at 100 %, −∞ at 0 %): muted or under −30 dB is mute, over 0 dB is 0.
    public static func receiverVolume(outputDecibels decibels: Double, muted: Bool) -> Double {
        if muted || !(decibels >= -30) { return VolumePolicy.mute }
        return min(decibels, 0)
    }

    private func streams(_ output: OutputID) -> [UInt32] {
        guard let sink = outputs[output]?.sink else { return [] }
        return inputs.filter { index, input in
            input.sink == sink && !isSystemSound(role: input.role) && !(output.kind == .main && isAnnouncement(role: input.role))
        }.map(\.key)
    }

    /// Where a stream on one of Lyre's outputs belongs, if not there: a system sound on the local output, an
    /// announcement on its receiver's announcements output once that exists, or on the local output if it
    /// could not be made.
    private func settle(input index: UInt32) -> [Action] {
        guard let input = inputs[index], let output = output(ofSink: input.sink) else { return [] }
        if isSystemSound(role: input.role) { return [.moveToLocal(input: index)] }
        guard output.kind == .main, isAnnouncement(role: input.role) else { return [] }
        let announcements = OutputID(output.receiver, .announcements)
        if sink(of: announcements) != nil { return [.moveToOutput(input: index, announcements)] }
        return outputs[announcements] == nil ? [.moveToLocal(input: index)] : []
    }

    private mutating func updateSink(_ sink: UInt32) -> [Action] {
        guard let output = output(ofSink: sink) else { return [] }
        return update(output)
    }

    private mutating func update(_ output: OutputID) -> [Action] {
        guard let state = outputs[output] else { return [] }
        let playing = appStreams(output) > 0
        if playing, !state.streaming {
            outputs[output]?.streaming = true
            return [.startStream(output)]
        }
        if !playing, state.streaming {
            outputs[output]?.streaming = false
            return [.stopStream(output)]
        }
        return []
    }
}
