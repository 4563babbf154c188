/// What `lyre sink` decides, without the sound server or the network (sans I/O): one output (a sink named
/// `lyre_<receiver id>`) per receiver on the network; a stream to a receiver while an app plays into its
/// output; system sounds sent there moved to the local output. Events go in, actions come out; the caller
/// (`lyre sink`) carries the actions out on PulseAudio and LyreSender and reports back what they did.
public struct SinkRouter: Sendable {
    public enum Action: Sendable, Equatable {
        /// Make the receiver's output: a sink called `sinkName`, shown as `description`.
        case loadSink(receiver: String, sinkName: String, description: String)
        /// Remove the receiver's output (its module).
        case unloadSink(receiver: String, module: UInt32)
        /// Move a stream to the machine's own output.
        case moveToLocal(input: UInt32)
        /// Start streaming the output's monitor to the receiver.
        case startStream(receiver: String)
        /// End that stream (TEARDOWN).
        case stopStream(receiver: String)
    }

    /// An output's prefix; the rest is the receiver's id.
    public static let sinkPrefix = "lyre_"

    /// Roles of sounds that belong to this machine, not the living room: PulseAudio's `event` and the
    /// notification roles PipeWire and desktop sessions use.
    public static let localRoles: Set<String> = ["event", "notification", "alert", "alarm"]

    public static func isSystemSound(role: String?) -> Bool {
        role.map { localRoles.contains($0.lowercased()) } ?? false
    }

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

    private var outputs: [String: Output] = [:]
    private var inputs: [UInt32: Input] = [:]

    public init() {}

    public static func sinkName(receiver: String) -> String { sinkPrefix + receiver }

    /// A receiver was found: it gets an output.
    public mutating func receiverAppeared(id: String, name: String) -> [Action] {
        guard outputs[id] == nil else { return [] }
        outputs[id] = Output(name: name)
        return [.loadSink(receiver: id, sinkName: Self.sinkName(receiver: id), description: "\(name) (Lyre)")]
    }

    /// Its output exists now, as module `module` and sink `sink`.
    public mutating func sinkLoaded(receiver: String, module: UInt32, sink: UInt32) -> [Action] {
        guard outputs[receiver] != nil else { return [.unloadSink(receiver: receiver, module: module)] }
        outputs[receiver]?.module = module
        outputs[receiver]?.sink = sink
        // Streams may have been reported before the sink's index was known.
        return inputs.keys.sorted().flatMap { settle(input: $0) } + update(receiver)
    }

    /// The receiver left the network: its stream ends, its streams move to the local output (as from a
    /// headset unplugged), and its output goes.
    public mutating func receiverGone(id: String) -> [Action] {
        guard let output = outputs.removeValue(forKey: id) else { return [] }
        var actions: [Action] = output.streaming ? [.stopStream(receiver: id)] : []
        if let sink = output.sink {
            actions += inputs.filter { $0.value.sink == sink }.keys.sorted().map { .moveToLocal(input: $0) }
        }
        if let module = output.module { actions.append(.unloadSink(receiver: id, module: module)) }
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

    /// The receiver's stream ended on its own (the receiver went away or another sender took it over): the
    /// apps playing into its output move to the local output rather than play to nothing.
    public mutating func streamEnded(receiver: String) -> [Action] {
        guard let output = outputs[receiver], output.streaming else { return [] }
        outputs[receiver]?.streaming = false
        guard let sink = output.sink else { return [] }
        return inputs.filter { $0.value.sink == sink }.keys.sorted().map { .moveToLocal(input: $0) }
    }

    /// The streams playing into a receiver's output, system sounds aside.
    public func appStreams(receiver: String) -> Int {
        guard let sink = outputs[receiver]?.sink else { return 0 }
        return inputs.values.filter { $0.sink == sink && !Self.isSystemSound(role: $0.role) }.count
    }

    /// The stream that speaks for a receiver's output (now playing, and where its controls go): the app stream
    /// that started last there. The sound server numbers streams in the order they start.
    public func nowPlayingInput(receiver: String) -> UInt32? {
        guard let sink = outputs[receiver]?.sink else { return nil }
        return inputs.filter { $0.value.sink == sink && !Self.isSystemSound(role: $0.value.role) }.keys.max()
    }

    public var receivers: [String] { outputs.keys.sorted() }

    /// The sink of a receiver's output, once it exists.
    public func sink(ofReceiver receiver: String) -> UInt32? { outputs[receiver]?.sink }

    /// The receiver whose output is sink `sink`.
    public func receiver(ofSink sink: UInt32) -> String? {
        outputs.first { $0.value.sink == sink }?.key
    }

    /// The receiver's volume (streaming.md: −30…0 dB, −144 for mute) for an output's slider at `decibels`
    /// (libpulse's dB: 0 at 100 %, −∞ at 0 %): muted or under −30 dB is mute, over 0 dB is 0.
    public static func receiverVolume(outputDecibels decibels: Double, muted: Bool) -> Double {
        if muted || !(decibels >= -30) { return -144 }
        return min(decibels, 0)
    }

    private func settle(input index: UInt32) -> [Action] {
        guard let input = inputs[index], Self.isSystemSound(role: input.role),
            outputs.values.contains(where: { $0.sink == input.sink })
        else { return [] }
        return [.moveToLocal(input: index)]
    }

    private mutating func updateSink(_ sink: UInt32) -> [Action] {
        guard let receiver = outputs.first(where: { $0.value.sink == sink })?.key else { return [] }
        return update(receiver)
    }

    private mutating func update(_ receiver: String) -> [Action] {
        guard let output = outputs[receiver] else { return [] }
        let playing = appStreams(receiver: receiver) > 0
        if playing, !output.streaming {
            outputs[receiver]?.streaming = true
            return [.startStream(receiver: receiver)]
        }
        if !playing, output.streaming {
            outputs[receiver]?.streaming = false
            return [.stopStream(receiver: receiver)]
        }
        return []
    }
}
