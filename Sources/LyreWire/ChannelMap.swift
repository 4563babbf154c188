/// Which of the stream's channels a room plays (streaming.md §3, `Lyre-Channels`): the seed's multi-route
/// `ChannelMap`. The sender encodes the stereo stream once for every room; each receiver applies its own map
/// to what it decodes, so a stereo pair is two receivers of one stream, one `left` and one `right`.
public enum ChannelMap: String, Sendable, CaseIterable, Codable {
    /// Both channels as they are (the default).
    case stereo
    /// The left channel on every speaker of the room.
    case left
    /// The right channel on every speaker of the room.
    case right
    /// Left and right mixed, (L + R) / 2, on every speaker.
    case mono

    /// Parses a `Lyre-Channels` value or a `--to NAME=CHANNELS` suffix, case-insensitively.
    public init?(parsing text: some StringProtocol) {
        self.init(rawValue: String(text).trimmingSpaces.lowercased())
    }

    /// The words this map accepts, for help and error text.
    public static let choices = allCases.map(\.rawValue).joined(separator: ", ")

    /// Applies the map to interleaved stereo samples, in place.
    public func apply(to samples: inout [Int16]) {
        guard self != .stereo else { return }
        samples.withUnsafeMutableBufferPointer { s in
            var i = 0
            while i + 1 < s.count {
                let value: Int16
                switch self {
                case .left: value = s[i]
                case .right: value = s[i + 1]
                default: value = Int16((Int32(s[i]) + Int32(s[i + 1])) >> 1)
                }
                s[i] = value
                s[i + 1] = value
                i += 2
            }
        }
    }
}
