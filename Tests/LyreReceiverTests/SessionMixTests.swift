import LyreWire
import Testing

@testable import LyreReceiver

/// How a session meets the receiver's others (streaming.md §7), without a connection: what its ANNOUNCE
/// asked, placed over a session or as the main one; playing over a plain session that comes after it; and
/// whose volume a volume change is.
@Suite struct SessionMixTests {
    static func terms(_ headers: [(String, String)]) throws -> AnnounceTerms {
        try SessionTermsTests.read(SessionTermsTests.announce(headers)).get()
    }

    static func announced(_ headers: [(String, String)], over: Bool) throws -> SessionMix {
        var mix = SessionMix.none
        mix.announce(try terms(headers), over: over)
        return mix
    }

    @Test func aPlainSessionPlaysAsTheMainOneAndNeverOver() throws {
        var mix = try Self.announced([], over: false)
        #expect(mix.asked == nil && mix.overlay == nil && mix.overlayDuckDB == nil && !mix.isSpokenAudio)
        // A plain session that comes after it takes it over: it does not go on over it.
        let goesOver = mix.playOver()
        #expect(goesOver == nil)
        #expect(mix.overlay == nil)
        // Its volume is the receiver's.
        let ownVolume = mix.takesVolume(-20)
        #expect(!ownVolume)
        #expect(mix.overlayVolume == 0)
    }

    @Test func aDuckOverASessionLowersItByItsDepthAndKeepsItsOwnVolume() throws {
        var mix = try Self.announced([("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-20")], over: true)
        #expect(mix.asked == .duck && mix.overlay == .duck)
        #expect(mix.overlayDuckDB == -20)
        // Already over another: a plain session that comes is not played under it a second time.
        let goesOverAgain = mix.playOver()
        #expect(goesOverAgain == nil)
        let ownVolume = mix.takesVolume(-6.5)
        #expect(ownVolume)
        #expect(mix.overlayVolume == -6.5)
        // A second ANNOUNCE starts over with its terms; the overlay's volume stays, as the receiver's does.
        mix.announce(try Self.terms([("Lyre-Mix", "mix")]), over: true)
        #expect(mix.overlay == .mix && mix.overlayDuckDB == nil)
        #expect(mix.overlayVolume == -6.5)
    }

    @Test func aDuckWithNothingToPlayOverPlaysAsTheMainOneAndGoesOverTheNextAtZeroDB() throws {
        // The receiver's own depth when the request names none.
        var mix = try Self.announced([("Lyre-Mix", "duck")], over: false)
        #expect(mix.asked == .duck && mix.overlay == nil)
        // While it is the main session it does not duck, and its volume is the receiver's.
        #expect(mix.overlayDuckDB == nil)
        let ownVolumeAsMain = mix.takesVolume(-30)
        #expect(!ownVolumeAsMain)
        // A plain session comes: it goes on over it, ducking it by its depth, at its own volume.
        let goesOver = mix.playOver()
        #expect(goesOver == .duck)
        #expect(mix.overlay == .duck && mix.overlayDuckDB == -12 && mix.overlayVolume == 0)
        let goesOverAgain = mix.playOver()
        #expect(goesOverAgain == nil)
        let ownVolume = mix.takesVolume(-3)
        #expect(ownVolume)
        #expect(mix.overlayVolume == -3)
    }

    @Test func goingOverTheNextSessionStartsFromZeroDBWhateverItsVolumeWas() throws {
        // An overlay set to -6.5 dB announces again, now with nothing to play over: it plays as the main one.
        var mix = try Self.announced([("Lyre-Mix", "mix")], over: true)
        let ownVolume = mix.takesVolume(-6.5)
        #expect(ownVolume)
        mix.announce(try Self.terms([("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-9")]), over: false)
        #expect(mix.overlay == nil && mix.overlayVolume == -6.5)
        // A plain session comes: it goes on over it at 0 dB, not at the volume it had as an overlay before.
        let goesOver = mix.playOver()
        #expect(goesOver == .duck)
        #expect(mix.overlayVolume == 0 && mix.overlayDuckDB == -9)
    }

    @Test func spokenAudioIsWhatItsAnnounceSaid() throws {
        var mix = try Self.announced([("Lyre-Mode", "spokenAudio")], over: false)
        #expect(mix.isSpokenAudio && mix.asked == nil)
        mix.announce(try Self.terms([]), over: false)
        #expect(!mix.isSpokenAudio)
        #expect(try Self.announced([("Lyre-Mix", "mix"), ("Lyre-Mode", "spokenAudio")], over: true).isSpokenAudio)
    }
}
