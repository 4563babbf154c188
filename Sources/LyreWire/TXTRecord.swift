/// The RDATA of a DNS TXT record as DNS-SD uses it (RFC 6763 §6): a sequence of strings, each a length
/// byte followed by that many bytes, each string `key=value`, `key` alone, or empty.
///
/// The raw strings are kept as they came, so parsing and serialising reproduce the input byte for byte.
/// Keys compare case-insensitively (ASCII) and the first occurrence of a key wins (RFC 6763 §6.4).
public struct TXTRecord: Equatable, Sendable {
    /// The largest RDATA accepted: anything bigger cannot come in one mDNS packet (RFC 6762 §17).
    public static let maximumSize = 8900

    /// The strings in wire order, without their length bytes.
    public private(set) var strings: [[UInt8]]

    /// Creates a record from raw strings (without length bytes).
    public init(strings: [[UInt8]]) throws(TXTRecordError) {
        for string in strings where string.count > 255 { throw .stringTooLong(string.count) }
        self.strings = strings
        if serializedSize > Self.maximumSize { throw .recordTooLarge(serializedSize) }
    }

    /// Creates a record from key/value pairs in order; a `nil` value is a boolean attribute (`key` alone).
    public init(pairs: [(key: String, value: String?)]) throws(TXTRecordError) {
        var strings: [[UInt8]] = []
        for (key, value) in pairs {
            guard Self.isValidKey(Array(key.utf8)) else { throw .invalidKey(key) }
            var string = Array(key.utf8)
            if let value { string.append(UInt8(ascii: "=")); string += Array(value.utf8) }
            strings.append(string)
        }
        try self.init(strings: strings)
    }

    /// Parses TXT RDATA. An empty RDATA and the single empty string (`00`) both mean "no attributes".
    public static func parse(_ bytes: some Collection<UInt8>) throws(TXTRecordError) -> TXTRecord {
        let bytes = Array(bytes)
        if bytes.count > maximumSize { throw .recordTooLarge(bytes.count) }
        var strings: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            guard index + length <= bytes.count else { throw .truncated(offset: index - 1) }
            strings.append(Array(bytes[index..<index + length]))
            index += length
        }
        return TXTRecord(validated: strings)
    }

    private init(validated strings: [[UInt8]]) { self.strings = strings }

    /// The RDATA: each string preceded by its length.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(serializedSize)
        for string in strings {
            out.append(UInt8(string.count))
            out += string
        }
        return out
    }

    var serializedSize: Int { strings.reduce(0) { $0 + 1 + $1.count } }

    /// The value bytes of `key`: `.some(nil)` for a boolean attribute, `nil` when the key is absent.
    public func value(forKey key: String) -> [UInt8]?? {
        let wanted = Array(key.lowercased().utf8)
        for string in strings {
            let (k, v) = Self.split(string)
            if k.count == wanted.count, zip(k, wanted).allSatisfy({ Self.lower($0) == $1 }) { return .some(v) }
        }
        return nil
    }

    /// The value of `key` as UTF-8 text; `nil` when absent, a boolean attribute, or not valid UTF-8.
    public func string(forKey key: String) -> String? {
        guard case .some(.some(let bytes)) = value(forKey: key) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Every attribute once (first occurrence wins), keys lower-cased, values as text where they are
    /// valid UTF-8 and `nil` otherwise (or for boolean attributes). Empty and key-less strings are skipped.
    public var attributes: [(key: String, value: String?)] {
        var seen = Set<String>()
        var out: [(key: String, value: String?)] = []
        for string in strings {
            let (k, v) = Self.split(string)
            guard Self.isValidKey(k), let key = String(validating: k.map(Self.lower), as: UTF8.self) else { continue }
            guard seen.insert(key).inserted else { continue }
            out.append((key, v.flatMap { String(validating: $0, as: UTF8.self) }))
        }
        return out
    }

    private static func split(_ string: [UInt8]) -> (key: ArraySlice<UInt8>, value: [UInt8]?) {
        if let eq = string.firstIndex(of: UInt8(ascii: "=")) {
            return (string[..<eq], Array(string[(eq + 1)...]))
        }
        return (string[...], nil)
    }

    /// RFC 6763 §6.4: printable US-ASCII (0x20–0x7E) except `=`, at least one character.
    static func isValidKey(_ key: some Collection<UInt8>) -> Bool {
        !key.isEmpty && key.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

/// Why TXT RDATA could not be parsed or built.
public enum TXTRecordError: Error, Equatable, Sendable {
    /// A length byte points past the end of the RDATA.
    case truncated(offset: Int)
    /// The RDATA is larger than ``TXTRecord/maximumSize``.
    case recordTooLarge(Int)
    /// One string is longer than 255 bytes.
    case stringTooLong(Int)
    /// A key is empty, contains `=` or is not printable ASCII.
    case invalidKey(String)
}
