#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The audio encodings Lyre plays (streaming.md §3).
public enum AudioEncoding: String, Sendable, Equatable {
    /// Opus, RFC 7587: always `opus/48000/2` in SDP.
    case opus
    /// Big-endian 16-bit linear PCM, RFC 3551 §4.5.11.
    case l16
}

/// The stream an ANNOUNCE describes, once checked against what Lyre accepts.
public struct AudioFormat: Sendable, Equatable {
    public var encoding: AudioEncoding
    public var payloadType: UInt8
    public var sampleRate: Int
    public var channels: Int

    public init(encoding: AudioEncoding, payloadType: UInt8, sampleRate: Int = 48000, channels: Int = 2) {
        self.encoding = encoding
        self.payloadType = payloadType
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// Why an SDP body was refused.
public enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not SDP (no `v=0` first, no `m=audio`, bad lines): answer 400.
    case malformed(String)
    /// Well formed, but no encoding Lyre plays: answer 415.
    case unsupported(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed SDP: \(why)"
        case .unsupported(let why): "unsupported stream: \(why)"
        }
    }
}

/// An SDP session description (RFC 4566), just the parts Lyre reads and writes.
public struct SessionDescription: Sendable, Equatable {
    public struct Media: Sendable, Equatable {
        public var kind: String
        public var port: Int
        public var proto: String
        public var formats: [String]
        /// `a=` lines of this media section, as (name, value); value nil for a property attribute.
        public var attributes: [Attribute]

        public func attribute(_ name: String) -> [String] {
            attributes.filter { $0.name == name }.compactMap(\.value)
        }
    }

    public struct Attribute: Sendable, Equatable {
        public var name: String
        public var value: String?
    }

    public var lines: [(type: Character, value: String)]
    public var media: [Media]

    public static func == (a: SessionDescription, b: SessionDescription) -> Bool {
        a.media == b.media && a.lines.map(\.type) == b.lines.map(\.type) && a.lines.map(\.value) == b.lines.map(\.value)
    }

    /// Parses an SDP body. Lines may end in CRLF or LF; unknown line types are kept and ignored.
    public init(parsing text: String) throws(SDPError) {
        var rawLines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        rawLines.removeAll { $0.isEmpty }
        guard rawLines.first == "v=0" else { throw .malformed("does not start with v=0") }
        lines = []
        media = []
        for line in rawLines {
            let scalars = Array(line)
            guard scalars.count >= 2, scalars[1] == "=", let type = scalars.first, type.isASCII, type.isLetter else {
                throw .malformed("line '\(line.prefix(40))' is not TYPE=VALUE")
            }
            let value = String(scalars[2...])
            lines.append((type: type, value: value))
            switch type {
            case "m":
                let parts = value.split(separator: " ").map(String.init)
                guard parts.count >= 4, let port = parts[1].split(separator: "/").first.flatMap({ Int($0) }) else {
                    throw .malformed("bad m= line '\(value.prefix(40))'")
                }
                media.append(Media(kind: parts[0], port: port, proto: parts[2], formats: Array(parts[3...]), attributes: []))
            case "a" where !media.isEmpty:
                if let colon = value.firstIndex(of: ":") {
                    media[media.count - 1].attributes.append(
                        Attribute(name: String(value[..<colon]), value: String(value[value.index(after: colon)...])))
                } else {
                    media[media.count - 1].attributes.append(Attribute(name: value, value: nil))
                }
            default: break
            }
        }
    }

    /// A description of one audio stream, as a Lyre sender writes it; with `crypto`, its SRTP key
    /// (`a=crypto`, RFC 4568), written only into an SDP that travels over TLS.
    public init(audio format: AudioFormat, origin address: String = "127.0.0.1", sessionName: String = "Lyre", crypto: SDPCrypto? = nil) {
        let name = format.encoding == .opus ? "opus" : "L16"
        let channels = format.encoding == .opus ? 2 : format.channels
        var attributes = [Attribute(name: "rtpmap", value: "\(format.payloadType) \(name)/\(format.sampleRate)/\(channels)")]
        if format.encoding == .opus, format.channels == 2 {
            attributes.append(Attribute(name: "fmtp", value: "\(format.payloadType) sprop-stereo=1"))
        }
        attributes.append(Attribute(name: "control", value: "streamid=0"))
        if let crypto { attributes.append(Attribute(name: "crypto", value: crypto.serialized)) }
        media = [Media(kind: "audio", port: 0, proto: "RTP/AVP", formats: [String(format.payloadType)], attributes: attributes)]
        let family = address.contains(":") ? "IP6" : "IP4"
        // SDP has no zone (RFC 6874 is for URLs): a link-local origin is written without its interface.
        let address = address.split(separator: "%", maxSplits: 1).first.map(String.init) ?? address
        lines = [
            ("v", "0"), ("o", "- 0 0 IN \(family) \(address)"), ("s", sessionName), ("c", "IN \(family) \(address)"), ("t", "0 0"),
        ].map { (type: Character($0.0), value: $0.1) }
        lines.append((type: "m", value: "audio 0 RTP/AVP \(format.payloadType)"))
        lines += attributes.map { attribute in
            (type: "a", value: attribute.value.map { "\(attribute.name):\($0)" } ?? attribute.name)
        }
    }

