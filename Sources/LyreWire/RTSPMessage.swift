/// RTSP 1.0 header fields (RFC 2326 §12), in wire order. Names compare case-insensitively; the spelling
/// and order of the input are kept so that parse-then-serialize reproduces it byte for byte.
public struct RTSPHeaders: Sendable, Equatable, Sequence {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(String, String)] = []) { self.fields = fields.map { (name: $0.0, value: $0.1) } }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    /// Appends a field (duplicates allowed, as on the wire).
    public mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    /// Replaces every field called `name` with one, or removes them when `value` is nil.
    public mutating func set(_ name: String, _ value: String?) {
        let wanted = name.lowercased()
        fields.removeAll { $0.name.lowercased() == wanted }
        if let value { fields.append((name: name, value: value)) }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (a: RTSPHeaders, b: RTSPHeaders) -> Bool {
        a.fields.count == b.fields.count && zip(a.fields, b.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// One RTSP request or response (RFC 2326 §6, §7). Requests flow both ways on a Lyre connection.
public struct RTSPMessage: Sendable, Equatable {
    public enum StartLine: Sendable, Equatable {
        case request(method: String, uri: String)
        case response(status: Int, reason: String)
    }

    public var startLine: StartLine
    public var headers: RTSPHeaders
    public var body: [UInt8]

    public init(startLine: StartLine, headers: RTSPHeaders = RTSPHeaders(), body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    /// A request with `CSeq` first.
    public static func request(_ method: String, uri: String, cseq: Int, headers: [(String, String)] = [], body: [UInt8] = [])
        -> RTSPMessage
    {
        var all = RTSPHeaders([("CSeq", String(cseq))] + headers)
        if !body.isEmpty { all.add("Content-Length", String(body.count)) }
        return RTSPMessage(startLine: .request(method: method, uri: uri), headers: all, body: body)
    }

    /// A response echoing `cseq` (omitted when nil, for requests that had none).
    public static func response(_ status: Int, cseq: Int?, headers: [(String, String)] = [], body: [UInt8] = [])
        -> RTSPMessage
    {
        var all = RTSPHeaders(cseq.map { [("CSeq", String($0))] } ?? [])
        for (name, value) in headers { all.add(name, value) }
        if !body.isEmpty { all.add("Content-Length", String(body.count)) }
        return RTSPMessage(startLine: .response(status: status, reason: RTSPStatus.reason(status)), headers: all, body: body)
    }

    public var method: String? { if case .request(let m, _) = startLine { m } else { nil } }
    public var uri: String? { if case .request(_, let u) = startLine { u } else { nil } }
    public var status: Int? { if case .response(let s, _) = startLine { s } else { nil } }

    /// `CSeq` as a number; nil when absent or not a non-negative integer.
    public var cseq: Int? {
        guard let text = headers["CSeq"]?.trimmingSpaces, !text.isEmpty, text.utf8.count <= 18,
            text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        return Int(text)
    }

    /// The body as UTF-8 text (invalid sequences repaired).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The media type of `Content-Type`, lowercased, without parameters; nil when there is none.
    public var contentType: String? {
        headers["Content-Type"]?.lowercased().split(separator: ";").first.map { String($0).trimmingSpaces }
    }

    /// The wire form: start line, headers, empty line (all CRLF), body.
    public func serialized() -> [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let uri): text = "\(method) \(uri) RTSP/1.0\r\n"
        case .response(let status, let reason): text = "RTSP/1.0 \(status) \(reason)\r\n"
        }
        for field in headers.fields { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}

/// Status codes used by Lyre (RFC 2326 §7.1.1) and their reason phrases.
public enum RTSPStatus {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 410: "Gone"
        case 413: "Request Entity Too Large"
        case 415: "Unsupported Media Type"
        case 431: "Request Header Fields Too Large"
        case 451: "Parameter Not Understood"
        case 454: "Session Not Found"
        case 455: "Method Not Valid in This State"
        case 459: "Aggregate Operation Not Allowed"
        case 461: "Unsupported Transport"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "RTSP Version Not Supported"
        default: status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error"
        }
    }
}

extension String {
    /// The text of a NUL-terminated C buffer (invalid UTF-8 repaired).
    public init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String { trimming([" ", "\t"]) }

    /// Without leading and trailing `characters`.
    func trimming(_ characters: Set<Character>) -> String {
        var text = Substring(self)
        while let first = text.first, characters.contains(first) { text.removeFirst() }
        while let last = text.last, characters.contains(last) { text.removeLast() }
        return String(text)
    }
}
