import LyreWire
import Testing

@testable import LyreReceiver

/// The receiver's side of the timing exchange (streaming.md §5, pairing.md §6.4), without its socket or thread.
struct TimingExchangeTests {
    static let ms: UInt64 = 1_000_000
    static let start: UInt64 = 5_000 * ms

    /// Every request the exchange sends from `start` to `end`, polled each millisecond: (when, the packet).
    static func requests(_ exchange: inout TimingExchange, until end: UInt64) -> [(UInt64, TimingPacket)] {
        stride(from: start, through: end, by: Int(ms)).compactMap { now in
            exchange.request(at: now).flatMap { TimingPacket(parsing: $0) }.map { (now, $0) }
        }
    }

    /// Every request from `start` to `end`, polled each millisecond, each answered `delay(sequence)` ns after
    /// it was sent (nil: never), the whole round trip on the way back (the sender's clock 2 ms ahead): when
    /// each was sent, ms after `start`.
    static func answered(_ exchange: inout TimingExchange, until end: UInt64, delay: (UInt32) -> UInt64?) -> [UInt64] {
        var replies: [(arrival: UInt64, bytes: [UInt8])] = []
        return stride(from: start, through: end, by: Int(ms)).compactMap { now -> UInt64? in
            for reply in replies where reply.arrival <= now { _ = exchange.take(reply.bytes, arrival: reply.arrival) }
            replies.removeAll { $0.arrival <= now }
            guard let request = exchange.request(at: now).flatMap({ TimingPacket(parsing: $0) }) else { return nil }
            if let delay = delay(request.sequence) {
                let reply = TimingPacket(kind: .response, sequence: request.sequence, t1: request.t1, t2: request.t1 + 2 * ms, t3: request.t1 + 2 * ms)
                replies.append((request.t1 + delay, reply.serialized()))
            }
            return (now - start) / ms
        }
    }

    /// A reply that says the sender held the request longer than the whole round trip took gives no sample (the
    /// client counts it dropped) and does not count as a known clock; a true one after it does.
    @Test func aReplyWithANegativeRoundTripIsNoSample() throws {
        var exchange = TimingExchange(start: Self.start)
        let request = try #require(exchange.request(at: Self.start).flatMap { TimingPacket(parsing: $0) })
        let arrival = Self.start + Self.ms
        let broken = TimingPacket(kind: .response, sequence: 1, t1: request.t1, t2: request.t1, t3: request.t1 + 3 * Self.ms)
        let sample = exchange.take(broken.serialized(), arrival: arrival)
        #expect(sample == nil && !exchange.known)
        let second = try #require(exchange.request(at: exchange.next).flatMap { TimingPacket(parsing: $0) })
        let good = TimingPacket(kind: .response, sequence: second.sequence, t1: second.t1, t2: second.t1 + 2 * Self.ms, t3: second.t1 + 2 * Self.ms)
        let taken = exchange.take(good.serialized(), arrival: second.t1 + Self.ms)
        #expect(taken?.delay == Int64(Self.ms) && exchange.known)
    }

    @Test func fiveRequests20MillisecondsApartThenOneASecond() {
        // Unanswered, and answered within 5 ms: the same.
        for delay in [nil, 200_000] as [UInt64?] {
            var exchange = TimingExchange(start: Self.start)
            #expect(Self.answered(&exchange, until: Self.start + 3_500 * Self.ms) { _ in delay } == [0, 20, 40, 60, 80, 1_080, 2_080, 3_080])
            #expect(exchange.next == Self.start + 4_080 * Self.ms)
        }
        var exchange = TimingExchange(start: Self.start)
        let sent = Self.requests(&exchange, until: Self.start + 3_500 * Self.ms)
        #expect(sent.map(\.1.sequence) == Array(1...8))
        #expect(sent.allSatisfy { $0.1.kind == .request && $0.1.t1 == $0.0 })
    }

    /// streaming.md §5: until an answer comes back within 5 ms, each that comes back later (each is off by up
    /// to half its round trip) is followed by another request 20 ms after it, 50 requests at most.
    @Test func aSlowAnswerIsFollowedByAnotherRequestUntilOneComesWithin5Milliseconds() {
        // The first five answered 180 ms on; the first answer comes at 180 ms, the sixth request 20 ms after it,
        // answered within 5 ms: then one a second. (The second answer, at 200 ms, came as the sixth was due.)
        var late = TimingExchange(start: Self.start)
        let sent = Self.answered(&late, until: Self.start + 2_500 * Self.ms) { $0 <= 5 ? 180 * Self.ms : 200_000 }
        #expect(sent == [0, 20, 40, 60, 80, 200, 1_200, 2_200], "\(sent)")
        // Every answer 6 ms on: after the five, a request 20 ms after each answer, up to the 50th; then one a second.
        var slow = TimingExchange(start: Self.start)
        let times = Self.answered(&slow, until: Self.start + 3_000 * Self.ms) { _ in 6 * Self.ms }
        #expect(times == [0, 20, 40, 60, 80] + Array(stride(from: 106, through: 1_250, by: 26)) + [2_250], "\(times)")
    }

    static func reply(to request: TimingPacket, t1: UInt64? = nil, sequence: UInt32? = nil) -> [UInt8] {
        // The sender's clock is 2 ms ahead; the request takes 1 ms each way and 0.5 ms to answer.
        TimingPacket(kind: .response, sequence: sequence ?? request.sequence, t1: t1 ?? request.t1,
                     t2: request.t1 + 3 * ms, t3: request.t1 + 3 * ms + ms / 2).serialized()
    }

    /// A reply counts only when it echoes an outstanding request's sequence and t1, once; an old reply sent
    /// again, one with another t1, a request, or anything malformed gives no sample.
    @Test func aReplyMustEchoItsRequestAndCountsOnce() throws {
        var exchange = TimingExchange(start: Self.start)
        let request = exchange.request(at: Self.start)
        let first = try #require(request.flatMap { TimingPacket(parsing: $0) })
        let arrival = first.t1 + 2 * Self.ms + Self.ms / 2
        for wrong in [Self.reply(to: first, t1: first.t1 + 1), Self.reply(to: first, sequence: 2), first.serialized(), Array(Self.reply(to: first).dropLast())] {
            let taken = exchange.take(wrong, arrival: arrival)
            #expect(taken == nil)
        }
        // A forged reply with another t1 did not use the request up: the true one still counts.
        let taken = exchange.take(Self.reply(to: first), arrival: arrival)
        let sample = try #require(taken)
        #expect(sample.localTime == arrival && sample.offset == 2 * Int64(Self.ms) && sample.delay == 2 * Int64(Self.ms))
        let again = exchange.take(Self.reply(to: first), arrival: arrival + Self.ms)
        #expect(again == nil, "the same reply again")
    }

    /// Only the last 16 requests wait for their replies.
    @Test func onlyTheLast16RequestsAreAnswerable() {
        var exchange = TimingExchange(start: Self.start)
        let sent = Self.requests(&exchange, until: Self.start + 20_000 * Self.ms).map(\.1)
        #expect(sent.count == 24)
        let answered = [7, 8, 23].map { exchange.take(Self.reply(to: sent[$0]), arrival: Self.start + 30_000 * Self.ms) != nil }
        #expect(answered == [false, true, true])
    }
}
