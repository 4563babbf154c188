import Foundation
import LyreSink
import Testing

/// `lyre sink`'s decisions without a sound server: outputs follow receivers, a stream runs while an app
/// plays into an output, system sounds are moved to the local output and never start a stream.
struct SinkRouterTests {
    typealias Action = SinkRouter.Action
    static let k1 = SinkRouter.OutputID("k1")
    static let k1Announcements = SinkRouter.OutputID("k1", .announcements)

    /// A router with the receiver "k1" (Kitchen) whose output is module 7, sink 40.
    static func kitchen() -> SinkRouter {
        var router = SinkRouter()
        #expect(router.receiverAppeared(id: "k1", name: "Kitchen") == [.loadSink(Self.k1, description: "Kitchen (Lyre)")])
        #expect(router.receiverAppeared(id: "k1", name: "Kitchen") == [], "a receiver seen again gets no second output")
        #expect(router.sinkLoaded(Self.k1, module: 7, sink: 40) == [])
        return router
    }

    @Test func aStreamRunsWhileAnAppPlaysIntoTheOutput() {
        var router = Self.kitchen()
        #expect(router.inputChanged(index: 1, sink: 3, role: "music") == [], "a stream on the local sink is not ours")
        #expect(router.inputChanged(index: 1, sink: 40, role: "music") == [.startStream(Self.k1)], "moved to Kitchen")
        #expect(router.inputChanged(index: 2, sink: 40, role: nil) == [], "a second app joins the running stream")
        #expect(router.appStreams(Self.k1) == 2)
        #expect(router.inputRemoved(index: 1) == [])
        #expect(router.inputChanged(index: 2, sink: 3, role: nil) == [.stopStream(Self.k1)], "the last app moved away")
        #expect(router.inputChanged(index: 2, sink: 40, role: nil) == [.startStream(Self.k1)])
        #expect(router.inputRemoved(index: 2) == [.stopStream(Self.k1)], "the last stream ended")
    }

    @Test func systemSoundsAreMovedToTheLocalOutputAndStartNothing() {
        var router = Self.kitchen()
        for (index, role) in [(5, "event"), (6, "Notification"), (7, "alert")] {
            #expect(router.inputChanged(index: UInt32(index), sink: 40, role: role) == [.moveToLocal(input: UInt32(index))], "\(role)")
        }
        #expect(router.appStreams(Self.k1) == 0)
        #expect(router.inputChanged(index: 5, sink: 3, role: "event") == [], "once local it stays")
        #expect(router.inputChanged(index: 8, sink: 3, role: "event") == [])
    }

    @Test func streamsReportedBeforeTheOutputExistsAreSettledWhenItDoes() {
        var router = SinkRouter()
        _ = router.receiverAppeared(id: "k1", name: "Kitchen")
        #expect(router.inputChanged(index: 1, sink: 40, role: nil) == [])
        #expect(router.inputChanged(index: 2, sink: 40, role: "event") == [])
        #expect(router.sinkLoaded(Self.k1, module: 7, sink: 40) == [.moveToLocal(input: 2), .startStream(Self.k1)])
    }

    @Test func aReceiverThatLeavesTakesItsOutputAndItsAppsGoLocal() {
        var router = Self.kitchen()
        _ = router.inputChanged(index: 1, sink: 40, role: nil)
        #expect(router.receiverGone(id: "k1") == [.stopStream(Self.k1), .moveToLocal(input: 1), .unloadSink(Self.k1, module: 7)])
        #expect(router.receiverGone(id: "k1") == [])
        #expect(router.receivers.isEmpty)
        // An output that finishes loading after its receiver left is removed at once.
        var late = SinkRouter()
        _ = late.receiverAppeared(id: "b2", name: "Bedroom")
        _ = late.receiverGone(id: "b2")
        #expect(late.sinkLoaded(.init("b2"), module: 9, sink: 41) == [.unloadSink(.init("b2"), module: 9)])
    }

