/// The mDNS host name an embedded responder takes when another host holds its own (RFC 6762 §9).
///
/// Receivers flashed from one image share one host name. avahi's alternative (`pi` → `pi-2` → `pi-3`) is the
/// same for all of them, so they collide again in step and settle one per probing round. Each receiver first
/// tries a name of its own instead, from its device id: `pi-3fa9c2`, then `pi-3fa9c2-2`, `pi-3fa9c2-3`.
public enum HostName {
    /// How many hex digits of the device id make the suffix: one receiver in 16 million shares them with another.
    public static let suffixDigits = 6

    /// The suffix for the receiver `id`: the first ``suffixDigits`` hex digits of its id.
    public static func suffix(of id: DeviceID) -> String { String(id.rawValue.prefix(suffixDigits)) }

    /// The name to try after the `conflicts`-th conflict (1, 2, …) of the host whose own name is `own`.
    ///
    /// Counted from the host's own name, never from the last name tried, so a suffix of digits is never read
    /// as a counter. With `suffix`: `own-SUFFIX`, `own-SUFFIX-2`, …; without: `own-2`, `own-3`, …. The own
    /// name is cut at a character boundary so that the whole still fits in one label.
    public static func alternative(to own: String, conflicts: Int, suffix: String?) -> String {
        var tail = ""
        if let suffix, !suffix.isEmpty {
            tail = "-" + suffix + (conflicts > 1 ? "-\(conflicts)" : "")
        } else {
            tail = "-\(max(conflicts, 1) + 1)"
        }
        return ReceiverTXT.truncated(own, bytes: ServiceName.maximumBytes - tail.utf8.count) + tail
    }
}
