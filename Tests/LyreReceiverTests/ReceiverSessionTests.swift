import LyreWire
import Testing

@testable import LyreReceiver

/// Which requests a connection's session takes when (streaming.md §3), without a connection.
@Suite struct ReceiverSessionTests {
    static let methods = ["OPTIONS", "ANNOUNCE", "SETUP", "RECORD", "FLUSH", "SET_PARAMETER", "GET_PARAMETER", "TEARDOWN", "PAIR"]

    @Test func aConnectionWithoutASessionChangesNone() {
        for method in Self.methods {
            let changes = ReceiverSession.sessionMethods.contains(method)
            #expect(ReceiverSession.admission(of: method, naming: nil, on: nil) == (changes ? .noSession : .admitted), "\(method)")
            #expect(ReceiverSession.admission(of: method, naming: "ABC", on: nil) == (changes ? .notThisConnections : .admitted), "\(method)")
        }
        #expect(ReceiverSession.sessionMethods == ["SETUP", "RECORD", "FLUSH", "SET_PARAMETER", "TEARDOWN"])
    }

    @Test func anotherSessionsIdIsRefusedWhateverTheMethod() {
        let session = ReceiverSession(id: "ABC", phase: .recording)
        for method in Self.methods {
            #expect(ReceiverSession.admission(of: method, naming: "XYZ", on: session) == .otherSession, "\(method)")
            #expect(ReceiverSession.admission(of: method, naming: "ABC", on: session) != .otherSession, "\(method)")
        }
    }

    @Test func setupComesOnceAfterAnnounceAndRecordAndFlushAfterSetup() {
        let announced = ReceiverSession(id: "ABC", phase: .announced)
        let ready = ReceiverSession(id: "ABC", phase: .ready)
        let recording = ReceiverSession(id: "ABC", phase: .recording)
        #expect(ReceiverSession.admission(of: "SETUP", naming: nil, on: announced) == .admitted)
        #expect(ReceiverSession.admission(of: "SETUP", naming: "ABC", on: ready) == .notNow)
        #expect(ReceiverSession.admission(of: "SETUP", naming: "ABC", on: recording) == .notNow)
        for method in ["RECORD", "FLUSH"] {
            #expect(ReceiverSession.admission(of: method, naming: "ABC", on: announced) == .notNow)
            #expect(ReceiverSession.admission(of: method, naming: "ABC", on: ready) == .admitted)
            #expect(ReceiverSession.admission(of: method, naming: "ABC", on: recording) == .admitted)
        }
        // A second ANNOUNCE, volume and the end are taken in every phase.
        for session in [announced, ready, recording] {
            for method in ["ANNOUNCE", "SET_PARAMETER", "GET_PARAMETER", "TEARDOWN", "OPTIONS"] {
                #expect(ReceiverSession.admission(of: method, naming: "ABC", on: session) == .admitted, "\(method) \(session.phase)")
            }
        }
    }

    @Test func publicListsEveryMethodTheReceiverTakesAndEachIsRoutedToItsOwnRules() {
        #expect(ReceiverSession.methodList == Self.methods.joined(separator: ", "))
        for request in ReceiverSession.Request.allCases {
            // SETUP comes once, before RECORD.
            let session = ReceiverSession(id: "ABC", phase: request == .setup ? .announced : .recording)
            #expect(ReceiverSession.route(request.rawValue, naming: "ABC", on: session) == .take(request))
        }
    }

    /// streaming.md §2: an unknown method is 501 with `Public`, counted as bad input; a player's method, which
    /// a sender that mistook this for an RTSP server might send, is 405 with `Allow`, not counted.
    @Test func aMethodNotTakenIsRefusedWithTheListOfThoseThatAre() {
        for session in [nil, ReceiverSession(id: "ABC", phase: .ready)] {
            for method in ["DESCRIBE", "PLAY", "PAUSE", "REDIRECT"] {
                #expect(ReceiverSession.route(method, naming: nil, on: session) == .refuse(SessionRefusal(405), listing: "Allow"), "\(method)")
            }
            for method in ["", "options", "GET", "POST", "SET_PARAMETERS", "RECORD2"] {
                #expect(ReceiverSession.route(method, naming: nil, on: session) == .refuse(SessionRefusal(501, counted: true), listing: "Public"), "\(method)")
            }
        }
    }

    /// The session's own rules come before the method's: a request naming another session is 454 whatever
    /// it asks, and one that would change a session on a connection without one is counted with a reason.
    @Test func theSessionIsJudgedBeforeTheMethod() {
        let session = ReceiverSession(id: "ABC", phase: .ready)
        #expect(ReceiverSession.route("DESCRIBE", naming: "XYZ", on: session) == .refuse(SessionRefusal(454), listing: nil))
        #expect(ReceiverSession.route("GET", naming: "XYZ", on: session) == .refuse(SessionRefusal(454), listing: nil))
        #expect(ReceiverSession.route("SETUP", naming: "ABC", on: session) == .refuse(SessionRefusal(455), listing: nil))
        #expect(ReceiverSession.route("RECORD", naming: nil, on: nil) == .refuse(SessionRefusal(455, "no session: ANNOUNCE first", counted: true), listing: nil))
        #expect(ReceiverSession.route("FLUSH", naming: "ABC", on: nil) == .refuse(SessionRefusal(454, "no such session on this connection", counted: true), listing: nil))
    }

    @Test func theSessionHeadersIdIsWhatComesBeforeItsParameters() {
        #expect(SessionHeader.id("1A2B3C;timeout=60") == "1A2B3C")
        #expect(SessionHeader.id("1A2B3C") == "1A2B3C")
        #expect(SessionHeader.id(nil) == nil)
    }
}
