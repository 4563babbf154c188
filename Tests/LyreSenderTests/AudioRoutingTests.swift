@testable import LyreSender
import LyreWire
import Synchronization
import Testing

/// Where an app's audio goes, from its category, mode and options (`AudioRouting`), as a table: every
/// category × the options that decide it × a receiver chosen or not.
struct AudioRoutingTests {
    typealias Options = AudioSession.CategoryOptions

    /// The routing table, written out. nil: the combination is refused.
    static let table: [(AudioSession.Category, Options, chosen: Bool, AudioRouting.Destination?)] = [
        (.playback, [], chosen: true, .receivers),
        (.playback, [], chosen: false, .localOutput),
        (.playback, [.mixWithOthers], chosen: true, .receivers),
        (.playback, [.duckOthers], chosen: true, .receivers),
        (.playback, [.allowLyre], chosen: true, nil),
        (.playback, [.defaultToSpeaker], chosen: false, nil),
        (.playAndRecord, [], chosen: true, .voiceOutput),
        (.playAndRecord, [], chosen: false, .voiceOutput),
        (.playAndRecord, [.defaultToSpeaker], chosen: true, .localOutput),
        (.playAndRecord, [.defaultToSpeaker], chosen: false, .localOutput),
        (.playAndRecord, [.allowLyre], chosen: true, .receivers),
        (.playAndRecord, [.allowLyre], chosen: false, .voiceOutput),
        (.playAndRecord, [.allowLyre, .defaultToSpeaker], chosen: true, .receivers),
        (.playAndRecord, [.allowLyre, .defaultToSpeaker], chosen: false, .localOutput),
        (.playAndRecord, [.allowLyre, .duckOthers], chosen: true, .receivers),
        (.ambient, [], chosen: true, .localOutput),
        (.ambient, [], chosen: false, .localOutput),
        (.ambient, [.mixWithOthers], chosen: true, nil),
        (.ambient, [.allowLyre], chosen: true, nil),
        (.soloAmbient, [], chosen: true, .localOutput),
        (.soloAmbient, [], chosen: false, .localOutput),
        (.soloAmbient, [.duckOthers], chosen: true, nil),
        (.soloAmbient, [.defaultToSpeaker], chosen: false, nil),
    ]

    @Test func theTableHolds() {
        for (category, options, chosen, expected) in Self.table {
            let checked = try? AudioRouting.validate(category: category, mode: .default, options: options)
            let destination = checked.map { AudioRouting.destination(.init(category: category, mode: .default, options: $0), receiverChosen: chosen) }
            #expect(destination == expected, "\(category) \(options.rawValue) chosen \(chosen)")
        }
    }

    /// Every category × mode × set of the five options: what is refused says why and names the category;
    /// what is accepted keeps its options and adds `mixWithOthers` where `duckOthers` or
    /// `interruptSpokenAudioAndMixWithOthers` imply it; only `playback` and `playAndRecord` with `allowLyre`
    /// ever reach a receiver, and only a chosen one; the mode never moves audio.
    @Test func everyCombinationIsDecided() {
        var accepted = 0
        for category in AudioSession.Category.allCases {
            for mode in AudioSession.Mode.allCases {
                for bits in 0..<32 {
                    let options = Options(rawValue: UInt(bits))
                    let result = Result { () throws(AudioRouting.InvalidSetting) in try AudioRouting.validate(category: category, mode: mode, options: options) }
                    let local = category == .ambient || category == .soloAmbient
                    let refusedForOptions = (local && !options.isDisjoint(with: [.mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers]))
                        || (category != .playAndRecord && !options.isDisjoint(with: [.allowLyre, .defaultToSpeaker]))
                    let refusedForMode = (mode == .voiceChat && category != .playAndRecord) || (mode == .spokenAudio && local)
                    switch result {
                    case .failure(let refusal):
                        #expect(refusedForOptions || refusedForMode, "\(category) \(mode) \(bits) refused: \(refusal)")
                        #expect(refusal.description.contains(category.rawValue), "\(refusal)")
                    case .success(let set):
                        accepted += 1
                        #expect(!refusedForOptions && !refusedForMode, "\(category) \(mode) \(bits) accepted")
                        #expect(set.isSuperset(of: options))
                        let implied = !options.isDisjoint(with: [.duckOthers, .interruptSpokenAudioAndMixWithOthers])
                        #expect(set == (implied ? options.union(.mixWithOthers) : options))
                        for chosen in [true, false] {
                            let destination = AudioRouting.destination(.init(category: category, mode: mode, options: set), receiverChosen: chosen)
                            let sent = chosen && (category == .playback || (category == .playAndRecord && set.contains(.allowLyre)))
                            #expect((destination == .receivers) == sent, "\(category) \(mode) \(bits) chosen \(chosen): \(destination)")
                            let sameInDefaultMode = AudioRouting.destination(.init(category: category, mode: .default, options: set), receiverChosen: chosen)
                            #expect(destination == sameInDefaultMode)
                        }
                    }
                }
            }
        }
        // playback: 32 × 2 modes that fit, less those with allowLyre or defaultToSpeaker (8 each);
        // playAndRecord: 32 × 3; ambient and soloAmbient: no option, default mode only.
        #expect(accepted == 8 * 2 + 32 * 3 + 1 + 1)
    }

