/// How a session asks to meet what a receiver already plays (streaming.md §7, `Lyre-Mix`): the wire form of
/// an app's `mixWithOthers` and `duckOthers` options. A session that asks neither takes the receiver over.
public enum MixRequest: String, Sendable, CaseIterable {
    /// Plays over the session that plays, both at their own level.
    case mix
    /// Plays over it and lowers it while this plays.
    case duck

    /// Parses a `Lyre-Mix` value, case-insensitively.
    public init?(parsing text: some StringProtocol) {
        self.init(rawValue: String(text).trimmingSpaces.lowercased())
    }

    /// The words accepted, for error text.
    public static let choices = allCases.map(\.rawValue).joined(separator: ", ")

    /// How far a session that ducks may ask to lower what plays (`Lyre-Duck-DB`), and a receiver's own
    /// default may be set: from a dip (−3 dB) to almost silence (−40 dB).
    public static let duckDepthRange = -40.0 ... -3.0

    /// The `Lyre-Mode` a session says it plays spoken audio with (a podcast, an audio book), and the
    /// `Lyre-Interrupt` value that asks to pause such a session rather than play over it (streaming.md §7).
    public static let spokenAudio = "spokenAudio"
    /// The modes a `Lyre-Mode` may name (an app's `AudioSession.Mode`).
    public static let modes = ["default", "spokenAudio", "voiceChat"]

    /// Parses a `Lyre-Mode` value: one of `modes`, else nil.
    public static func mode(parsing text: some StringProtocol) -> String? {
        let mode = String(text).trimmingSpaces
        return modes.contains(mode) ? mode : nil
    }

    /// Whether a `Lyre-Interrupt` value is the one defined, `spokenAudio`.
    public static func interruptsSpokenAudio(_ text: some StringProtocol) -> Bool {
        String(text).trimmingSpaces == spokenAudio
    }

    /// Parses a `Lyre-Duck-DB` value: a number of dB within `duckDepthRange`, else nil.
    public static func duckDepth(parsing text: some StringProtocol) -> Double? {
        guard let value = Double(String(text).trimmingSpaces), duckDepthRange.contains(value) else { return nil }
        return value
    }
}
