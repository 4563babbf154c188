import Foundation
@testable import LyreSender
import LyreWire
import NIOCore
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

    /// The awaited form fails as the blocking one does: typed, with the address, and naming the room among several.
    @Test func anUnreachableReceiverFailsTheAwaitedFormAlike() async throws {
        let port = try Self.closedPort()
        await #expect {
            try await StreamSession.connect(routes: [OutputRoute(host: "127.0.0.1", port: port)], configuration: StreamConfiguration())
        } throws: { error in
            guard case .connectionLost(let why) = error as? LyreSenderError else { return false }
            return why.hasPrefix("cannot connect to 127.0.0.1:\(port): ")
        }
        let rooms = [OutputRoute(host: "127.0.0.1", port: port, name: "Kitchen"), OutputRoute(host: "127.0.0.1", port: port, name: "Porch")]
        await #expect {
            try await StreamSession.connect(routes: rooms, configuration: StreamConfiguration())
        } throws: { error in
            guard case .room(let room, .connectionLost) = error as? LyreSenderError else { return false }
            return room == "'Kitchen'"
        }
    }

    /// A refusal carries what was asked, the status and the receiver's reason (its `Lyre-Error`, else what the
    /// status means; 503 is the output).
    @Test func aRefusalCarriesWhatStatusAndReason() {
        let answers: [(RTSPMessage, LyreSenderError)] = [
            (.response(451, cseq: 1, headers: [("Lyre-Error", "volume must be -144 or -30...0")]),
             .refused(what: "volume SET_PARAMETER", status: 451, reason: "volume must be -144 or -30...0")),
            (.response(503, cseq: 1), .refused(what: "volume SET_PARAMETER", status: 503, reason: "its audio output is unavailable")),
            (.response(454, cseq: 1), .refused(what: "volume SET_PARAMETER", status: 454, reason: "454 Session Not Found")),
        ]
        for (answer, expected) in answers {
            #expect(throws: expected) { try SenderHandshake.check(answer, "volume SET_PARAMETER") }
        }
    }

    /// A TCP listener on loopback that accepts and never answers, or closes each connection at once.
    static func listener(closing: Bool) throws -> Channel {
        try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                closing ? channel.close() : channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    /// A receiver that does not answer is `timedOut` with the method and the time waited; one that closes the
    /// connection is `connectionLost`.
    @Test func noAnswerIsATimeoutAndAClosedConnectionIsLost() throws {
        let silent = try Self.listener(closing: false)
        defer { silent.close(promise: nil) }
        let client = try RTSPClient.connected(host: "127.0.0.1", port: UInt16(silent.localAddress!.port!), onRequest: { _, _ in }, onClose: {})
        defer { client.close() }
        #expect(throws: LyreSenderError.timedOut(method: "OPTIONS", seconds: 0.2)) { try client.request("OPTIONS", timeout: 0.2) }

        let closing = try Self.listener(closing: true)
        defer { closing.close(promise: nil) }
        let closed = try RTSPClient.connected(host: "127.0.0.1", port: UInt16(closing.localAddress!.port!), onRequest: { _, _ in }, onClose: {})
        defer { closed.close() }
        #expect(throws: LyreSenderError.connectionLost("the receiver closed the connection")) { try closed.request("OPTIONS", timeout: 5) }
    }

    /// A receiver whose key is not the one paired with says what to do.
    @Test func aChangedKeySaysHowToPairAgain() {
        let error = SenderSecurity.keyChanged(OutputRoute(host: "127.0.0.1", port: 7700, name: "Kitchen"))
        guard case .keyChanged(let what) = error else {
            Issue.record("\(error)")
            return
        }
        #expect(what.hasSuffix("lyre pair --forget 'Kitchen', then lyre pair 'Kitchen'"))
    }
}
