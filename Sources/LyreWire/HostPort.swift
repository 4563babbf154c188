/// HOST:PORT as users, logs and RTSP URLs write it: an IPv6 address in brackets (`[::1]:7700`, RFC 3986
/// §3.2.2), anything else as it is (`192.0.2.7:7700`, `kitchen.local:7700`). A link-local IPv6 address
/// keeps its zone: `[fe80::1%eth0]:7700` for users and logs, `[fe80::1%25eth0]:7700` in URLs (RFC 6874).
public enum HostPort {
    public static func text(_ host: String, _ port: some BinaryInteger) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Whether `host` is a link-local IPv6 address (fe80::/10), with or without its zone.
    public static func isLinkLocal(_ host: String) -> Bool {
        guard host.contains(":"), let first = UInt16(host.prefix { $0 != ":" }, radix: 16) else { return false }
        return first & 0xffc0 == 0xfe80
    }

    /// Whether `host` is a link-local IPv6 address written without its zone, which no socket can reach: the
    /// two places that take an address from users (`lyre play --host`, `lyred --listen`) say so.
    public static func lacksZone(_ host: String) -> Bool { isLinkLocal(host) && !host.contains("%") }

    /// HOST:PORT inside a URL: as `text`, with a zone's `%` written `%25`.
    public static func uri(_ host: String, _ port: some BinaryInteger) -> String {
        text(host.split(separator: "%", omittingEmptySubsequences: false).joined(separator: "%25"), port)
    }

    /// `HOST:PORT` or `[IPV6]:PORT`; nil when it is neither (no port, a bare IPv6 address, an empty host).
    public static func parse(_ text: String) -> (host: String, port: UInt16)? {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            (host, port) = (Substring(parts[0]), Substring(parts[1]))
        }
        guard !host.isEmpty, let number = UInt16(port) else { return nil }
        // A zone as a URL writes it (`%25eth0`) or as users do (`%eth0`).
        guard let escaped = host.firstRange(of: "%25") else { return (String(host), number) }
        return (host[..<escaped.lowerBound] + "%" + host[escaped.upperBound...], number)
    }
}
