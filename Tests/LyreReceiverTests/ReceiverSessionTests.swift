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

    @Test func theSessionHeadersIdIsWhatComesBeforeItsParameters() {
        #expect(SessionHeader.id("1A2B3C;timeout=60") == "1A2B3C")
        #expect(SessionHeader.id("1A2B3C") == "1A2B3C")
        #expect(SessionHeader.id(nil) == nil)
    }
}
