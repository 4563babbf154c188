/// CPace's `prefix_free_cat` (draft-irtf-cfrg-cpace §3.2): each field with its length in front, as LEB128, so
/// that a list of fields reads back unambiguously. Pairing's messages are such lists (Protocol/pairing.md §3),
/// and so are CPace's own inputs to its hashes.
public enum PrefixFree {
    /// The fields, each after its LEB128 length.
    public static func cat(_ fields: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for field in fields {
            var length = field.count
            repeat {
                let low = UInt8(length & 0x7f)
                length >>= 7
                out.append(length > 0 ? low | 0x80 : low)
            } while length > 0
            out += field
        }
        return out
    }

    /// Reads exactly `count` fields that fill `bytes`, each no longer than `maximumField`.
    /// - Throws: ``PairingMessageError/malformed(_:)`` when a length runs past the end, a field is too long, or
    ///   bytes are left over.
    public static func split(_ bytes: [UInt8], count: Int, maximumField: Int = 256) throws(PairingMessageError) -> [[UInt8]] {
        var fields: [[UInt8]] = []
        var at = 0
        while fields.count < count {
            var length = 0
            var shift = 0
            while true {
                guard at < bytes.count else { throw .malformed("field \(fields.count + 1) of \(count) is missing") }
                let byte = bytes[at]
                at += 1
                guard shift < 21 else { throw .malformed("a field's length is over 3 bytes long") }
                length |= Int(byte & 0x7f) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            guard length <= maximumField else { throw .malformed("a field of \(length) bytes is over the limit of \(maximumField)") }
            guard bytes.count - at >= length else { throw .malformed("field \(fields.count + 1) runs past the end") }
            fields.append(Array(bytes[at..<(at + length)]))
            at += length
        }
        guard at == bytes.count else { throw .malformed("\(bytes.count - at) bytes after the last field") }
        return fields
    }
}

public enum PairingMessageError: Error, Equatable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed pairing message: \(why)"
        }
    }
}

/// Who a device is, as pairing tells it (Protocol/pairing.md §3): its long-term Ed25519 public key, its id
/// (32 hex digits) and its name.
public struct PairingParty: Sendable, Equatable, Codable {
    public var publicKey: [UInt8]
    public var id: String
    public var name: String

    public static let publicKeyLength = 32
    /// Names are cut to this many bytes of UTF-8, as in the TXT record.
    public static let maximumName = 63

    public init(publicKey: [UInt8], id: String, name: String) {
        self.publicKey = publicKey
        self.id = id
        self.name = name
    }

    /// `prefix_free_cat(publicKey, id, name)`: CPace's associated data.
    public var encoded: [UInt8] {
        PrefixFree.cat([publicKey, Array(id.utf8), Array(ReceiverTXT.truncated(name, bytes: Self.maximumName).utf8)])
    }

    public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
        let fields = try PrefixFree.split(bytes, count: 3, maximumField: 64)
        guard fields[0].count == Self.publicKeyLength else { throw .malformed("a public key must be 32 bytes") }
        guard let id = DeviceID(String(decoding: fields[1], as: UTF8.self)) else { throw .malformed("the id must be 32 hex digits") }
        guard fields[2].count <= Self.maximumName, let name = String(validating: fields[2], as: UTF8.self), !name.isEmpty else {
            throw .malformed("the name must be 1 to 63 bytes of UTF-8")
        }
        self.init(publicKey: fields[0], id: id.rawValue, name: name)
    }
}

/// The bodies of the `PAIR` requests and their answers (Protocol/pairing.md §3). Each is a prefix-free list of
/// fields; parsing checks every length, so a body either reads whole or is refused.
public enum PairingMessage {
    /// The step a `PAIR` request takes, in its `Lyre-Pair` header.
    public enum Step: String, Sendable, CaseIterable {
        case start, exchange, confirm
    }

    public static let stepHeader = "Lyre-Pair"
    /// No pairing body is longer.
    public static let maximumBody = 1024
    /// Each side's half of the session id, bytes.
    public static let sidLength = 16
    /// A ristretto255 element, encoded.
    public static let elementLength = 32
    /// A key-confirmation tag (HMAC-SHA-512).
    public static let tagLength = 64

