import ArgumentParser
import LyreCommandLine
import LyreSender
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `lyre group`: the rooms of the user's running `lyre play`, through its group socket.
struct Group: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, add or remove the rooms of the running 'lyre play'.",
        discussion: """
            'lyre group' lists each room: its state, channels, volume, latency and link quality (loss, recovered, \
            jitter, round trip). 'lyre group add NAME[=CHANNELS]' adds a room while the audio plays (it starts in \
            sync); 'lyre group remove NAME' takes one out, and the others play on. 'lyre group volume DB' sets the \
            group volume (every room moves by the same dB); 'lyre group volume NAME DB' sets one room's.
            """)

    // Every word that is not an option is the request's, so that a negative volume (-10) is not read as one.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Nothing (list), add NAME[=CHANNELS], remove NAME, or volume [NAME] DB.", valueName: "REQUEST"))
    var words: [String] = []

    @Option(help: ArgumentHelp("lyre play's group socket (default: \(GroupSocketPath.default)).", valueName: "PATH"))
    var socket: String?

    @Flag(help: "Print the listing as JSON.")
    var json = false

    func validate() throws {
        switch (words.first, words.count) {
        case (nil, _), ("list", 1), ("add", 2), ("remove", 2), ("volume", 2), ("volume", 3): break
        default: throw ValidationError("say nothing (list), add NAME[=CHANNELS], remove NAME, or volume [NAME] DB")
        }
    }

    func run() throws {
        let answer = try Remote.exchange(words.isEmpty ? ["list"] : words, path: socket ?? GroupSocketPath.default, peer: "lyre play")
        if answer == "ok" { return }
        guard answer.hasPrefix("ok ") else {
            throw CommandFailure(answer.hasPrefix("error ") ? String(answer.dropFirst(6)) : "unexpected answer from lyre play: \(answer)")
        }
        let payload = String(answer.dropFirst(3))
        if json { print(payload); return }
        print(Self.table(payload))
    }

    /// The listing as a table, one room a line.
    static func table(_ json: String) -> String {
        guard let listing = try? JSONDecoder().decode(GroupListing.self, from: Data(json.utf8)) else { return json }
        func db(_ value: Double) -> String { value <= -144 ? "muted" : NumberText.fixed(value) + " dB" }
        func ms(_ value: Double) -> String { NumberText.fixed(value) + " ms" }
        var rows = [["ROOM", "STATE", "CHANNELS", "VOLUME", "LATENCY", "DELAY", "RTT", "LOSS", "RECOVERED", "JITTER", "RESENT", "SECURITY", "ADDRESS"]]
        for room in listing.rooms {
            let rtt = room.quality?.roundTripMilliseconds.map(ms) ?? room.link?["rtt-us"].map { "\($0) us" } ?? "-"
            let quality = room.quality
            rows.append([room.name, room.state, room.channels, db(room.volume), ms(room.outputLatencyMs),
                         "\(room.outputDelayMs) ms", rtt, quality.map { NumberText.fixed($0.lossPercent) + "%" } ?? "-",
                         quality.map { "\($0.recovered + $0.recoveredByFEC)/\($0.missed)" } ?? "-",
                         quality.map { ms($0.jitterMilliseconds) } ?? "-",
                         room.retransmission.map { "\($0.resent)" } ?? "-", room.encrypted ? "tls+srtp" : "plain", room.address])
        }
        return (["group volume \(db(listing.volume))"] + TextTable.lines(rows)).joined(separator: "\n")
    }
}
