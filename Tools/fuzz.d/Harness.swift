// libFuzzer harnesses for every parser in LyreWire that reads network input (issue 11). Built by Tools/fuzz
// together with LyreWire's sources into one binary (-sanitize=fuzzer,address); LYRE_FUZZ_TARGET picks the
// parser. Each harness feeds the input to the parser and, where it parses, round-trips what it can: a crash,
// a sanitizer report, or a parse of our own serialization that fails is a finding.

#if canImport(Glibc)
import Glibc
#endif

/// The parsers, by target name.
let targets: [String: ([UInt8]) -> Void] = [
    // RTSP framing, fed in two pieces, as a TCP stream arrives: requests, responses, interleaved frames.
    "rtsp": { bytes in
        var parser = RTSPParser(limits: {
            var limits = RTSPParser.Limits()
            limits.body = 64 * 1024
            return limits
        }())
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        var buffer = Array(bytes[..<cut])
        for piece in [bytes[cut...]] {
            while let frame = try? parser.next(&buffer) { _ = frame }
            buffer += piece
        }
        while let frame = try? parser.next(&buffer) { _ = frame }
    },
    "sdp": { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        _ = try? SessionDescription(parsing: text).audioFormat()
        _ = try? SessionDescription(parsing: text).crypto()
    },
    "rtp": { bytes in
        if let packet = try? RTPPacket(parsing: bytes) {
            guard (try? RTPPacket(parsing: packet.serialized())) == packet else { fatalError("RTP round trip differs") }
        }
    },
    "fec": { bytes in _ = try? FECPacket(parsing: bytes) },
    "rtcp": { bytes in
        _ = try? RTCPPacket.all(in: bytes)
        _ = try? RTCPGenericNACK.all(in: bytes)
    },
    "timing": { bytes in
        if let packet = TimingPacket(parsing: bytes) {
            guard TimingPacket(parsing: packet.serialized()) == packet else { fatalError("timing round trip differs") }
        }
    },
    "txt": { bytes in
        if let txt = try? TXTRecord.parse(bytes) { _ = try? ReceiverTXT(txt) }
    },
    "now-playing": { bytes in
        _ = try? NowPlayingInfo(parsing: bytes)
        _ = try? Artwork(bytes: bytes)
    },
    // SET_PARAMETER bodies (volume, commands, session-end) and the RTSP header values Lyre reads.
    "parameters": { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        let parameters = TextParameters(parsing: text)
        _ = try? RemoteCommandEvent(parsing: parameters)
        _ = TransportSpec(parsing: text)
        _ = RTPInfo(parsing: text)
        _ = PlaybackAnchor(parsing: text)
    },
    // PAIR bodies (Protocol/pairing.md §3): every message either side parses; what parses round-trips.
    "pairing": { bytes in
        if let m = try? PairingMessage.Start(parsing: bytes), (try? PairingMessage.Start(parsing: m.encoded)) != m { fatalError("start round trip") }
        if let m = try? PairingMessage.Started(parsing: bytes), (try? PairingMessage.Started(parsing: m.encoded)) != m { fatalError("started round trip") }
        if let m = try? PairingMessage.Exchange(parsing: bytes), (try? PairingMessage.Exchange(parsing: m.encoded)) != m { fatalError("exchange round trip") }
        if let m = try? PairingMessage.Exchanged(parsing: bytes), (try? PairingMessage.Exchanged(parsing: m.encoded)) != m { fatalError("exchanged round trip") }
        _ = try? PairingMessage.Confirm(parsing: bytes)
    },
    // The control socket's lines.
    "control": { bytes in _ = try? ControlRequest(line: String(decoding: bytes, as: UTF8.self)) },
    // SETUP's `Lyre-FEC` and `Lyre-Channels` values (streaming.md §4.3, §2): what parses round-trips.
    "headers": { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        if let fec = FECHeader(parsing: text), FECHeader(parsing: fec.serialized) != fec { fatalError("Lyre-FEC round trip differs") }
        if let map = ChannelMap(parsing: text), ChannelMap(parsing: map.rawValue) != map { fatalError("channel map round trip differs") }
        let kinds = FeedbackHeader.kinds(text)
        if FeedbackHeader.kinds(FeedbackHeader.value(kinds)) != kinds { fatalError("Lyre-Feedback round trip differs") }
    },
    // A sender's SET_PARAMETER bodies: its enabled commands and its rooms (now-playing.md §4, streaming.md §3).
    "sender-parameters": { bytes in
        let parameters = TextParameters(parsing: String(decoding: bytes, as: UTF8.self))
        if let list = parameters["remote-commands"], let enabled = try? EnabledCommands(list: list, skipInterval: parameters["skip-interval"]) {
            let again = enabled.parameters
            guard (try? EnabledCommands(list: again["remote-commands"] ?? "", skipInterval: again["skip-interval"])) == enabled else {
                fatalError("enabled commands round trip differs")
            }
        }
        if let rooms = try? RoomList(parsing: parameters) {
            guard (try? RoomList(parsing: rooms.parameters)) == rooms else { fatalError("room list round trip differs") }
            _ = rooms.names.map(RoomList.printable)
        }
    },
]

let chosen: ([UInt8]) -> Void = {
    guard let name = getenv("LYRE_FUZZ_TARGET").map({ String(cString: $0) }), let target = targets[name] else {
        fputs("lyre-fuzz: set LYRE_FUZZ_TARGET to one of: \(targets.keys.sorted().joined(separator: " "))\n", stderr)
        exit(64)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    chosen(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