    /// `start` request: the sender's name, shown beside the PIN.
    public struct Start: Equatable, Sendable {
        public var senderName: String
        public init(senderName: String) { self.senderName = senderName }
        public var encoded: [UInt8] { PrefixFree.cat([Array(ReceiverTXT.truncated(senderName, bytes: PairingParty.maximumName).utf8)]) }
        public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
            let fields = try PrefixFree.split(bytes, count: 1, maximumField: PairingParty.maximumName)
            guard let name = String(validating: fields[0], as: UTF8.self), !name.isEmpty else {
                throw .malformed("the sender's name must be 1 to 63 bytes of UTF-8")
            }
            senderName = name
        }
    }

    /// `start` answer: the receiver's half of the session id, and who it is.
    public struct Started: Equatable, Sendable {
        public var sid: [UInt8]
        public var receiver: PairingParty
        public init(sid: [UInt8], receiver: PairingParty) {
            self.sid = sid
            self.receiver = receiver
        }
        public var encoded: [UInt8] { PrefixFree.cat([sid, receiver.encoded]) }
        public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
            let fields = try PrefixFree.split(bytes, count: 2)
            guard fields[0].count == PairingMessage.sidLength else { throw .malformed("the session id half must be 16 bytes") }
            sid = fields[0]
            receiver = try PairingParty(parsing: fields[1])
        }
    }

    /// A CPace message, `prefix_free_cat(Y, AD)`, with the party that sent it as AD.
    public struct Share: Equatable, Sendable {
        public var element: [UInt8]
        public var party: PairingParty
        public init(element: [UInt8], party: PairingParty) {
            self.element = element
            self.party = party
        }
        public var encoded: [UInt8] { PrefixFree.cat([element, party.encoded]) }
        public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
            let fields = try PrefixFree.split(bytes, count: 2)
            guard fields[0].count == PairingMessage.elementLength else { throw .malformed("a group element must be 32 bytes") }
            element = fields[0]
            party = try PairingParty(parsing: fields[1])
        }
    }

    /// `exchange` request: the sender's half of the session id and its CPace message (MSGa).
    public struct Exchange: Equatable, Sendable {
        public var sid: [UInt8]
        public var share: Share
        public init(sid: [UInt8], share: Share) {
            self.sid = sid
            self.share = share
        }
        public var encoded: [UInt8] { PrefixFree.cat([sid, share.encoded]) }
        public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
            let fields = try PrefixFree.split(bytes, count: 2)
            guard fields[0].count == PairingMessage.sidLength else { throw .malformed("the session id half must be 16 bytes") }
            sid = fields[0]
            share = try Share(parsing: fields[1])
        }
    }

    /// `exchange` answer: the receiver's CPace message (MSGb) and its key-confirmation tag.
    public struct Exchanged: Equatable, Sendable {
        public var share: Share
        public var tag: [UInt8]
        public init(share: Share, tag: [UInt8]) {
            self.share = share
            self.tag = tag
        }
        public var encoded: [UInt8] { PrefixFree.cat([share.encoded, tag]) }
        public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
            let fields = try PrefixFree.split(bytes, count: 2)
            guard fields[1].count == PairingMessage.tagLength else { throw .malformed("a tag must be 64 bytes") }
            share = try Share(parsing: fields[0])
            tag = fields[1]
        }
    }

    /// `confirm` request: the sender's key-confirmation tag.
    public struct Confirm: Equatable, Sendable {
        public var tag: [UInt8]
        public init(tag: [UInt8]) { self.tag = tag }
        public var encoded: [UInt8] { PrefixFree.cat([tag]) }
        public init(parsing bytes: [UInt8]) throws(PairingMessageError) {
            let fields = try PrefixFree.split(bytes, count: 1)
            guard fields[0].count == PairingMessage.tagLength else { throw .malformed("a tag must be 64 bytes") }
            tag = fields[0]
        }
    }
}
