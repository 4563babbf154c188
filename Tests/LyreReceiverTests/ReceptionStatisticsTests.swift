import LyreReceiver
import LyreWire
import Testing

/// The receiver report's figures (RFC 3550 A.3, A.8), from packets given by hand.
struct ReceptionStatisticsTests {
    /// 100 packets 20 ms apart with 5 missing: 5 lost, 12/256 of the interval; once the 5 are resent the
    /// cumulative count is back to 0 and the next interval shows no loss. Arrivals on time: no jitter.
    @Test func lossBeforeAndAfterResends() {
        var stats = ReceptionStatistics()
        let missing: Set<Int64> = [10, 11, 40, 70, 99 - 1]
        for sequence in Int64(1000)..<1100 where !missing.contains(sequence - 1000) {
            stats.arrived(sequence: sequence, timestamp: UInt32(sequence * 960), arrival: UInt64(sequence) * 20_000_000)
        }
        let first = stats.block(ssrc: 9, now: 0)
        #expect(first.cumulativeLost == 5 && first.fractionLost == 12 && first.extendedHighestSequence == 1099)
        #expect(first.jitter == 0 && first.lastSenderReport == 0 && first.ssrc == 9)
        for lost in missing { stats.arrived(sequence: 1000 + lost, timestamp: UInt32((1000 + lost) * 960), arrival: 2_300_000_000_000) }
        let second = stats.block(ssrc: 9, now: 0)
        #expect(second.cumulativeLost == 0 && second.fractionLost == 0)
    }

    /// Arrivals alternately 1 ms early and late: each transit differs from the last by 2 ms (96 units), and
    /// the estimate converges on it. Resent and reordered packets (not newer than the highest) do not count.
    @Test func jitterFollowsTheTransitVariation() {
        var stats = ReceptionStatistics()
        for i in Int64(0)..<400 {
            let arrival = UInt64(i * 20_000_000 + (i % 2 == 0 ? 1_000_000 : -1_000_000) + 10_000_000)
            stats.arrived(sequence: i, timestamp: UInt32(truncatingIfNeeded: i * 960 + 4_294_900_000), arrival: arrival)
            // A late resend of an old packet, far off the schedule.
            if i % 50 == 49 { stats.arrived(sequence: i - 20, timestamp: UInt32(truncatingIfNeeded: (i - 20) * 960 + 4_294_900_000), arrival: arrival + 7_000_000) }
        }
        #expect(abs(stats.jitterMilliseconds - 2) < 0.01, "jitter \(stats.jitterMilliseconds) ms")
        #expect(stats.block(ssrc: 1, now: 0).jitter == 96)
    }

    /// The last sender report and the delay since, in 1/65536 s: what gives the sender its round trip.
    @Test func lastSenderReportAndDelay() {
        var stats = ReceptionStatistics()
        let ntp = NTPTime.from(nanoseconds: 3_000_000_000_123)
        stats.senderReport(ntpTime: ntp, arrival: 10_000_000_000)
        let block = stats.block(ssrc: 1, now: 10_250_000_000)
        #expect(block.lastSenderReport == UInt32(truncatingIfNeeded: ntp >> 16))
        #expect(block.delaySinceLastSenderReport == 0x4000)
    }

    /// A FLUSH that names the next sequence number starts a new stretch; what was expected before is kept.
    @Test func aFlushStartsANewStretch() {
        var stats = ReceptionStatistics()
        for sequence in Int64(0)..<10 where sequence != 5 { stats.arrived(sequence: sequence, timestamp: 0, arrival: 0) }
        stats.restart(next: 500)
        // 500 and 501 lost; 502 is the first to come.
        stats.arrived(sequence: 502, timestamp: 0, arrival: 0)
        let block = stats.block(ssrc: 1, now: 0)
        #expect(block.cumulativeLost == 3 && block.extendedHighestSequence == 502)
    }
}
