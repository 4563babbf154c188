/// A receiver's stable identity: 128 random bits, written as 32 lower-case hex digits.
///
/// Generated once per receiver and kept in its state directory; names and restarts never change it.
/// Senders key devices by it, never by name or list position.
public struct DeviceID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The 32 lower-case hex digits.
    public let rawValue: String

    /// Accepts exactly 32 hex digits, either case; stores them lower-cased.
    public init?(_ text: String) {
        let lowered = text.lowercased()
        guard lowered.utf8.count == 32, lowered.utf8.allSatisfy({ Self.isHexDigit($0) }) else { return nil }
        rawValue = lowered
    }

    /// A new random identity.
    public static func random() -> DeviceID { DeviceID(randomHex(bytes: 16))! }

    /// `bytes` random bytes as lower-case hex digits (ids, RTSP session ids).
    public static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// Bytes as lower-case hex digits, two a byte (ids, key fingerprints).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The bytes that hex digits (either case, two a byte) spell; nil when they are not such digits.
    public static func bytes(hex text: String) -> [UInt8]? {
        let digits = Array(text.lowercased().utf8)
        guard digits.count % 2 == 0, digits.allSatisfy(isHexDigit) else { return nil }
        func value(_ c: UInt8) -> UInt8 { c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : c - UInt8(ascii: "a") + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }

    public var description: String { rawValue }
    public static func < (a: DeviceID, b: DeviceID) -> Bool { a.rawValue < b.rawValue }

    static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))
    }
}

/// What a receiver is doing, as advertised in `st` (and `sn`).
public enum ReceiverStatus: Equatable, Sendable {
    /// Ready for a sender.
    case idle
    /// A session is active; the associated value is the sender's name (may be empty).
    case playing(sender: String)
    /// The audio output cannot be used (busy, gone, suspended); a sender should not pick it.
    case unavailable
    /// The receiver is shutting down and about to withdraw its service. Announced just before the goodbye
    /// because mDNS keeps a goodbye'd record for one more second (RFC 6762 §10.1): browsers treat a
    /// leaving receiver as gone at once.
    case leaving

    /// The `st` value.
    public var token: String {
        switch self {
        case .idle: "idle"
        case .playing: "playing"
        case .unavailable: "unavailable"
        case .leaving: "leaving"
        }
    }
}

/// The kind of output a receiver plays through, as advertised in `ok` (AVAudioSession.Port's counterpart).
public enum OutputKind: String, Sendable, CaseIterable, Codable {
    case speaker, headphones, line, hdmi, usb
}

/// The attributes of a `_lyre._tcp` TXT record, as `Protocol/discovery.md` specifies them.
///
/// Parsing is strict about what identifies a receiver (`v`, `id`) and lenient about the rest: an optional
/// attribute with a value this version does not understand reads as absent, so newer receivers stay listed.
public struct ReceiverTXT: Equatable, Sendable {
    /// The protocol major version this code speaks.
    public static let protocolVersion = 1
    /// The most bytes of sender name put in `sn`; longer names are cut at a character boundary.
    public static let maximumSenderNameBytes = 64
    /// The most bytes of model put in `md`.
    public static let maximumModelBytes = 64
    /// The muted volume (RAOP's convention).
    public static let mutedVolume = -144.0
    /// The audible volume range in dB (RAOP's convention).
    public static let volumeRange = -30.0...0.0

    /// `v`: protocol version.
    public var version: Int
    /// `id`: stable device identity.
    public var deviceID: DeviceID
    /// `md`: model, free text.
    public var model: String
    /// `cn`: codecs the receiver decodes, in preference order (`opus`, `l16`).
    public var codecs: [String]
    /// `ft`: feature tokens.
    public var features: [String]
    /// `st` + `sn`: status; `nil` when absent or not understood.
    public var status: ReceiverStatus?
    /// `ok`: output kind; `nil` when absent or not understood.
    public var outputKind: OutputKind?
    /// `vol`: volume in dB, −30…0, or −144 for mute; `nil` when absent or out of range.
    public var volume: Double?
    /// `pk`: the fingerprint of the receiver's long-term public key (16 lower-case hex digits); `nil` when
    /// absent or malformed.
    public var keyFingerprint: String?

    /// `pk`'s form: 16 lower-case hex digits.
    public static func validFingerprint(_ text: String) -> String? {
        text.utf8.count == 16 && text.utf8.allSatisfy(DeviceID.isHexDigit) ? text : nil
    }