    /// `setCategory` refuses a bad combination and keeps what was set; a change that moves the app's audio
    /// (with a receiver chosen or without) is a route change with reason `.categoryChange`, heard once per
    /// observer; one that does not move it is not; a cancelled observer hears nothing.
    @Test func aCategoryChangeThatMovesTheAudioIsARouteChange() throws {
        let session = AudioSession()
        let heard = Mutex<[OutputRouteChangeReason]>([])
        let id = session.observeRouteChange { reason in heard.withLock { $0.append(reason) } }
        try session.setCategory(.playback)
        #expect(session.destination(receiverChosen: true) == .receivers)
        #expect(heard.withLock { $0 } == [.categoryChange])  // from soloAmbient's local output
        try session.setCategory(.playback, options: .duckOthers)
        #expect(session.categoryOptions == [.duckOthers, .mixWithOthers])
        #expect(heard.withLock { $0 }.count == 1)  // still to the receiver
        #expect(throws: AudioRouting.InvalidSetting.self) { try session.setCategory(.ambient, options: .duckOthers) }
        #expect(session.category == .playback && session.categoryOptions == [.duckOthers, .mixWithOthers])
        try session.setCategory(.playAndRecord, mode: .voiceChat)
        #expect(session.destination(receiverChosen: true) == .voiceOutput)
        #expect(heard.withLock { $0 } == [.categoryChange, .categoryChange])
        try session.setCategory(.playAndRecord, options: .allowLyre)  // moves it only where a receiver is chosen
        #expect(heard.withLock { $0 }.count == 3)
        try session.setCategory(.playAndRecord, options: [.allowLyre, .defaultToSpeaker])  // only where none is
        #expect(heard.withLock { $0 }.count == 4)
        try session.setCategory(.playAndRecord, mode: .voiceChat)
        #expect(heard.withLock { $0 }.count == 5)
        session.cancelObservation(id)
        try session.setCategory(.playAndRecord, mode: .voiceChat, options: .allowLyre)
        #expect(session.destination(receiverChosen: true) == .receivers)
        #expect(heard.withLock { $0 }.count == 5)
    }

    /// The voice output is the local output unless one is set; a local destination names its output.
    @Test func localDestinationsNameTheirOutput() {
        let session = AudioSession()
        session.localOutput = .alsa(pcm: "speakers")
        #expect(session.output(for: .voiceOutput) == .alsa(pcm: "speakers"))
        session.voiceOutput = .alsa(pcm: "headset")
        #expect(session.output(for: .voiceOutput) == .alsa(pcm: "headset"))
        #expect(session.output(for: .localOutput) == .alsa(pcm: "speakers"))
        #expect(session.output(for: .receivers) == nil)
    }
}

/// What an app's options ask of a receiver (streaming.md §7, `Lyre-Mix`): `duckOthers` ducks (it mixes too),
/// `mixWithOthers` mixes, neither takes the receiver over.
@Test func anAppsOptionsAreItsMixRequest() throws {
    #expect(StreamConfiguration.mixing(for: []) == nil)
    #expect(StreamConfiguration.mixing(for: [.allowLyre]) == nil)
    #expect(StreamConfiguration.mixing(for: .mixWithOthers) == .mix)
    #expect(StreamConfiguration.mixing(for: .interruptSpokenAudioAndMixWithOthers) == nil)
    let ducking = try AudioRouting.validate(category: .playback, mode: .default, options: .duckOthers)
    #expect(StreamConfiguration.mixing(for: ducking) == .duck)
    let interrupting = try AudioRouting.validate(category: .playback, mode: .default, options: .interruptSpokenAudioAndMixWithOthers)
    #expect(StreamConfiguration.mixing(for: interrupting) == .mix)
}

/// An app's whole session in its playback's words (streaming.md §7): its mode (`Lyre-Mode`: spoken audio is
/// paused by an interruption), how it meets what plays (`Lyre-Mix`), and whether it interrupts spoken audio
/// (`Lyre-Interrupt`), with or without ducking the rest.
@Test func anAppsSessionIsItsPlaybacksRequest() throws {
    let session = AudioSession()
    var configuration = StreamConfiguration()
    try session.setCategory(.playback, mode: .spokenAudio)
    configuration.take(session)
    #expect(configuration.mode == .spokenAudio && configuration.mixing == nil && !configuration.interruptsSpokenAudio)
    try session.setCategory(.playback, options: .interruptSpokenAudioAndMixWithOthers)
    configuration.take(session)
    #expect(configuration.mode == .default && configuration.mixing == .mix && configuration.interruptsSpokenAudio)
    try session.setCategory(.playback, options: [.interruptSpokenAudioAndMixWithOthers, .duckOthers])
    configuration.take(session)
    #expect(configuration.mixing == .duck && configuration.interruptsSpokenAudio)
    try session.setCategory(.playback, options: .duckOthers)
    configuration.take(session)
    #expect(configuration.mixing == .duck && !configuration.interruptsSpokenAudio)
}

/// The modes an app's session has are the modes a receiver takes in `Lyre-Mode` (streaming.md §3): a mode a
/// sender sends is never one its receiver refuses.
@Test func everyModeIsOneTheWireTakes() {
    #expect(AudioSession.Mode.allCases.map(\.rawValue) == MixRequest.modes)
    #expect(AudioSession.Mode.spokenAudio.rawValue == MixRequest.spokenAudio)
}