    /// The audio stream's SRTP key (`a=crypto`), when it has one.
    /// - Throws: ``SDPError/malformed(_:)`` when the attribute does not read.
    public func crypto() throws(SDPError) -> SDPCrypto? {
        guard let audio = media.first(where: { $0.kind == "audio" }), let text = audio.attribute("crypto").first else { return nil }
        guard let crypto = SDPCrypto(parsing: text) else { throw .malformed("crypto '\(text.prefix(60))'") }
        return crypto
    }

    /// The text, CRLF line ends.
    public func serialized() -> String { lines.map { "\($0.type)=\($0.value)\r\n" }.joined() }

    /// The first `m=audio` section checked against what Lyre plays (streaming.md §3).
    public func audioFormat() throws(SDPError) -> AudioFormat {
        guard let audio = media.first(where: { $0.kind == "audio" }) else { throw .malformed("no m=audio line") }
        var unsupported: [String] = []
        for format in audio.formats {
            guard let pt = UInt8(format), pt < 128 else { throw .malformed("payload type '\(format.prefix(8))'") }
            guard let map = audio.attribute("rtpmap").first(where: { $0.split(separator: " ").first.map(String.init) == format })
            else {
                unsupported.append("payload type \(pt) without rtpmap")
                continue
            }
            let parts = map.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { throw .malformed("rtpmap '\(map.prefix(40))'") }
            let fields = parts[1].split(separator: "/").map(String.init)
            guard fields.count >= 2, let rate = Int(fields[1]), rate > 0 else { throw .malformed("rtpmap '\(map.prefix(40))'") }
            let channels = fields.count > 2 ? Int(fields[2]) : 1
            guard let channels, channels > 0 else { throw .malformed("rtpmap '\(map.prefix(40))'") }
            guard pt >= 96 else {
                unsupported.append("static payload type \(pt)")
                continue
            }
            switch fields[0].lowercased() {
            case "opus" where rate == 48000 && channels == 2:
                return AudioFormat(encoding: .opus, payloadType: pt, sampleRate: 48000, channels: 2)
            case "l16" where rate == 48000 && (1...2).contains(channels):
                return AudioFormat(encoding: .l16, payloadType: pt, sampleRate: 48000, channels: channels)
            default:
                unsupported.append("\(fields.joined(separator: "/"))")
            }
        }
        throw .unsupported(unsupported.isEmpty ? "no payload types" : unsupported.joined(separator: ", "))
    }
}

/// An SDP `a=crypto` attribute (RFC 4568 §9.1): `TAG SUITE inline:BASE64(key || salt)`. Lyre writes one, tag 1,
/// with AEAD_AES_128_GCM (RFC 7714 §12) and no lifetime or MKI.
public struct SDPCrypto: Sendable, Equatable {
    public var suite: String
    public var key: [UInt8]

    public init(suite: String, key: [UInt8]) {
        self.suite = suite
        self.key = key
    }

    public var serialized: String { "1 \(suite) inline:\(Data(key).base64EncodedString())" }

    /// Reads the attribute's value; the key at most 64 bytes.
    public init?(parsing text: String) {
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 3, fields[0].allSatisfy(\.isNumber), fields[2].hasPrefix("inline:") else { return nil }
        let inline = fields[2].dropFirst("inline:".count).split(separator: "|").first.map(String.init) ?? ""
        guard inline.utf8.count <= 88, let key = Data(base64Encoded: inline), !key.isEmpty else { return nil }
        suite = String(fields[1].prefix(64))
        self.key = Array(key)
    }
}