    @Test func aStreamThatEndsOnItsOwnSendsItsAppsLocal() {
        var router = Self.kitchen()
        _ = router.inputChanged(index: 1, sink: 40, role: nil)
        #expect(router.streamEnded(Self.k1) == [.moveToLocal(input: 1)])
        #expect(router.streamEnded(Self.k1) == [])
    }

    @Test func anOutputsSliderIsTheReceiversVolume() {
        #expect(SinkRouter.receiverVolume(outputDecibels: 0, muted: false) == 0)
        #expect(SinkRouter.receiverVolume(outputDecibels: 6, muted: false) == 0, "over 100 % is 0 dB")
        #expect(SinkRouter.receiverVolume(outputDecibels: -18.06, muted: false) == -18.06)
        #expect(SinkRouter.receiverVolume(outputDecibels: -31, muted: false) == -144, "under -30 dB is mute")
        #expect(SinkRouter.receiverVolume(outputDecibels: -.infinity, muted: false) == -144)
        #expect(SinkRouter.receiverVolume(outputDecibels: -3, muted: true) == -144)
        var router = Self.kitchen()
        #expect(router.output(ofSink: 40) == Self.k1 && router.sink(of: Self.k1) == 40 && router.output(ofSink: 3) == nil)
        _ = router.receiverGone(id: "k1")
        #expect(router.output(ofSink: 40) == nil)
    }

    /// The slider acts once (SinkRouter.captureGain): on a main output the server has lowered what the
    /// monitor carries, and the receiver lowers it again, so the recording is brought back up; on an
    /// announcements output the slider is the announcements' level, which the server's volume already is.
    @Test(arguments: [
        // (kind, slider dB, muted, gain in dB)
        (SinkRouter.OutputID.Kind.main, -18.06, false, 18.06),
        (.main, 0, false, 0),
        (.main, 3.5, false, -3.5),  // over 100 %: the receiver stays at 0 dB, so the boost is undone
        (.main, -30, false, 30),
        (.main, -31, false, 0),  // the receiver is muted: nothing to undo
        (.main, -.infinity, false, 0),
        (.main, -12, true, 0),
        (.announcements, -18.06, false, 0),
        (.announcements, -12, true, 0),
    ])
    func anOutputsSliderActsOnce(kind: SinkRouter.OutputID.Kind, slider: Double, muted: Bool, gainDecibels: Double) {
        let gain = SinkRouter.captureGain(kind, outputDecibels: slider, muted: muted)
        #expect(abs(20 * log10(Double(gain)) - gainDecibels) < 0.001, "\(gain)")
    }
}

extension SinkRouterTests {
    /// Two apps on one output: the one that started last is "now playing" (now-playing.md §7).
    @Test func theAppThatStartedLastSpeaksForTheOutput() {
        var router = Self.kitchen()
        #expect(router.nowPlayingInput(receiver: "k1") == nil)
        _ = router.inputChanged(index: 4, sink: 40, role: "music")
        _ = router.inputChanged(index: 9, sink: 40, role: nil)
        _ = router.inputChanged(index: 12, sink: 40, role: "event")
        _ = router.inputChanged(index: 15, sink: 3, role: "music")
        #expect(router.nowPlayingInput(receiver: "k1") == 9, "system sounds and other outputs' streams aside")
        _ = router.inputRemoved(index: 9)
        #expect(router.nowPlayingInput(receiver: "k1") == 4)
        #expect(router.nowPlayingInput(receiver: "nobody") == nil)
    }