    public init(
        version: Int = ReceiverTXT.protocolVersion, deviceID: DeviceID, model: String, codecs: [String],
        features: [String], status: ReceiverStatus?, outputKind: OutputKind?, volume: Double?, keyFingerprint: String? = nil
    ) {
        self.version = version
        self.deviceID = deviceID
        self.model = model
        self.codecs = codecs
        self.features = features
        self.status = status
        self.outputKind = outputKind
        self.volume = volume
        self.keyFingerprint = keyFingerprint
    }

    /// Reads the attributes from a TXT record, or says why the record does not describe a Lyre receiver.
    public init(_ txt: TXTRecord) throws(ReceiverTXTError) {
        guard let versionText = txt.string(forKey: "v") else { throw .missingVersion }
        guard let version = Int(versionText), version >= 1 else { throw .invalidVersion(versionText) }
        guard version == Self.protocolVersion else { throw .unsupportedVersion(version) }
        guard let idText = txt.string(forKey: "id") else { throw .missingDeviceID }
        guard let id = DeviceID(idText) else { throw .invalidDeviceID(idText) }

        self.version = version
        self.deviceID = id
        self.model = txt.string(forKey: "md") ?? ""
        self.codecs = Self.list(txt.string(forKey: "cn"))
        self.features = Self.list(txt.string(forKey: "ft"))
        switch txt.string(forKey: "st") {
        case "idle": status = .idle
        case "playing": status = .playing(sender: txt.string(forKey: "sn") ?? "")
        case "unavailable": status = .unavailable
        case "leaving": status = .leaving
        default: status = nil
        }
        outputKind = txt.string(forKey: "ok").flatMap(OutputKind.init(rawValue:))
        volume = txt.string(forKey: "vol").flatMap(Double.init).flatMap(Self.validVolume)
        keyFingerprint = txt.string(forKey: "pk").flatMap(Self.validFingerprint)
    }

    /// The record in canonical order: `v id md cn ft st [sn] ok vol pk`, absent fields left out.
    public var txtRecord: TXTRecord {
        var pairs: [(key: String, value: String?)] = [("v", String(version)), ("id", deviceID.rawValue)]
        pairs.append(("md", Self.truncated(model, bytes: Self.maximumModelBytes)))
        pairs.append(("cn", codecs.joined(separator: ",")))
        pairs.append(("ft", features.joined(separator: ",")))
        if let status {
            pairs.append(("st", status.token))
            if case .playing(let sender) = status {
                pairs.append(("sn", Self.truncated(sender, bytes: Self.maximumSenderNameBytes)))
            }
        }
        if let outputKind { pairs.append(("ok", outputKind.rawValue)) }
        if let volume = volume.flatMap(Self.validVolume) { pairs.append(("vol", Self.format(volume))) }
        if let key = keyFingerprint.flatMap(Self.validFingerprint) { pairs.append(("pk", key)) }
        // Every key is a literal above and every value is bounded, so this cannot fail.
        return try! TXTRecord(pairs: pairs)
    }

    /// `value` if it is −144 or within −30…0, else `nil`.
    public static func validVolume(_ value: Double) -> Double? {
        value == mutedVolume || volumeRange.contains(value) ? value : nil
    }

    /// Volume as written in `vol`: at most one decimal, no trailing `.0`.
    static func format(_ volume: Double) -> String {
        let tenths = (volume * 10).rounded()
        let whole = Int(tenths) / 10
        let fraction = abs(Int(tenths) % 10)
        if fraction == 0 { return String(whole) }
        return (tenths < 0 && whole == 0 ? "-0" : String(whole)) + "." + String(fraction)
    }

    private static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { String($0) }.filter { !$0.isEmpty }
    }

    /// Cuts `text` to at most `bytes` UTF-8 bytes without splitting a character.
    public static func truncated(_ text: String, bytes: Int) -> String {
        if text.utf8.count <= bytes { return text }
        var out = ""
        for character in text {
            if out.utf8.count + character.utf8.count > bytes { break }
            out.append(character)
        }
        return out
    }
}

/// Why a TXT record is not a valid Lyre receiver description.
public enum ReceiverTXTError: Error, Equatable, Sendable {
    case missingVersion
    case invalidVersion(String)
    case unsupportedVersion(Int)
    case missingDeviceID
    case invalidDeviceID(String)
}
