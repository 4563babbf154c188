import LyreReceiver
import Testing

/// Which packets a receiver asks for again, and when: sans I/O, on a given clock.
struct RetransmissionRequestsTests {
    @Test func aGapIsAskedForWhenTheNextPacketArrives() {
        var requests = RetransmissionRequests(retryInterval: 30_000_000)
        #expect(requests.arrived(100, now: 0).isEmpty)
        #expect(requests.arrived(101, now: 20).isEmpty)
        #expect(requests.arrived(104, now: 40) == [102, 103])
        #expect(requests.missingCount == 2 && requests.requested == 2)
        // Reordered: 103 turns up by itself; 102 comes back after the request.
        #expect(requests.arrived(103, now: 41).isEmpty)
        #expect(requests.recovered == 1 && requests.missingCount == 1)
        #expect(requests.arrived(102, now: 45).isEmpty)
        #expect(requests.recovered == 2 && requests.missingCount == 0)
        #expect(requests.nextRetry == nil)
    }

    @Test func askedAgainEveryIntervalWhileItCanStillPlay() {
        var requests = RetransmissionRequests(retryInterval: 30, maximumAsks: 3)
        _ = requests.arrived(1, now: 0)
        #expect(requests.arrived(3, now: 100) == [2])
        #expect(requests.nextRetry == 130)
        #expect(requests.due(now: 129, oldestUseful: nil).isEmpty)
        #expect(requests.due(now: 130, oldestUseful: nil) == [2])
        #expect(requests.due(now: 160, oldestUseful: 2) == [2])
        // Three asks: no more, and no timer for it.
        #expect(requests.due(now: 190, oldestUseful: 2).isEmpty)
        #expect(requests.nextRetry == nil)
        #expect(requests.requested == 3)
        // Once the jitter buffer is past it, it is forgotten.
        _ = requests.due(now: 200, oldestUseful: 3)
        #expect(requests.missingCount == 0)
    }

    /// streaming.md §4.1 with the receiver's defaults: asked for again every 30 ms, at most 10 times in all;
    /// a jump of up to 256 missing numbers is a loss, one of more is a discontinuity.
    @Test func theDefaultsAskEvery30MillisecondsTenTimesWithin256() {
        var requests = RetransmissionRequests()
        _ = requests.arrived(1, now: 0)
        #expect(requests.arrived(3, now: 1_000) == [2])
        var asks = 1
        var now: UInt64 = 1_000
        while let next = requests.nextRetry {
            #expect(next == now + 30_000_000)
            now = next
            asks += requests.due(now: now, oldestUseful: 2).count
        }
        #expect(asks == 10 && requests.requested == 10)

        var loss = RetransmissionRequests()
        _ = loss.arrived(1000, now: 0)
        #expect(loss.arrived(1257, now: 1).count == 256)
        var discontinuity = RetransmissionRequests()
        _ = discontinuity.arrived(1000, now: 0)
        #expect(discontinuity.arrived(1258, now: 1).isEmpty)
    }

    @Test func aPacketTooLateToPlayIsNotAskedForAgain() {
        var requests = RetransmissionRequests(retryInterval: 30)
        _ = requests.arrived(10, now: 0)
        _ = requests.arrived(14, now: 10)
        #expect(requests.due(now: 50, oldestUseful: 13) == [13])
        #expect(requests.missingCount == 1)
    }

    /// A jump larger than anything worth repairing (a sender that started its numbering again) asks for nothing.
    @Test func aHugeJumpIsNotALoss() {
        var requests = RetransmissionRequests(maximumMissing: 64)
        _ = requests.arrived(1000, now: 0)
        #expect(requests.arrived(1065, now: 1).count == 64)
        #expect(requests.arrived(5000, now: 2).isEmpty)
        #expect(requests.missingCount == 0)
        #expect(requests.arrived(5002, now: 3) == [5001])
    }

    @Test func resetForgetsEverything() {
        var requests = RetransmissionRequests()
        _ = requests.arrived(1, now: 0)
        _ = requests.arrived(5, now: 0)
        requests.reset()
        #expect(requests.missingCount == 0)
        #expect(requests.arrived(9, now: 1).isEmpty)
        // Told what comes next (RTP-Info), the loss of the first packets is noticed.
        requests.reset(next: 20)
        #expect(requests.arrived(22, now: 2) == [20, 21])
    }

    /// The last packets of a stream, lost: no later packet shows them missing, but the sender's sent report
    /// does. What has not come `sentGrace` after it is asked for; what comes meanwhile (delayed) is not.
    @Test func theSendersSentReportShowsLostLastPackets() {
        var requests = RetransmissionRequests(retryInterval: 30)
        requests.sentGrace = 50
        _ = requests.arrived(10, now: 0)
        _ = requests.arrived(11, now: 10)
        requests.sent(through: 14, now: 100)
        #expect(requests.nextRetry == 150)
        #expect(requests.arrived(12, now: 120).isEmpty)  // on its way: not missing
        #expect(requests.due(now: 149, oldestUseful: 12).isEmpty)
        #expect(requests.due(now: 150, oldestUseful: 12) == [13, 14])
        #expect(requests.missed == 2 && requests.requested == 2 && requests.missingCount == 2)
        #expect(requests.due(now: 180, oldestUseful: 12) == [13, 14])  // and again, as any loss
        #expect(requests.arrived(14, now: 185).isEmpty && requests.recovered == 1)
        // A report of what has already come, or one older, asks for nothing.
        requests.sent(through: 14, now: 200)
        requests.sent(through: 12, now: 200)
        #expect(requests.due(now: 300, oldestUseful: 13) == [13] && requests.missed == 2)
    }

    /// A sent report's packets that can no longer be played, or that FEC rebuilt, are not asked for.
    @Test func aSentReportAsksOnlyForWhatCanStillPlay() {
        var requests = RetransmissionRequests(retryInterval: 30)
        requests.sentGrace = 50
        _ = requests.arrived(10, now: 0)
        requests.sent(through: 14, now: 0)
        #expect(requests.due(now: 50, oldestUseful: 12) { $0 == 13 } == [12, 14])
        #expect(requests.requested == 2 && requests.missingCount == 2 && requests.missed == 4)
        requests.reset(next: 20)
        requests.sent(through: 25, now: 60)
        requests.reset(next: 30)
        #expect(requests.nextRetry == nil)
    }
}
