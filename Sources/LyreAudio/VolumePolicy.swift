#if canImport(Glibc)
import Glibc
#endif

/// What a receiver's volume moves (`lyred --volume-control`).
public enum VolumeControl: Sendable, Equatable, CustomStringConvertible {
    /// The playback volume control of the output's card or sound server when it has one, else a gain on the
    /// samples.
    case auto
    /// A gain on the samples; no mixer is touched (the card's level stays where its owner set it).
    case software
    /// That mixer control of the output (`mixer:Speaker`); an output without it cannot be opened.
    case mixer(String)
    /// Nothing: the output plays at full level whatever the volume, for an amplifier whose own knob sets
    /// it. The volume is still kept and reported, so that senders' sliders stay where they were put.
    case none

    /// Parses `auto`, `software`, `none` or `mixer:NAME`.
    public init?(_ text: String) {
        switch text {
        case "auto": self = .auto
        case "software": self = .software
        case "none": self = .none
        default:
            guard text.hasPrefix("mixer:"), text.count > 6 else { return nil }
            self = .mixer(String(text.dropFirst(6)))
        }
    }

    public var description: String {
        switch self {
        case .auto: "auto"
        case .software: "software"
        case .none: "none"
        case .mixer(let name): "mixer:\(name)"
        }
    }

    /// Whether the output's mixer is opened at all: nil for none, an empty name for the preferred control.
    var mixerControl: String?? {
        switch self {
        case .auto: .some(nil)
        case .mixer(let name): .some(name)
        case .software, .none: nil
        }
    }
}

/// How the volume senders set (dB on the RAOP scale: 0 is full, −30 the quietest step, −144 mutes) becomes
/// the level the output plays, in one place: `lyred --max-volume-db` and `--volume-control`.
public struct VolumePolicy: Sendable, Equatable {
    /// The volumes senders set: −30…0 dB, or ``mute``.
    public static let range: ClosedRange<Double> = -30...0
    public static let mute = -144.0

    /// What the volume moves.
    public var control: VolumeControl
    /// The level a sender's full volume plays at, dB (−30…0): every volume plays this much lower, so the
    /// sender's whole slider still has its 30 dB of travel, under the cap.
    public var maximumDB: Double

    public init(control: VolumeControl = .auto, maximumDB: Double = 0) {
        self.control = control
        self.maximumDB = maximumDB
    }

    /// The level the output plays for volume `db`, dB: `db + maximumDB`; a mute stays a mute.
    public func outputLevel(for db: Double) -> Double {
        db <= Self.mute ? Self.mute : min(db, 0) + min(maximumDB, 0)
    }

    /// What the output does for volume `db`: set a mixer, scale the samples by a gain, or neither.
    /// `mixerTook` says whether the sink's mixer accepted the level (asked only when the policy uses one).
    public func apply(_ db: Double, mixerTook: (Double) -> Bool) -> (gain: Double, onMixer: Bool) {
        let level = outputLevel(for: db)
        switch control {
        case .none: return (1, false)
        case .software: return (Self.gain(level), false)
        case .auto, .mixer: return mixerTook(level) ? (1, true) : (Self.gain(level), false)
        }
    }

    /// The linear gain of `level` dB; 0 for a mute.
    public static func gain(_ level: Double) -> Double { level <= mute ? 0 : pow(10, level / 20) }
}
