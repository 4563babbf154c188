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

    /// Every request from `start` to `end`, each answered at once with a round trip of `delay(sequence)` ns
    /// (nil: not answered): when it was sent, ms after `start`.
    static func answered(_ exchange: inout TimingExchange, until end: UInt64, delay: (UInt32) -> UInt64?) -> [UInt64] {
        stride(from: start, through: end, by: Int(ms)).compactMap { now -> UInt64? in
            guard let request = exchange.request(at: now).flatMap({ TimingPacket(parsing: $0) }) else { return nil }
            if let delay = delay(request.sequence) {
                // The sender's clock 2 ms ahead; the whole round trip on the way there.
                let reply = TimingPacket(kind: .response, sequence: request.sequence, t1: request.t1,
                                         t2: request.t1 + 2 * ms + delay, t3: request.t1 + 2 * ms + delay).serialized()
                _ = exchange.take(reply, arrival: request.t1 + delay)
            }
            return (now - start) / ms
        }
    }

    @Test func fiveRequests20MillisecondsApartThenOneASecond() {
        var exchange = TimingExchange(start: Self.start)
        let sent = Self.requests(&exchange, until: Self.start + 3_500 * Self.ms)
        #expect(sent.map(\.1.sequence) == Array(1...UInt32(sent.count)))
        #expect(sent.allSatisfy { $0.1.kind == .request && $0.1.t1 == $0.0 })
        // Answered within 5 ms: the clock is known, and five are enough.
        var answered = TimingExchange(start: Self.start)
        #expect(Self.answered(&answered, until: Self.start + 3_500 * Self.ms) { _ in 200_000 } == [0, 20, 40, 60, 80, 1_080, 2_080, 3_080])
        #expect(answered.next == Self.start + 4_080 * Self.ms)
    }

    /// streaming.md §5: while no answer came back within 5 ms (a thread held up at either end: each answer is
    /// then off by up to half its round trip), the requests go on 20 ms apart, until one does or 50 were sent.
    @Test func requestsGoOn20MillisecondsApartUntilAnAnswerComesWithin5Milliseconds() {
        var late = TimingExchange(start: Self.start)
        // The first seven answered 180 ms late, the eighth at once (after the ninth was due: it goes 20 ms on).
        let sent = Self.answered(&late, until: Self.start + 2_500 * Self.ms) { $0 <= 7 ? 180 * Self.ms : 200_000 }
        #expect(sent == [0, 20, 40, 60, 80, 100, 120, 140, 160, 1_160, 2_160], "\(sent)")
        // Never within 5 ms (or never answered): a second of them, then one a second.
        for delay in [6 * Self.ms, nil] {
            var never = TimingExchange(start: Self.start)
            let times = Self.answered(&never, until: Self.start + 3_000 * Self.ms) { _ in delay }
            #expect(times == Array(stride(from: 0, through: 980, by: 20)) + [1_980, 2_980], "\(String(describing: delay)): \(times)")
        }
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
        // Unanswered: 50 in the first second, then one a second.
        let sent = Self.requests(&exchange, until: Self.start + 20_000 * Self.ms).map(\.1)
        #expect(sent.count == 69)
        let answered = [52, 53, 68].map { exchange.take(Self.reply(to: sent[$0]), arrival: Self.start + 30_000 * Self.ms) != nil }
        #expect(answered == [false, true, true])
    }
}