    /// `lyre sink --announcements`: each receiver gets a second output; an announcement or alert sent to the
    /// first moves there (not to the local output) and runs a stream of its own beside the music's, which is
    /// asked to duck; the music's stream and what it shows are untouched; other system sounds stay local.
    @Test func announcementsGetAnOutputOfTheirOwnThatPlaysOverTheMusic() {
        var router = SinkRouter(announcements: true)
        #expect(router.receiverAppeared(id: "k1", name: "Kitchen") == [
            .loadSink(Self.k1, description: "Kitchen (Lyre)"),
            .loadSink(Self.k1Announcements, description: "Kitchen announcements (Lyre)"),
        ])
        #expect(Self.k1.sinkName == "lyre_k1" && Self.k1Announcements.sinkName == "lyre_k1_announcements")
        #expect(router.sinkLoaded(Self.k1, module: 7, sink: 40) == [])
        #expect(router.inputChanged(index: 1, sink: 40, role: "music") == [.startStream(Self.k1)])
        // An announcement reported before its output exists waits there, and starts nothing on the music's.
        #expect(router.inputChanged(index: 2, sink: 40, role: "Announcement") == [])
        #expect(router.appStreams(Self.k1) == 1 && router.nowPlayingInput(receiver: "k1") == 1)
        #expect(router.sinkLoaded(Self.k1Announcements, module: 8, sink: 41) == [.moveToOutput(input: 2, Self.k1Announcements)])
        #expect(router.inputChanged(index: 2, sink: 41, role: "Announcement") == [.startStream(Self.k1Announcements)])
        #expect(router.inputChanged(index: 3, sink: 40, role: "alert") == [.moveToOutput(input: 3, Self.k1Announcements)])
        #expect(router.inputChanged(index: 3, sink: 41, role: "alert") == [], "it joins the running announcement")
        #expect(router.inputChanged(index: 4, sink: 40, role: "event") == [.moveToLocal(input: 4)], "a system sound stays local")
        #expect(router.inputChanged(index: 4, sink: 41, role: "event") == [.moveToLocal(input: 4)], "on either output")
        #expect(router.inputChanged(index: 4, sink: 3, role: "event") == [])
        #expect(router.inputChanged(index: 5, sink: 41, role: "music") == [], "whatever an app plays to the announcements output plays there")
        #expect(router.appStreams(Self.k1Announcements) == 3 && router.nowPlayingInput(receiver: "k1") == 1)
        #expect(router.output(ofSink: 41) == Self.k1Announcements)
        #expect(router.inputRemoved(index: 2) == [])
        #expect(router.inputRemoved(index: 3) == [])
        #expect(router.inputRemoved(index: 5) == [.stopStream(Self.k1Announcements)], "the last announcement ended")
        #expect(router.appStreams(Self.k1) == 1, "the music plays on")
        _ = router.inputChanged(index: 6, sink: 41, role: "announcement")
        #expect(router.receiverGone(id: "k1") == [
            .stopStream(Self.k1), .moveToLocal(input: 1), .unloadSink(Self.k1, module: 7),
            .stopStream(Self.k1Announcements), .moveToLocal(input: 6), .unloadSink(Self.k1Announcements, module: 8),
        ])
        #expect(router.receivers.isEmpty)
    }

    /// Without `--announcements` (the default) an alert is a system sound, and an announcement role is any app's.
    @Test func withoutAnnouncementsAnAlertStaysLocal() {
        var router = Self.kitchen()
        #expect(router.inputChanged(index: 1, sink: 40, role: "alert") == [.moveToLocal(input: 1)])
        #expect(router.inputChanged(index: 2, sink: 40, role: "announcement") == [.startStream(Self.k1)])
        #expect(!router.isAnnouncement(role: "announcement") && router.isSystemSound(role: "alert"))
    }

    /// An announcements output that could not be made: what waits for it goes to the local output rather than
    /// play into the music's output unheard, and the receiver's next change tries to make it again.
    @Test func anAnnouncementWhoseOutputFailedGoesLocal() {
        var router = SinkRouter(announcements: true)
        _ = router.receiverAppeared(id: "k1", name: "Kitchen")
        #expect(router.sinkLoaded(Self.k1, module: 7, sink: 40) == [])
        #expect(router.inputChanged(index: 1, sink: 40, role: "announcement") == [], "it waits for its output")
        #expect(router.sinkFailed(Self.k1Announcements) == [.moveToLocal(input: 1)])
        #expect(router.inputChanged(index: 2, sink: 40, role: "alert") == [.moveToLocal(input: 2)])
        #expect(router.receiverAppeared(id: "k1", name: "Kitchen") == [.loadSink(Self.k1Announcements, description: "Kitchen announcements (Lyre)")],
                "only the missing output is made again")
    }
}
