import Testing

@testable import LyreReceiver

/// Which session plays and which play over it (streaming.md §7), without a connection: takeover, overlays and
/// their limit, a mix request that goes on under the music that came after it, and spoken audio paused and
/// played on.
@Suite struct SessionStageTests {
    final class Sender {}
    typealias Stage = SessionStage<Sender>

    @Test func aNewSessionTakesOver() {
        var stage = Stage()
        let (music, radio) = (Sender(), Sender())
        #expect(stage.placement(of: music, mixing: false).isMain)
        guard case .alone = stage.claim(music, goesOn: { _ in Issue.record("asked with nothing playing"); return false }) else {
            Issue.record("the first session is alone"); return
        }
        #expect(stage.active === music)
        // The same connection's second ANNOUNCE keeps its place.
        guard case .alone = stage.claim(music, goesOn: { _ in false }) else { Issue.record("again is alone"); return }
        // A plain session from anyone else takes over, whatever it was asked.
        #expect(stage.placement(of: radio, mixing: false).isMain)
        guard case .tookOver(let previous) = stage.claim(radio, goesOn: { _ in false }) else { Issue.record("takeover"); return }
        #expect(previous === music)
        #expect(stage.active === radio)
        #expect(stage.overlays.isEmpty)
        // The taken over session's end, as its handler reports it, leaves the new one playing.
        let release = stage.release(music)
        #expect(!release.wasActive && !release.wasOverlay && release.playsOn == nil)
        #expect(stage.active === radio)
        let radioEnded = stage.release(radio)
        #expect(radioEnded.wasActive)
        #expect(stage.active == nil)
    }

    @Test func atMostFourPlayOverTheMusicAndTheFifthIsRefused() {
        var stage = Stage()
        let music = Sender()
        _ = stage.claim(music, goesOn: { _ in false })
        // Asked to mix with nothing playing, it is the main session; the music cannot play over itself.
        #expect(Stage().placement(of: music, mixing: true).isMain)
        #expect(stage.placement(of: music, mixing: true).isMain)
        let bells = (0..<4).map { _ in Sender() }
        for bell in bells {
            guard case .over(let playing) = stage.placement(of: bell, mixing: true) else { Issue.record("over"); return }
            #expect(playing === music)
            let pauses = stage.addOverlay(bell, pauses: false)
            #expect(!pauses)
        }
        let fifth = Sender()
        guard case .full(let playing, let others) = stage.placement(of: fifth, mixing: true) else { Issue.record("the fifth is refused"); return }
        #expect(playing === music && others == 4)
        // One of the four announcing again is not a fifth.
        guard case .over = stage.placement(of: bells[2], mixing: true) else { Issue.record("a second ANNOUNCE of an overlay"); return }
        // The refusal touched nothing; an overlay's end makes room, and the music plays on.
        #expect(stage.overlays.count == 4 && stage.active === music)
        let release = stage.release(bells[0])
        #expect(release.wasOverlay && !release.wasActive)
        guard case .over = stage.placement(of: fifth, mixing: true) else { Issue.record("room after one ended"); return }
        // The music's end does not end its overlays.
        let musicEnded = stage.release(music)
        #expect(musicEnded.wasActive)
        #expect(stage.overlays.count == 3)
    }

    @Test func aMixRequestThatPlaysAloneGoesOnOverTheMusicThatCameAfter() {
        var stage = Stage()
        let (chime, music, third) = (Sender(), Sender(), Sender())
        _ = stage.claim(chime, goesOn: { _ in false })
        var asked = 0
        guard case .playsOver(let previous) = stage.claim(music, goesOn: { asked += 1; return $0 === chime }) else {
            Issue.record("the chime goes on"); return
        }
        #expect(previous === chime && asked == 1)
        #expect(stage.active === music)
        #expect(stage.overlays.count == 1 && stage.overlays[0] === chime)
        // A third plain session takes the music over (the music is asked, and did not ask to mix); the chime,
        // an overlay now, is not asked again and goes on.
        var askedOf: [Sender] = []
        guard case .tookOver(let taken) = stage.claim(third, goesOn: { askedOf.append($0); return false }) else { Issue.record("takeover"); return }
        #expect(taken === music)
        #expect(askedOf.count == 1 && askedOf[0] === music)
        #expect(stage.overlays.count == 1 && stage.overlays[0] === chime)
    }

    @Test func aMixRequestWithTheOverlaysFullIsTakenOver() {
        var stage = Stage()
        let chime = Sender()
        _ = stage.claim(chime, goesOn: { _ in false })
        for _ in 0..<4 { _ = stage.addOverlay(Sender(), pauses: false) }
        guard case .tookOver(let previous) = stage.claim(Sender(), goesOn: { _ in Issue.record("not asked when full"); return true }) else {
            Issue.record("taken over"); return
        }
        #expect(previous === chime)
        #expect(stage.overlays.count == 4)
    }

    @Test func spokenAudioIsPausedOnceAndPlaysOnWhenTheLastInterruptionEnds() {
        var stage = Stage()
        let (podcast, first, second, mixer) = (Sender(), Sender(), Sender(), Sender())
        _ = stage.claim(podcast, goesOn: { _ in false })
        let pausesFirst = stage.addOverlay(first, pauses: true)
        #expect(pausesFirst, "the first interruption pauses it")
        let pausesSecond = stage.addOverlay(second, pauses: true)
        #expect(!pausesSecond, "it is paused already")
        let pausesMixer = stage.addOverlay(mixer, pauses: false)
        #expect(!pausesMixer)
        #expect(stage.interrupts(first) && stage.interrupts(second) && !stage.interrupts(mixer))
        let mixerEnded = stage.release(mixer)
        #expect(mixerEnded.playsOn == nil)
        let firstEnded = stage.release(first)
        #expect(firstEnded.playsOn == nil, "one interruption still plays")
        let last = stage.release(second)
        #expect(last.playsOn === podcast && last.wasOverlay)
        #expect(stage.active === podcast)
    }

    @Test func aSessionThatTakesOverAPausedOneIsNotToldToPlay() {
        var stage = Stage()
        let (podcast, bell, music) = (Sender(), Sender(), Sender())
        _ = stage.claim(podcast, goesOn: { _ in false })
        let pausesPodcast = stage.addOverlay(bell, pauses: true)
        #expect(pausesPodcast)
        // A paused session is not asked to go on over the new one: nothing would tell it to play.
        guard case .tookOver(let previous) = stage.claim(music, goesOn: { _ in Issue.record("asked while paused"); return true }) else {
            Issue.record("taken over"); return
        }
        #expect(previous === podcast)
        #expect(!stage.interrupts(bell))
        let bellEnded = stage.release(bell)
        #expect(bellEnded.playsOn == nil)
        #expect(stage.active === music)
    }

    @Test func theMainSessionsEndEndsItsInterruptions() {
        var stage = Stage()
        let (podcast, bell) = (Sender(), Sender())
        _ = stage.claim(podcast, goesOn: { _ in false })
        _ = stage.addOverlay(bell, pauses: true)
        let podcastEnded = stage.release(podcast)
        #expect(podcastEnded.wasActive)
        #expect(!stage.interrupts(bell))
        let bellEnded = stage.release(bell)
        #expect(bellEnded.playsOn == nil)
    }
}

extension SessionStage.Placement {
    var isMain: Bool { if case .main = self { true } else { false } }
}
