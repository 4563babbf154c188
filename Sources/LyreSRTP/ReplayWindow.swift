/// The packet indices of one SRTP stream (one SSRC) seen so far, as RFC 3711 §3.3 keeps them: the highest
/// index, and which of the `length` indices up to it were taken. A packet carries only the low 16 bits of its
/// index (the sequence number); `estimate` finds the rest (the rollover counter, ROC) from the highest index,
/// as RFC 3711 Appendix A says, and `check` refuses an index taken before or older than the window.
///
/// It decides exactly as libsrtp2's `srtp_rdbx_*` does (rdbx.c), which both ends used before this replaced it,
/// so that a stream starting at any sequence number, a resend and a late packet are taken or refused the same
/// way: SRTPInteropTests runs both side by side.
struct ReplayWindow: Sendable {
    enum Verdict: Equatable { case fresh, replayed, tooOld }

    /// The highest index taken (48 bits: ROC << 16 | sequence number); 0 before the first.
    private(set) var highest: UInt64 = 0
    /// One bit per index: bit `i % length` of `bits` for index i, valid for the `length` indices up to `highest`.
    private var bits: [UInt64]
    let length: Int

    init(length: Int) {
        precondition(length > 0 && length % 64 == 0, "a window is a whole number of 64-bit words")
        self.length = length
        bits = [UInt64](repeating: 0, count: length / 64)
    }

    /// The index of a packet with sequence number `sequence`, and how far it is ahead of `highest` (negative:
    /// behind). Until the highest index passes 2^15 the ROC is taken as 0, so that a stream's first packets
    /// are never guessed into ROC 0xFFFFFFFF (libsrtp2's `srtp_rdbx_estimate_index`).
    func estimate(_ sequence: UInt16) -> (index: UInt64, delta: Int) {
        let s = Int(sequence)
        guard highest > 32768 else { return (UInt64(sequence), s - Int(highest & 0xFFFF)) }
        let roc = highest >> 16
        let local = Int(highest & 0xFFFF)
        // RFC 3711 Appendix A: the ROC one back when the number is far above the highest's, one on when far below.
        if local < 32768 {
            if s - local > 32768 { return ((roc &- 1) << 16 | UInt64(sequence), s - local - 65536) }
        } else if local - 32768 > s {
            return ((roc + 1) << 16 | UInt64(sequence), s - local + 65536)
        }
        return (roc << 16 | UInt64(sequence), s - local)
    }

    /// Whether the index `delta` from the highest may be taken.
    func check(_ delta: Int) -> Verdict {
        if delta > 0 { return .fresh }
        if delta <= -length { return .tooOld }
        return bit(UInt64(Int64(highest) + Int64(delta))) ? .replayed : .fresh
    }

    /// Marks the index `delta` from the highest as taken (after its packet verified).
    mutating func take(_ delta: Int) {
        if delta > 0 {
            // The indices the window moves over are not taken yet; more than a window's worth clears it all.
            if delta >= length {
                for i in bits.indices { bits[i] = 0 }
            } else {
                for step in 1...delta { set(highest + UInt64(step), false) }
            }
            highest += UInt64(delta)
            set(highest, true)
        } else if delta > -length {
            set(UInt64(Int64(highest) + Int64(delta)), true)
        }
    }

    /// How far `index` is ahead of the highest (negative: behind): an SRTCP packet carries its whole index, an
    /// RTP packet's comes from `estimate`.
    func delta(of index: UInt64) -> Int { Int(Int64(index) - Int64(highest)) }

    private func bit(_ index: UInt64) -> Bool {
        let slot = Int(index % UInt64(length))
        return bits[slot / 64] & (1 << UInt64(slot % 64)) != 0
    }

    private mutating func set(_ index: UInt64, _ taken: Bool) {
        let slot = Int(index % UInt64(length))
        if taken { bits[slot / 64] |= 1 << UInt64(slot % 64) } else { bits[slot / 64] &= ~(1 << UInt64(slot % 64)) }
    }
}
