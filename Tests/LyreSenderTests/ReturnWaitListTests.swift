import LyreSender
import Testing

/// `ReturnWaitList`: which lost rooms `lyre play` waits for (issue 27). End to end, a room's return is held by
/// MultiRoomTests (a receiver restarted, at a new address, removed while it returns); here the rules alone, the
/// race between a join and a loss included, which no end-to-end run can time.
@Suite struct ReturnWaitListTests {
    static let kitchen = OutputRoute(host: "10.0.0.2", port: 7700, name: "Kitchen", id: "0123456789abcdef0123456789abcdef")
    static let lounge = OutputRoute(host: "10.0.0.3", port: 7700, name: "Lounge")

    @Test func aRoomIsWaitedForOnceAndTheSameReceiverAtANewAddressIsTheSameRoom() {
        var waits = ReturnWaitList()
        let first = waits.lost(Self.kitchen)
        var moved = Self.kitchen
        moved.host = "10.0.0.9"
        let again = waits.lost(moved)
        let byAddress = waits.lost(Self.lounge)
        #expect(first && !again && byAddress, "the same id is the same room; without an id, its address")
        #expect(waits.waiting.map(\.name) == ["Kitchen", "Lounge"])
        let seen = waits.seen(id: Self.kitchen.id!, host: "10.0.0.9", port: 7701)
        #expect(seen && waits.waiting.first?.address == "10.0.0.9:7701")
        let unknown = waits.seen(id: "fedcba9876543210fedcba9876543210", host: "10.0.0.8", port: 7700)
        #expect(!unknown, "nobody waits for it")
    }

    @Test func aTryThatJoinsEndsTheWaitAndOneThatFailsKeepsIt() {
        var waits = ReturnWaitList()
        _ = waits.lost(Self.kitchen)
        _ = waits.lost(Self.lounge)
        waits.trying(Self.kitchen)
        let stillWaited = waits.failed(Self.kitchen)
        #expect(stillWaited)
        waits.trying(Self.kitchen)
        let joined = waits.joined(Self.kitchen)
        #expect(joined == .back)
        #expect(waits.waiting == [Self.lounge])
    }

    @Test func aRoomLostAgainWhileItJoinsIsStillWaitedFor() {
        var waits = ReturnWaitList()
        _ = waits.lost(Self.kitchen)
        waits.trying(Self.kitchen)
        // The session reports the join from within addRoute; the room's link fails at once, and its loss is
        // reported before the try ends the wait.
        let new = waits.lost(Self.kitchen)
        #expect(!new, "waited for already")
        let joined = waits.joined(Self.kitchen)
        #expect(joined == .lostAgain)
        #expect(waits.waiting == [Self.kitchen], "not forgotten")
        // The next try that joins, with no loss meanwhile, ends it.
        waits.trying(Self.kitchen)
        let next = waits.joined(Self.kitchen)
        #expect(next == .back && waits.waiting.isEmpty)
    }

    @Test func aLossOfAnotherRoomWhileOneJoinsIsNotTakenForIt() {
        var waits = ReturnWaitList()
        _ = waits.lost(Self.kitchen)
        _ = waits.lost(Self.lounge)
        waits.trying(Self.kitchen)
        _ = waits.lost(Self.lounge)
        let joined = waits.joined(Self.kitchen)
        #expect(joined == .back)
        #expect(waits.waiting == [Self.lounge])
    }

    @Test func aRoomTheUserRemovedWhileItJoinedLeavesAgain() {
        var waits = ReturnWaitList()
        _ = waits.lost(Self.kitchen)
        waits.trying(Self.kitchen)
        let forgot = waits.forget(.removed) { $0.isNamed("kitchen") }
        let joined = waits.joined(Self.kitchen)
        #expect(forgot && joined == .removedMeanwhile)
        let again = waits.forget(.removed) { $0.isNamed("kitchen") }
        #expect(!again, "nothing left to forget")
        waits.trying(Self.lounge)
        let failed = waits.failed(Self.lounge)
        #expect(!failed, "a try of a room no longer waited for is no failed return")
    }

    /// Lost again and removed by the user while it joined, in either order: it has left already, so nothing is to
    /// be removed (lyre play once logged that such a room "stays"), and it is not waited for.
    @Test(arguments: [true, false]) func aRoomRemovedAndLostWhileItJoinedHasLeft(lostFirst: Bool) {
        var waits = ReturnWaitList()
        _ = waits.lost(Self.kitchen)
        _ = waits.lost(Self.lounge)
        waits.trying(Self.kitchen)
        var new = false
        if lostFirst { new = waits.lost(Self.kitchen) }
        let forgot = waits.forget(.removed) { $0.isNamed("kitchen") }
        if !lostFirst { new = waits.lost(Self.kitchen) }
        #expect(forgot && !new, "a loss while its try joins is no new wait")
        let joined = waits.joined(Self.kitchen)
        #expect(joined == .removedAndLost)
        #expect(waits.waiting == [Self.lounge], "the removed room is not waited for")
        // Once the try has ended, a loss is a loss again.
        let later = waits.lost(Self.kitchen)
        #expect(later && waits.waiting == [Self.lounge, Self.kitchen])
    }

    /// The user added the room by hand (`lyre group add`, at a new address) while a try at its old one was under
    /// way: from then on a loss of it is a loss like any other, waited for whatever the try does; and a try that
    /// joins meanwhile is the room back, not one to remove as if the user had removed it.
    @Test func aRoomAddedByHandWhileItsTryIsUnderWayIsWaitedForWhenLost() {
        var waits = ReturnWaitList()
        _ = waits.lost(Self.kitchen)
        waits.trying(Self.kitchen)
        let forgot = waits.forget(.added) { ReturnWaitList.same($0, Self.kitchen) }
        #expect(forgot && waits.waiting.isEmpty)
        let new = waits.lost(Self.kitchen)
        #expect(new, "the added room's loss is a new wait")
        let stillWaited = waits.failed(Self.kitchen)
        #expect(stillWaited && waits.waiting == [Self.kitchen])

        waits.trying(Self.kitchen)
        _ = waits.forget(.added) { ReturnWaitList.same($0, Self.kitchen) }
        let joined = waits.joined(Self.kitchen)
        #expect(joined == .back && waits.waiting.isEmpty, "back, not removed")

        // Lost as its try joins, then added by hand, and lost after the add or not: a try that joins is the room back.
        for lostAfterTheAdd in [false, true] {
            _ = waits.lost(Self.kitchen)
            waits.trying(Self.kitchen)
            _ = waits.lost(Self.kitchen)
            _ = waits.forget(.added) { ReturnWaitList.same($0, Self.kitchen) }
            if lostAfterTheAdd { _ = waits.lost(Self.kitchen) }
            let end = waits.joined(Self.kitchen)
            #expect(end == .back && waits.waiting.isEmpty, "lost after the add: \(lostAfterTheAdd)")
        }
    }
}
