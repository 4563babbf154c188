import Testing

@testable import LyreSender

/// What a pacer catching up after a stall counts and says (streaming.md §9.1).
@Suite struct CatchUpTests {
    @Test func itCountsTheFramesRunThroughAndThoseThatPassedInSilence() {
        var catchUp = CatchUp(waitUntil: 0)
        for _ in 0..<240 { catchUp.count(starved: false) }
        #expect(catchUp.summary(frameMilliseconds: 20)
                == "the sender was stopped or held up: 240 frames (4800 ms) could no longer play and were skipped; every sample after it plays where it was due")
        for _ in 0..<8 { catchUp.count(starved: true) }
        #expect(catchUp.frames == 248 && catchUp.silent == 8)
        #expect(catchUp.summary(frameMilliseconds: 20).hasSuffix("8 of them passed in silence, the app's audio late, and what follows plays 160 ms later"))
    }
}
