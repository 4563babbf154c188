import LyreWire

/// The receiver's side of FEC (streaming.md §4.3), sans I/O: keeps the last media packets that came (played
/// or not) and the parity packets that still protect something missing; whenever exactly one packet of a
/// row is missing and its parity is here, rebuilds it.
public struct FECRepair: Sendable {
    /// Media packets kept, by sequence number, and the order they came in (the oldest are forgotten).
    private var recent: [UInt16: RTPPacket] = [:]
    private var order: [UInt16] = []
    private var parities: [FECPacket] = []
    static let keptPackets = 64
    static let keptParities = 16

    public init() {}

    /// A media packet came: any packet it completes a row for, rebuilt.
    public mutating func media(_ packet: RTPPacket) -> [RTPPacket] {
        remember(packet)
        return repair()
    }

    /// A parity packet came: the packet it rebuilds, if its row misses just one.
    public mutating func parity(_ fec: FECPacket) -> [RTPPacket] {
        parities.append(fec)
        if parities.count > Self.keptParities { parities.removeFirst(parities.count - Self.keptParities) }
        return repair()
    }

    public mutating func reset() {
        recent.removeAll()
        order.removeAll()
        parities.removeAll()
    }

    private mutating func remember(_ packet: RTPPacket) {
        guard recent.updateValue(packet, forKey: packet.sequenceNumber) == nil else { return }
        order.append(packet.sequenceNumber)
        if order.count > Self.keptPackets {
            for old in order.prefix(order.count - Self.keptPackets) { recent[old] = nil }
            order.removeFirst(order.count - Self.keptPackets)
        }
    }

    /// Rebuilds what can be; a parity whose row is complete (or rebuilt) is done with. Repeats, since one
    /// rebuilt packet can complete another row.
    private mutating func repair() -> [RTPPacket] {
        var rebuilt: [RTPPacket] = []
        var progress = true
        while progress {
            progress = false
            var keep: [FECPacket] = []
            for fec in parities {
                let protected = fec.protected
                let have = protected.compactMap { recent[$0] }
                if have.count == protected.count { continue }
                if have.count == protected.count - 1, let packet = fec.recover(from: have) {
                    remember(packet)
                    rebuilt.append(packet)
                    progress = true
                    continue
                }
                keep.append(fec)
            }
            parities = keep
        }
        return rebuilt
    }
}
