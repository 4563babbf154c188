import LyreSink
import Testing

/// `lyre sink`'s decisions without a sound server: outputs follow receivers, a stream runs while an app
/// plays into an output, system sounds are moved to the local output and never start a stream.
struct SinkRouterTests {
    typealias Action = SinkRouter.Action

    /// A router with the receiver "k1" (Kitchen) whose output is module 7, sink 40.
    static func kitchen() -> SinkRouter {
        var router = SinkRouter()
        #expect(router.receiverAppeared(id: "k1", name: "Kitchen") == [.loadSink(receiver: "k1", sinkName: "lyre_k1", description: "Kitchen (Lyre)")])
        #expect(router.receiverAppeared(id: "k1", name: "Kitchen") == [], "a receiver seen again gets no second output")
        #expect(router.sinkLoaded(receiver: "k1", module: 7, sink: 40) == [])
        return router
    }

    @Test func aStreamRunsWhileAnAppPlaysIntoTheOutput() {
        var router = Self.kitchen()
        #expect(router.inputChanged(index: 1, sink: 3, role: "music") == [], "a stream on the local sink is not ours")
        #expect(router.inputChanged(index: 1, sink: 40, role: "music") == [.startStream(receiver: "k1")], "moved to Kitchen")
        #expect(router.inputChanged(index: 2, sink: 40, role: nil) == [], "a second app joins the running stream")
        #expect(router.appStreams(receiver: "k1") == 2)
        #expect(router.inputRemoved(index: 1) == [])
        #expect(router.inputChanged(index: 2, sink: 3, role: nil) == [.stopStream(receiver: "k1")], "the last app moved away")
        #expect(router.inputChanged(index: 2, sink: 40, role: nil) == [.startStream(receiver: "k1")])
        #expect(router.inputRemoved(index: 2) == [.stopStream(receiver: "k1")], "the last stream ended")
    }

    @Test func systemSoundsAreMovedToTheLocalOutputAndStartNothing() {
        var router = Self.kitchen()
        for (index, role) in [(5, "event"), (6, "Notification"), (7, "alert")] {
            #expect(router.inputChanged(index: UInt32(index), sink: 40, role: role) == [.moveToLocal(input: UInt32(index))], "\(role)")
        }
        #expect(router.appStreams(receiver: "k1") == 0)
        #expect(router.inputChanged(index: 5, sink: 3, role: "event") == [], "once local it stays")
        #expect(router.inputChanged(index: 8, sink: 3, role: "event") == [])
    }

    @Test func streamsReportedBeforeTheOutputExistsAreSettledWhenItDoes() {
        var router = SinkRouter()
        _ = router.receiverAppeared(id: "k1", name: "Kitchen")
        #expect(router.inputChanged(index: 1, sink: 40, role: nil) == [])
        #expect(router.inputChanged(index: 2, sink: 40, role: "event") == [])
        #expect(router.sinkLoaded(receiver: "k1", module: 7, sink: 40) == [.moveToLocal(input: 2), .startStream(receiver: "k1")])
    }

    @Test func aReceiverThatLeavesTakesItsOutputAndItsAppsGoLocal() {
        var router = Self.kitchen()
        _ = router.inputChanged(index: 1, sink: 40, role: nil)
        #expect(router.receiverGone(id: "k1") == [.stopStream(receiver: "k1"), .moveToLocal(input: 1), .unloadSink(receiver: "k1", module: 7)])
        #expect(router.receiverGone(id: "k1") == [])
        #expect(router.receivers.isEmpty)
        // An output that finishes loading after its receiver left is removed at once.
        var late = SinkRouter()
        _ = late.receiverAppeared(id: "b2", name: "Bedroom")
        _ = late.receiverGone(id: "b2")
        #expect(late.sinkLoaded(receiver: "b2", module: 9, sink: 41) == [.unloadSink(receiver: "b2", module: 9)])
    }

    @Test func aStreamThatEndsOnItsOwnSendsItsAppsLocal() {
        var router = Self.kitchen()
        _ = router.inputChanged(index: 1, sink: 40, role: nil)
        #expect(router.streamEnded(receiver: "k1") == [.moveToLocal(input: 1)])
        #expect(router.streamEnded(receiver: "k1") == [])
    }

    @Test func anOutputsSliderIsTheReceiversVolume() {
        #expect(SinkRouter.receiverVolume(outputDecibels: 0, muted: false) == 0)
        #expect(SinkRouter.receiverVolume(outputDecibels: 6, muted: false) == 0, "over 100 % is 0 dB")
        #expect(SinkRouter.receiverVolume(outputDecibels: -18.06, muted: false) == -18.06)
        #expect(SinkRouter.receiverVolume(outputDecibels: -31, muted: false) == -144, "under -30 dB is mute")
        #expect(SinkRouter.receiverVolume(outputDecibels: -.infinity, muted: false) == -144)
        #expect(SinkRouter.receiverVolume(outputDecibels: -3, muted: true) == -144)
        var router = Self.kitchen()
        #expect(router.receiver(ofSink: 40) == "k1" && router.sink(ofReceiver: "k1") == 40 && router.receiver(ofSink: 3) == nil)
        _ = router.receiverGone(id: "k1")
        #expect(router.receiver(ofSink: 40) == nil)
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
}
