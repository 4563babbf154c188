/// What arrives on an RTSP connection: a message, or an interleaved binary frame (RFC 2326 §10.12).
public enum RTSPFrame: Sendable, Equatable {
    case message(RTSPMessage)
    /// `$`, channel, 16-bit length, payload.
    case interleaved(channel: UInt8, payload: [UInt8])
    /// An interleaved frame over the size limit: its bytes were skipped, the connection stays usable.
    case oversizedInterleaved(channel: UInt8, length: Int)
    /// A message whose body is over `Limits.body` but within `Limits.skippableBody`: its head, without the
    /// body, which is skipped as it arrives. Answer 413; the connection stays usable.
    case oversizedMessage(RTSPMessage, length: Int)
}

/// Why input could not be framed. After any of these the connection's framing is lost: answer with
/// `status` (when the peer is owed an answer) and close.
public enum RTSPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case startLineTooLong
    case malformedStartLine
    case unsupportedVersion
    case headerSectionTooLarge
    case tooManyHeaderLines
    case malformedHeaderLine
    case invalidContentLength
    case bodyTooLarge(Int)
    /// The first message did not come within its deadline, or a message did not come whole within its own
    /// (streaming.md §2): a peer holding a connection open with nothing, or half a message.
    case timeout

    /// The RTSP status that answers it (streaming.md §2).
    public var status: Int {
        switch self {
        case .startLineTooLong, .malformedStartLine, .malformedHeaderLine, .invalidContentLength: 400
        case .unsupportedVersion: 505
        case .headerSectionTooLarge, .tooManyHeaderLines: 431
        case .bodyTooLarge: 413
        case .timeout: 408
        }
    }

    public var description: String {
        switch self {
        case .startLineTooLong: "start line over the limit"
        case .malformedStartLine: "malformed start line"
        case .unsupportedVersion: "not RTSP/1.0"
        case .headerSectionTooLarge: "header section over the limit"
        case .tooManyHeaderLines: "too many header lines"
        case .malformedHeaderLine: "malformed header line"
        case .invalidContentLength: "invalid Content-Length"
        case .bodyTooLarge(let n): "Content-Length \(n) over the limit"
        case .timeout: "no whole message in time"
        }
    }
}

/// Incremental RTSP framing: feed bytes as they arrive, take frames out. Pure; no I/O.
///
/// `next(_:)` consumes bytes from the front of the buffer and returns a frame, or nil when it needs more.
public struct RTSPParser: Sendable {
    /// Limits from streaming.md §2.
    public struct Limits: Sendable {
        public var startLine = 1024
        public var headerSection = 16 * 1024
        public var headerLines = 64
        public var body = 2 * 1024 * 1024
        /// Bodies up to this size are skipped, keeping the connection; larger ones end it.
        public var skippableBody = 64 * 1024 * 1024
        public var interleavedFrame = 8192
        public init() {}
    }

    public let limits: Limits
    /// Bytes of an oversized interleaved frame still to skip, and its channel.
    private var skipping: (channel: UInt8, length: Int, remaining: Int)?
    /// Bytes of an oversized message body still to skip.
    private var skippingBody = 0
    /// A parsed head waiting for its body.
    private var pendingHead: (startLine: RTSPMessage.StartLine, headers: RTSPHeaders, length: Int)?
    /// How many bytes at the front were searched for the end of a head, without finding it: bytes that
    /// arrive later are searched from there, not from the start again.
    private var headSearched = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether part of a message (or of a skipped body or frame) has been taken and the rest is awaited.
    public var isMidFrame: Bool { pendingHead != nil || skippingBody > 0 || skipping != nil }

    /// The next complete frame at the front of `buffer`, consuming its bytes; nil when more bytes are needed.
    /// Consuming copies what is left: a stream of many frames is framed with the `ArraySlice` form.
    public mutating func next(_ buffer: inout [UInt8]) throws(RTSPParseError) -> RTSPFrame? {
        var slice = buffer[...]
        defer { if slice.count != buffer.count { buffer = Array(slice) } }
        return try next(&slice)
    }

    /// The next complete frame at the front of `buffer`, consuming its bytes (in constant time: the slice
    /// moves on); nil when more bytes are needed.
    public mutating func next(_ buffer: inout ArraySlice<UInt8>) throws(RTSPParseError) -> RTSPFrame? {
        while true {
            let (frame, used, progressed) = try step(buffer)
            if used > 0 {
                buffer = buffer[(buffer.startIndex + used)...]
                headSearched = 0
            }
            if let frame { return frame }
            if !progressed { return nil }
        }
    }

