import LyreWire
import Testing

@testable import LyreReceiver

/// Which requests a connection's session takes when (streaming.md §3), and what becomes of an ANNOUNCE, without a
/// connection.
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
    // MARK: An ANNOUNCE's entry (pairing.md §6; streaming.md §2, §7, §8)

    final class Sender {
        let name: String
        init(_ name: String) { self.name = name }
    }
    typealias Entry = ReceiverSession.Entry<Sender>

    static let notPaired = SessionRefusal(403, "not paired", detail: "plain RTSP")

    /// The entry of an ANNOUNCE with `headers` by `newcomer` on a receiver whose stage is `stage`.
    static func entry(_ headers: [(String, String)] = [], access: SessionRefusal? = nil, body: String? = nil,
                      stage: SessionStage<Sender>, newcomer: Sender = Sender("new"), outputAvailable: Bool = true) -> Entry {
        ReceiverSession.entry(
            access: access, terms: SessionTermsTests.read(SessionTermsTests.announce(headers, body: body)),
            place: { stage.placement(of: newcomer, mixing: $0.mix != nil) }, name: \.name, outputAvailable: outputAvailable)
    }

    /// A stage where `music` plays with `overlays` sessions over it.
    static func stage(music: Sender, overlays: Int) -> SessionStage<Sender> {
        var stage = SessionStage<Sender>()
        _ = stage.claim(music, goesOn: { _ in false })
        for _ in 0..<overlays { _ = stage.addOverlay(Sender("overlay"), pauses: false) }
        return stage
    }

    static func refusal(_ entry: Entry) -> (SessionRefusal, notice: String?)? {
        if case .refused(let refusal, let notice) = entry { return (refusal, notice) }
        return nil
    }

    @Test func aSessionPlaysAsTheMainOneOrOverTheOneThatPlaysWhenItAskedToMix() throws {
        let music = Sender("Kitchen radio")
        let stage = Self.stage(music: music, overlays: 1)
        guard case .plays(let plain, let under) = Self.entry(stage: stage) else { Issue.record("refused"); return }
        #expect(plain.mix == nil && under == nil)
        guard case .plays(let ducking, let over) = Self.entry([("Lyre-Mix", "duck")], stage: stage) else { Issue.record("refused"); return }
        #expect(ducking.mix == .duck && over === music)
        // With nothing playing there is nothing to mix with: it plays as the main session.
        guard case .plays(_, let alone) = Self.entry([("Lyre-Mix", "mix")], stage: SessionStage()) else { Issue.record("refused"); return }
        #expect(alone == nil)
    }

    @Test func aSenderTheReceiverDoesNotAdmitLearnsNothingMore() throws {
        // Bad terms, no room over the music and no output: still only 403, and the log says who was turned away.
        let full = Self.stage(music: Sender("music"), overlays: SessionStage<Sender>.maximumOverlays)
        let refused = try #require(Self.refusal(Self.entry([("Lyre-Mix", "duck")], access: Self.notPaired, body: "v=0\r\n",
                                                           stage: full, outputAvailable: false)))
        #expect(refused.0 == Self.notPaired)
        #expect(refused.notice == "not paired (plain RTSP)")
    }

    @Test func termsAreReadBeforeThereIsAPlaceOrAnOutputForThem() throws {
        let full = Self.stage(music: Sender("music"), overlays: SessionStage<Sender>.maximumOverlays)
        let badTerms = try #require(SessionTermsTests.refusal(SessionTermsTests.announce([("Lyre-Mix", "duck")], body: "v=0\r\n")))
        let refused = try #require(Self.refusal(Self.entry([("Lyre-Mix", "duck")], body: "v=0\r\n", stage: full, outputAvailable: false)))
        #expect(refused.0 == badTerms && refused.notice == nil)
    }

    @Test func theFifthOverlayIsRefusedWith453NamingTheSessionItWouldPlayOver() throws {
        let music = Sender("Kitchen\nradio")
        let limit = SessionStage<Sender>.maximumOverlays
        #expect(limit == 4)  // streaming.md §7
        let full = Self.stage(music: music, overlays: limit)
        // Before the output is asked: there would be no place for it either way.
        let refused = try #require(Self.refusal(Self.entry([("Lyre-Mix", "mix")], stage: full, outputAvailable: false)))
        #expect(refused.0.status == 453 && !refused.0.counted && refused.0.retryAfter == nil)
        #expect(refused.0.reason == "it plays 4 sessions over 'Kitchen\\nradio' already, the most it mixes; try again when one ends")
        #expect(refused.notice == "4 sessions play over 'Kitchen\\nradio' already")
        // A plain session is not an overlay: it takes over, whatever plays over the music.
        guard case .plays(_, nil) = Self.entry(stage: full) else { Issue.record("refused"); return }
        // One overlay fewer, and the next goes over the music.
        guard case .plays(_, let over?) = Self.entry([("Lyre-Mix", "mix")], stage: Self.stage(music: music, overlays: limit - 1)) else {
            Issue.record("refused"); return
        }
        #expect(over === music)
    }

    @Test func withItsOutputGoneTheReceiverAsksTheSenderToTryAgainIn5Seconds() throws {
        let refused = try #require(Self.refusal(Self.entry(stage: SessionStage(), outputAvailable: false)))
        #expect(refused.0 == SessionRefusal(503, retryAfter: 5) && refused.notice == nil)
        #expect(!refused.0.counted && refused.0.reason == nil)
    }

    /// streaming.md §1 (a sender may pipeline): a SETUP whose ports come back after its session ended must not
    /// take the output. Its media's identity and the session's id are what tell.
    @Test func aSetupWhoseSessionEndedWhileItsPortsWereBoundIsRefused454AndPlaysNothing() throws {
        final class Media {}
        let (asked, other) = (Media(), Media())
        let mix = SessionMix.none
        let ports: Result<Int, any Error> = .success(6000)
        func bound(_ session: inout ReceiverSession?, current: Media?) -> Result<(ReceiverSession.Output, Int), SessionRefusal> {
            ReceiverSession.setupBound(
                asked: "S1", media: ObjectIdentifier(asked), on: &session, current: current.map(ObjectIdentifier.init), bound: ports, mix: mix)
        }
        let ended = SessionRefusal(454, "the session ended before its SETUP was answered")
        // TEARDOWN: no session, no media.
        var none: ReceiverSession?
        #expect(throws: ended) { try bound(&none, current: nil).get() }
        // A second ANNOUNCE on the connection: the same id, its media released (or made anew).
        var again: ReceiverSession? = ReceiverSession(id: "S1", phase: .announced)
        #expect(throws: ended) { try bound(&again, current: nil).get() }
        #expect(throws: ended) { try bound(&again, current: other).get() }
        #expect(again?.phase == .announced)
        // A session of another id (the connection's session ended and another began).
        var another: ReceiverSession? = ReceiverSession(id: "S2", phase: .announced)
        #expect(throws: ended) { try bound(&another, current: asked).get() }
        // Still its own: ready, and played as the main session.
        var own: ReceiverSession? = ReceiverSession(id: "S1", phase: .announced)
        let played = try bound(&own, current: asked).get()
        #expect(played.0 == .play && played.1 == 6000)
        #expect(own?.phase == .ready)
    }

    @Test func aBoundSetupPlaysOverTheMusicAsItsAnnounceAskedAndABindThatFailedIs500() throws {
        final class Media {}
        let media = Media()
        struct Unbindable: Error {}
        var ducking = SessionMix.none
        ducking.announce(try SessionMixTests.terms([("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-20")]), over: true)
        let own = ducking.takesVolume(-6)
        #expect(own)
        var session: ReceiverSession? = ReceiverSession(id: "S1", phase: .announced)
        let over = try ReceiverSession.setupBound(
            asked: "S1", media: ObjectIdentifier(media), on: &session, current: ObjectIdentifier(media),
            bound: Result<Int, any Error>.success(1), mix: ducking).get()
        #expect(over.0 == .mix(duckDB: -20, volume: -6))
        var mixing = SessionMix.none
        mixing.announce(try SessionMixTests.terms([("Lyre-Mix", "mix")]), over: true)
        let mixed = try ReceiverSession.setupBound(
            asked: "S1", media: ObjectIdentifier(media), on: &session, current: ObjectIdentifier(media),
            bound: Result<Int, any Error>.success(1), mix: mixing).get()
        #expect(mixed.0 == .mix(duckDB: nil, volume: 0))
        // The ports could not be bound: 500, and the session stays where it was.
        var announced: ReceiverSession? = ReceiverSession(id: "S1", phase: .announced)
        #expect(throws: SessionRefusal(500)) {
            try ReceiverSession.setupBound(
                asked: "S1", media: ObjectIdentifier(media), on: &announced, current: ObjectIdentifier(media),
                bound: Result<Int, any Error>.failure(Unbindable()), mix: mixing).get()
        }
        #expect(announced?.phase == .announced)
    }
}
