import LyreWire

/// What a receiver tells its sender in a receiver report (RFC 3550 §6.4.1, appendix A.3 and A.8), sans I/O:
/// packets expected and received (in total and since the last report), interarrival jitter, and the last
/// sender report with when it came, so that the sender can work out the round trip.
public struct ReceptionStatistics: Sendable {
    /// Sequence numbers (extended) expected and packets received in earlier stretches of the session: a
    /// FLUSH starts a new stretch, since the sender may number from anywhere after it.
    private var expectedBefore: Int64 = 0
    private var receivedBefore: Int64 = 0
    private var base: Int64?
    private var highest: Int64?
    private var received: Int64 = 0
    private var expectedAtLastReport: Int64 = 0
    private var receivedAtLastReport: Int64 = 0
    /// Interarrival jitter, RTP units (48 kHz), and the last packet's transit (arrival − timestamp).
    private var jitter = 0.0
    private var lastTransit: Double?
    private var lastSenderReport: (compact: UInt32, arrival: UInt64)?

    public init() {}

    /// A new stretch: the sender said the next packet is `next` (RTP-Info), or nothing.
    public mutating func restart(next: Int64?) {
        if let base, let highest { expectedBefore += highest - base + 1 }
        receivedBefore += received
        received = 0
        base = next
        highest = next.map { $0 - 1 }
        lastTransit = nil
    }

    /// A media packet arrived at `arrival` (ns): its extended sequence number and RTP timestamp.
    public mutating func arrived(sequence: Int64, timestamp: UInt32, arrival: UInt64) {
        received += 1
        if base == nil { base = sequence }
        guard sequence > highest ?? Int64.min else { return }  // a resend or a reordered packet: not for jitter
        highest = sequence
        // RFC 3550 A.8, on arrival times in RTP units; the transit's own offset cancels out.
        let transit = Double(arrival) * 48e-6 - Double(timestamp)
        if let lastTransit {
            var d = abs(transit - lastTransit)
            // Timestamps wrap at 2^32 (the transit jumps by it).
            if d > 2_147_483_648 { d = abs(d - 4_294_967_296) }
            jitter += (d - jitter) / 16
        }
        lastTransit = transit
    }

    /// A sender report arrived at `arrival` (ns, the receiver's clock).
    public mutating func senderReport(ntpTime: UInt64, arrival: UInt64) {
        lastSenderReport = (UInt32(truncatingIfNeeded: ntpTime >> 16), arrival)
    }

    /// Interarrival jitter in ms.
    public var jitterMilliseconds: Double { jitter / 48 }

    /// The report block for source `ssrc`, sent at `now` (ns); starts the next interval.
    public mutating func block(ssrc: UInt32, now: UInt64) -> RTCPReportBlock {
        let expected = expectedBefore + (base.flatMap { b in highest.map { $0 - b + 1 } } ?? 0)
        let total = receivedBefore + received
        let expectedInterval = expected - expectedAtLastReport
        let lostInterval = expectedInterval - (total - receivedAtLastReport)
        expectedAtLastReport = expected
        receivedAtLastReport = total
        let fraction = expectedInterval > 0 && lostInterval > 0 ? UInt8(min(255, lostInterval * 256 / expectedInterval)) : 0
        let delay = lastSenderReport.map { now > $0.arrival ? NTPTime.compact(duration: now - $0.arrival) : 0 } ?? 0
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(clamping: expected - total),
            extendedHighestSequence: UInt32(truncatingIfNeeded: highest ?? 0), jitter: UInt32(jitter.rounded()),
            lastSenderReport: lastSenderReport?.compact ?? 0, delaySinceLastSenderReport: delay)
    }
}
