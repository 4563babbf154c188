import LyreWire

/// RTP packets ordered by sequence number, extended to 64 bits so wrap-around sorts correctly.
///
/// Packets older than the next one due (`playedThrough`) are late and refused; duplicates are refused;
/// when full, the oldest packet is dropped.
public struct JitterBuffer: Sendable {
    public enum Insertion: Equatable, Sendable { case accepted, late, duplicate, overflowed }

    public let capacity: Int
    /// (extended sequence, packet), ascending.
    public private(set) var packets: [(sequence: Int64, packet: RTPPacket)] = []
    /// The highest extended sequence seen, to extend the next one.
    private var highest: Int64?
    /// Packets with a sequence below this are late.
    public var nextDue: Int64?

    public init(capacity: Int = 1024) { self.capacity = capacity }

    public var isEmpty: Bool { packets.isEmpty }
    public var first: (sequence: Int64, packet: RTPPacket)? { packets.first }
    public var last: (sequence: Int64, packet: RTPPacket)? { packets.last }

    /// The 16-bit sequence number extended to the value nearest the highest seen.
    public func extend(_ sequence: UInt16) -> Int64 {
        guard let highest else { return Int64(sequence) + 65536 }
        let delta = Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: highest)))
        return highest + delta
    }

    /// True when the packet with extended sequence number `sequence` is buffered.
    public func contains(_ sequence: Int64) -> Bool {
        let at = index(of: sequence)
        return at < packets.count && packets[at].sequence == sequence
    }

    /// Where `sequence` is or would go (binary search).
    private func index(of sequence: Int64) -> Int {
        var low = 0
        var high = packets.count
        while low < high {
            let mid = (low + high) / 2
            if packets[mid].sequence < sequence { low = mid + 1 } else { high = mid }
        }
        return low
    }

    public mutating func insert(_ packet: RTPPacket) -> Insertion {
        let sequence = extend(packet.sequenceNumber)
        if let nextDue, sequence < nextDue { return .late }
        highest = max(highest ?? sequence, sequence)
        let low = index(of: sequence)
        if low < packets.count, packets[low].sequence == sequence { return .duplicate }
        packets.insert((sequence, packet), at: low)
        if packets.count > capacity {
            packets.removeFirst()
            return .overflowed
        }
        return .accepted
    }

    public mutating func removeFirst() -> (sequence: Int64, packet: RTPPacket)? {
        guard !packets.isEmpty else { return nil }
        let head = packets.removeFirst()
        nextDue = head.sequence + 1
        return head
    }

    /// Drops everything; the next packet due is `sequence` when given (FLUSH's RTP-Info).
    public mutating func flush(nextSequence sequence: UInt16?) {
        packets.removeAll()
        nextDue = sequence.map { extend($0) }
    }
}
