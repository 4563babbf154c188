/// Which RTP packets a receiver asks its sender for again (streaming.md §4.1), sans I/O.
///
/// A gap is noticed when the next packet arrives, not when the missing audio is due: every sequence number
/// skipped is asked for at once, then again every `retryInterval` while it can still be played (at or after
/// the next packet due out of the jitter buffer), at most `maximumAsks` times. A packet that arrives after
/// being asked for is counted as recovered. At most `maximumMissing` sequence numbers are tracked: a
/// larger jump (a sender that restarted its numbering) is not a loss to repair.
///
/// No later packet shows the last packets of a stream missing: the sender says the highest sequence number it
/// has sent (`sent(through:now:)`, §4.1), and what has not come `sentGrace` later is missing too.
public struct RetransmissionRequests: Sendable {
    /// False when the sender takes no NACKs: gaps are still counted (`missed`), nothing is asked for.
    public var asking = true
    public var retryInterval: UInt64
    public var maximumAsks: Int
    public var maximumMissing: Int

    private var highest: Int64?
    /// The highest sequence number the sender says it sent, and when what has not come of it is missing.
    private var claim: (through: Int64, at: UInt64)?
    /// How long a packet the sender says it sent may still be on its way (reordered or delayed) before it is
    /// missing.
    public var sentGrace: UInt64 = 50_000_000
    /// Missing sequence numbers: when last asked for, and how often.
    private var missing: [Int64: (asked: UInt64, asks: Int)] = [:]
    /// Sequence numbers asked for, repeats included.
    public private(set) var requested = 0
    /// Packets that arrived after being asked for.
    public private(set) var recovered = 0
    /// Sequence numbers found missing (each once, those FEC rebuilt before the gap showed included): what the
    /// network lost on the first try.
    public private(set) var missed = 0

    public init(retryInterval: UInt64 = 30_000_000, maximumAsks: Int = 10, maximumMissing: Int = 256) {
        self.retryInterval = retryInterval
        self.maximumAsks = maximumAsks
        self.maximumMissing = maximumMissing
    }

    /// Sequence numbers missing now.
    public var missingCount: Int { missing.count }

    /// A packet arrived (its extended sequence number): returns the sequence numbers it shows missing, to ask
    /// for now. Those `have` says are here already (rebuilt from FEC before the gap showed) are not missing.
    public mutating func arrived(_ sequence: Int64, now: UInt64, have: (Int64) -> Bool = { _ in false }) -> [Int64] {
        if missing.removeValue(forKey: sequence) != nil {
            recovered += 1
            return []
        }
        guard let highest else {
            self.highest = sequence
            return []
        }
        guard sequence > highest else { return [] }
        return advance(to: sequence, now: now, have: have)
    }

    /// The sender says it has sent up to `sequence` (extended), at local time `now`: what has not come of it
    /// `sentGrace` later is missing, asked for by `due`.
    public mutating func sent(through sequence: Int64, now: UInt64) {
        guard let highest, sequence > highest, sequence - highest <= Int64(maximumMissing) else { return }
        if let claim, claim.through >= sequence { return }
        claim = (sequence, now + sentGrace)
    }

    /// `sequence` is now the highest: the sequence numbers skipped to it are missing, to ask for now.
    private mutating func advance(to sequence: Int64, now: UInt64, have: (Int64) -> Bool) -> [Int64] {
        guard let highest else { return [] }
        self.highest = sequence
        let gap = sequence - highest - 1
        guard gap > 0 else { return [] }
        guard gap <= Int64(maximumMissing) else {
            missing.removeAll()
            return []
        }
        missed += Int(gap)
        guard asking else { return [] }
        let skipped = (highest + 1..<sequence).filter { !have($0) }
        for lost in skipped { missing[lost] = (now, 1) }
        if missing.count > maximumMissing {
            for old in missing.keys.sorted().prefix(missing.count - maximumMissing) { missing[old] = nil }
        }
        requested += skipped.count
        return skipped
    }

    /// A missing packet was rebuilt from FEC (§4.3): not to be asked for again, and not counted as recovered
    /// by retransmission.
    public mutating func repaired(_ sequence: Int64) {
        missing[sequence] = nil
    }

    /// The sequence numbers to ask for again now. Those before `oldestUseful` (the next packet due out of
    /// the jitter buffer) can no longer be played and are forgotten; those asked for `maximumAsks` times are
    /// not asked for again (but still counted as recovered if they come).
    public mutating func due(now: UInt64, oldestUseful: Int64?, have: (Int64) -> Bool = { _ in false }) -> [Int64] {
        var fresh: [Int64] = []
        if let claim, now >= claim.at {
            self.claim = nil
            if let highest, claim.through > highest {
                // The last packets the sender sent, and no later one came to show them missing: missing up to
                // and including the claimed one, asked for now if they can still be played.
                let found = advance(to: claim.through + 1, now: now, have: have)
                self.highest = claim.through
                fresh = found.filter { sequence in oldestUseful.map { sequence >= $0 } ?? true }
                for gone in found where !fresh.contains(gone) { missing[gone] = nil }
                requested -= found.count - fresh.count
            }
        }
        var again: [Int64] = []
        for (sequence, state) in missing {
            if let oldestUseful, sequence < oldestUseful {
                missing[sequence] = nil
            } else if state.asks < maximumAsks, now >= state.asked + retryInterval, !fresh.contains(sequence) {
                missing[sequence] = (now, state.asks + 1)
                again.append(sequence)
            }
        }
        requested += again.count
        return (fresh + again).sorted()
    }

    /// When `due` next has something to ask for again; nil when nothing is left to ask for.
    public var nextRetry: UInt64? {
        (missing.values.filter { $0.asks < maximumAsks }.map { $0.asked + retryInterval } + [claim?.at].compactMap { $0 }).min()
    }

    /// Starts over (a FLUSH: nothing before it is wanted). With `next`, the sequence number the sender said
    /// comes next (RECORD's or FLUSH's RTP-Info), so that losing the very first packets is noticed too.
    public mutating func reset(next: Int64? = nil) {
        highest = next.map { $0 - 1 }
        claim = nil
        missing.removeAll()
    }
}
