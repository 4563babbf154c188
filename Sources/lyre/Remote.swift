import ArgumentParser
import LyreCommandLine
import LyreControl
import LyrePairing
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `lyre remote`: a remote control at the receiver. Sends one command through lyred's control socket; lyred
/// relays it to the sender that is playing, whose answer decides the exit status.
struct Remote: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Control what a local lyred is playing, through its control socket.",
        discussion: """
            Commands: \(ControlRequest.usage).
            The receiver relays the command to the sender that is playing; lyre exits non-zero when the sender \
            refuses or has the command disabled. 'now-playing' prints what plays (--json for the receiver's JSON); 'pairing' the PIN a sender \
            that runs 'lyre pair' must type; 'paired' the senders paired here; 'unpair ID' forgets one.
            """)

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The command and its argument, e.g. 'skip -15'.", valueName: "COMMAND"))
    var words: [String] = []

    @Option(help: ArgumentHelp("lyred's control socket (default: \(ControlSocketPath.default)).", valueName: "PATH"))
    var socket: String?

    @Flag(help: "Print now-playing as JSON.")
    var json = false

    func validate() throws {
        guard !words.isEmpty else { throw ValidationError("name a command: \(ControlRequest.usage)") }
        do { _ = try ControlRequest(words: words) } catch { throw ValidationError("\(error)") }
    }

    func run() throws {
        let request = try ControlRequest(words: words)
        let path = socket ?? ControlSocketPath.default
        let answer = try Self.exchange(words, path: path, peer: "lyred")
        if answer == "ok" { return }
        if answer.hasPrefix("ok ") {
            let payload = String(answer.dropFirst(3))
            switch request {
            case .nowPlaying where !json: print(Self.describe(payload))
            case .pairing where !json: print(Self.describePairing(payload))
            case .paired where !json: print(Self.describePaired(payload))
            default: print(payload)
            }
            return
        }
        if answer.hasPrefix("error notKept: ") {
            // In effect, only not kept past a restart: the value asked for is the one now, and a warning says why.
            switch request {
            case .outputDelay(let milliseconds?): print(milliseconds)
            case .name(let name?): print(name)
            default: break
            }
            Console.standardError.write(line: "lyre: warning: \(answer.dropFirst("error notKept: ".count))")
            return
        }
        let message = answer.hasPrefix("error ") ? String(answer.dropFirst(6)) : "unexpected answer from lyred: \(answer)"
        throw CommandFailure(message)
    }

    /// Sends one request to a local control socket (lyred's, or lyre play's group socket), its words written
    /// as `LineWords` says (a name with spaces or quotes stays one word), and reads the one-line answer (at most
    /// 10 s).
    static func exchange(_ words: [String], path: String, peer: String) throws -> String {
        guard !words.contains(where: { $0.contains { $0.isNewline } }) else {
            throw CommandFailure("a request cannot hold a line break; name the receiver or sender without one")
        }
        let line = LineWords.join(words)
        // Never tell a request (a PIN asked for, a command) to a socket in a directory another user controls.
        do { try LineServer.checkDirectory(of: path) } catch { throw CommandFailure("\(error)") }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CommandFailure("cannot make a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw CommandFailure("--socket path is too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in bytes.enumerated() { raw[i] = byte } }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let why = errno == EACCES ? "permission denied (it belongs to another user)" : String(cString: strerror(errno))
            throw CommandFailure("cannot reach \(peer) at \(path): \(why); is \(peer) running? (pass --socket PATH)")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array((line + "\n").utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw CommandFailure("\(peer) closed its control socket")
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !answer.contains(UInt8(ascii: "\n")) {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                // A connection reset is a close too: the other end went away with the request unread.
                if n == 0 || errno == ECONNRESET { throw CommandFailure("\(peer) closed its control socket without answering") }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw CommandFailure("no answer from \(peer) within 10 s") }
                throw CommandFailure("cannot read \(peer)'s answer: \(String(cString: strerror(errno)))")
            }
            answer += chunk[0..<n]
        }
        return String(decoding: answer.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// The PIN of the pairing under way, and for whom.
    static func describePairing(_ json: String) -> String {
        guard let pending = try? JSONDecoder().decode(PairingResponder.Pending.self, from: Data(json.utf8)) else { return json }
        return "PIN \(pending.pin) for \(Printable.quoted(pending.senderName)) (\(pending.secondsLeft) s left)"
    }

    /// One line per paired sender: id, name, when.
    static func describePaired(_ json: String) -> String {
        guard let entries = try? JSONDecoder().decode([PairedDevices.Entry].self, from: Data(json.utf8)) else { return json }
        guard !entries.isEmpty else { return "no paired senders; pair one with 'lyre pair NAME' on it" }
        return entries.map { "\($0.id)  \(Printable.escaped($0.name))  paired \($0.pairedText)" }.joined(separator: "\n")
    }

    /// One readable line from the now-playing JSON.
    static func describe(_ json: String) -> String {
        (try? JSONDecoder().decode(ControlNowPlaying.self, from: Data(json.utf8)))?.summary ?? json
    }
}
