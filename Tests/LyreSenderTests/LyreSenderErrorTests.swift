import Foundation
@testable import LyreSender
import NIOPosix
import Testing

/// What a playback throws is a `LyreSenderError` an app can match, and its description is the line `lyre play`
/// prints.
struct LyreSenderErrorTests {
    @Test func eachCaseSaysWhatHappened() {
        let cases: [(LyreSenderError, String)] = [
            (.refused(what: "volume SET_PARAMETER", status: 451, reason: "volume must be -144 or -30...0"),
             "the receiver refused volume SET_PARAMETER: volume must be -144 or -30...0"),
            (.connectionLost("the receiver closed the connection"), "the receiver closed the connection"),
            (.timedOut(method: "RECORD", seconds: 5), "no answer to RECORD within 5 s"),
            (.ended, "the playback has ended"),
            (.rooms("no room 'Attic' in this playback"), "no room 'Attic' in this playback"),
            (.room("'Kitchen'", .timedOut(method: "SETUP", seconds: 5)), "'Kitchen': no answer to SETUP within 5 s"),
        ]
        for (error, line) in cases { #expect(error.description == line) }
    }

    /// A port nothing listens on (made and closed here, on loopback).
    static func closedPort() throws -> UInt16 {
        let channel = try DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
        let port = UInt16(channel.localAddress!.port!)
        try channel.close().wait()
        return port
    }

    /// A receiver that cannot be reached is `connectionLost`, with the address; among several rooms, the
    /// error names the room.
    @Test func anUnreachableReceiverIsAConnectionLostThatNamesTheRoom() throws {
        let port = try Self.closedPort()
        #expect {
            try StreamSession(host: "127.0.0.1", port: port, configuration: StreamConfiguration())
        } throws: { error in
            guard case .connectionLost(let why) = error as? LyreSenderError else { return false }
            return why.hasPrefix("cannot connect to 127.0.0.1:\(port): ")
        }
        let rooms = [OutputRoute(host: "127.0.0.1", port: port, name: "Kitchen"), OutputRoute(host: "127.0.0.1", port: port, name: "Porch")]
        #expect {
            try StreamSession(routes: rooms, configuration: StreamConfiguration())
        } throws: { error in
            guard case .room(let room, .connectionLost) = error as? LyreSenderError else { return false }
            return room == "'Kitchen'" || room == "'Porch'"
        }
    }
}