    /// One framing step: a frame or not, how many bytes it used, and whether to try again.
    private mutating func step(_ slice: ArraySlice<UInt8>) throws(RTSPParseError) -> (RTSPFrame?, Int, Bool) {
        // Indices from 0, whatever the slice's.
        let bytes = Rebased(slice: slice)
        if var skip = skipping {
            let take = min(skip.remaining, bytes.count)
            skip.remaining -= take
            if skip.remaining > 0 { skipping = skip; return (nil, take, false) }
            skipping = nil
            return (.oversizedInterleaved(channel: skip.channel, length: skip.length), take, false)
        }
        if skippingBody > 0 {
            let take = min(skippingBody, bytes.count)
            skippingBody -= take
            return (nil, take, skippingBody == 0)
        }
        if let head = pendingHead {
            guard bytes.count >= head.length else { return (nil, 0, false) }
            pendingHead = nil
            let message = RTSPMessage(startLine: head.startLine, headers: head.headers, body: Array(bytes.slice(0, head.length)))
            return (.message(message), head.length, false)
        }
        guard let first = bytes.first else { return (nil, 0, false) }
        if first == UInt8(ascii: "$") {
            guard bytes.count >= 4 else { return (nil, 0, false) }
            let channel = bytes[1]
            let length = Int(bytes[2]) << 8 | Int(bytes[3])
            if length > limits.interleavedFrame {
                skipping = (channel, length, length)
                return (nil, 4, true)
            }
            guard bytes.count >= 4 + length else { return (nil, 0, false) }
            return (.interleaved(channel: channel, payload: Array(bytes.slice(4, 4 + length))), 4 + length, false)
        }
        // Empty lines between messages are allowed (CRLF keep-alives): skip them.
        var blank = 0
        while blank < bytes.count, bytes[blank] == 0x0D || bytes[blank] == 0x0A { blank += 1 }
        if blank > 0 { return (nil, blank, true) }

        // Until the head's end has come (or a limit is passed), only the new bytes are searched.
        if bytes.count <= limits.headerSection, !bytes.hasHeadEnd(from: max(0, headSearched - 2)) {
            headSearched = bytes.count
            let newline = (0..<min(bytes.count, limits.startLine + 1)).contains { bytes[$0] == 0x0A }
            if newline || bytes.count <= limits.startLine { return (nil, 0, false) }
        }
        guard let (lines, headEnd) = try Self.headLines(bytes, limits: limits) else { return (nil, 0, false) }
        let startLine = try Self.parseStartLine(lines[0])
        var headers = RTSPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                !line[line.startIndex..<colon].contains(where: { $0 <= 0x20 || $0 == 0x7F })
            else { throw .malformedHeaderLine }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces
            headers.add(name, value)
        }
        var length = 0
        if let text = headers["Content-Length"] {
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw .invalidContentLength }
            guard text.utf8.count <= 18, let value = Int(text), value <= limits.skippableBody else {
                throw .bodyTooLarge(text.utf8.count <= 18 ? Int(text) ?? Int.max : Int.max)
            }
            if value > limits.body {
                skippingBody = value
                return (.oversizedMessage(RTSPMessage(startLine: startLine, headers: headers), length: value), headEnd, false)
            }
            length = value
        }
        if length == 0 { return (.message(RTSPMessage(startLine: startLine, headers: headers)), headEnd, false) }
        pendingHead = (startLine, headers, length)
        return (nil, headEnd, true)
    }

    /// The start line and header lines up to the empty line, and the index after it; nil if incomplete.
    private static func headLines(_ bytes: Rebased, limits: Limits) throws(RTSPParseError) -> ([ArraySlice<UInt8>], Int)? {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0A {
                var lineEnd = index
                if lineEnd > lineStart, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                if lineEnd == lineStart { return (lines, index + 1) }
                if lines.isEmpty, lineEnd - lineStart > limits.startLine { throw .startLineTooLong }
                lines.append(bytes.slice(lineStart, lineEnd))
                if lines.count > limits.headerLines + 1 { throw .tooManyHeaderLines }
                lineStart = index + 1
            }
            index += 1
            if index > limits.headerSection { throw lines.isEmpty ? .startLineTooLong : .headerSectionTooLarge }
        }
        if lines.isEmpty, bytes.count - lineStart > limits.startLine { throw .startLineTooLong }
        return nil
    }

    private static func parseStartLine(_ line: ArraySlice<UInt8>) throws(RTSPParseError) -> RTSPMessage.StartLine {
        guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .malformedStartLine }
        let text = String(decoding: line, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw .malformedStartLine }
        if parts[0].hasPrefix("RTSP/") {
            guard parts[0] == "RTSP/1.0" else { throw .unsupportedVersion }
            guard parts[1].utf8.count == 3, let status = Int(parts[1]), (100...599).contains(status) else {
                throw .malformedStartLine
            }
            return .response(status: status, reason: parts[2])
        }
        guard !parts[0].isEmpty,
            parts[0].utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }),
            !parts[1].isEmpty, !parts[2].contains(" ")
        else { throw .malformedStartLine }
        guard parts[2] == "RTSP/1.0" else {
            throw parts[2].hasPrefix("RTSP/") ? .unsupportedVersion : .malformedStartLine
        }
        return .request(method: parts[0], uri: parts[1])
    }
}

/// A slice read with indices from 0.
private struct Rebased {
    let slice: ArraySlice<UInt8>
    var count: Int { slice.count }
    var first: UInt8? { slice.first }
    subscript(_ index: Int) -> UInt8 { slice[slice.startIndex + index] }
    func slice(_ from: Int, _ to: Int) -> ArraySlice<UInt8> { slice[(slice.startIndex + from)..<(slice.startIndex + to)] }

    /// Whether an empty line ("\n\n" or "\n\r\n") ends a head at or after `from`.
    func hasHeadEnd(from: Int) -> Bool {
        var index = from
        while index < count {
            if self[index] == 0x0A {
                if index + 1 < count, self[index + 1] == 0x0A { return true }
                if index + 2 < count, self[index + 1] == 0x0D, self[index + 2] == 0x0A { return true }
            }
            index += 1
        }
        return false
    }
}
