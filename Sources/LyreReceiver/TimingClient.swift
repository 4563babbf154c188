import LyreClock
import LyreWire
import Synchronization

/// The receiver's side of the timing exchange (streaming.md §5), on its own thread: 5 requests 20 ms
/// apart, then one a second (sooner while answers come back slow: `TimingExchange`), each answer turned into
/// an offset and round trip for the session's playout.
///
/// Its own thread and the kernel's receive time (`TimingSocket`) keep `t4` true when the event loops are
/// busy: a `t4` read late on a loaded machine once moved the offset by a millisecond and more, and the
/// playout then slewed its way through the first seconds of audio.
///
/// `@unchecked Sendable`: the socket and the exchange's state are used by the client's thread only (`close`
/// only shuts the socket down); `stopped` is locked.
final class TimingClient: @unchecked Sendable {
    /// One answered exchange: when it completed (local clock), sender-minus-local offset and round trip, ns.
    typealias Sample = (localTime: UInt64, offset: Int64, delay: Int64)

    private let socket: TimingSocket
    private let peer: String
    private let peerPort: UInt16
    private let onSample: @Sendable (Sample) -> Void
    private let onDropped: @Sendable () -> Void
    private let stopped = Mutex(false)
    private let authenticator: TimingAuthenticator?

    /// Binds on `host` and starts asking `peer`:`peerPort` at once. With `authenticator` (a paired session,
    /// pairing.md §6.4), requests carry a tag and a reply whose tag does not verify is dropped.
    init(host: String, peer: String, peerPort: UInt16, authenticator: TimingAuthenticator? = nil,
         onSample: @escaping @Sendable (Sample) -> Void, onDropped: @escaping @Sendable () -> Void) throws(SocketError) {
        self.authenticator = authenticator
        socket = try TimingSocket(host: host)
        self.peer = peer
        self.peerPort = peerPort
        self.onSample = onSample
        self.onDropped = onDropped
        do {
            try DedicatedThread.detach("lyred-timing") { [self] in loop() }
        } catch {
            throw SocketError(description: error.description)
        }
    }

    /// Stops the thread at once (its wait ends with the socket's shutdown); the socket closes with the client.
    func close() {
        stopped.withLock { $0 = true }
        socket.shutdown()
    }

    private func loop() {
        var exchange = TimingExchange(start: HostClock.now())
        while !stopped.withLock({ $0 }) {
            if let request = exchange.request(at: HostClock.now()) {
                socket.send(authenticator?.seal(request) ?? request, to: peer, port: peerPort)
            }
            // Until the next request is due: `close()` ends the wait sooner.
            let wait = Int(max(1, (Int64(bitPattern: exchange.next) - Int64(bitPattern: HostClock.now())) / 1_000_000))
            guard let datagram = socket.receive(timeoutMilliseconds: wait) else { continue }
            let bytes = authenticator.map { $0.open(datagram.bytes) } ?? datagram.bytes
            guard datagram.host == peer, datagram.port == peerPort, let bytes, let sample = exchange.take(bytes, arrival: datagram.arrival) else {
                onDropped()
                continue
            }
            onSample(sample)
        }
    }
}

/// The timing exchange's schedule and bookkeeping (streaming.md §5), without the socket or the thread:
/// 5 requests 20 ms apart, then one a second; until an answer has come back with a round trip of at most
/// `knownDelay`, a request goes 20 ms after each answer with a longer one (answers closer together share it),
/// until 50 requests have gone in all; one a second goes on after that. A reply counts only when it answers a
/// request still outstanding (at most the last 16), echoing its sequence and its `t1`, so an old reply sent
/// again is dropped (pairing.md §6.4).
///
/// Why ask again: an answer is true only to within half its round trip, and the playout starts on what the
/// first answers say. Answers with long round trips (on a loaded host: a thread held up between reading its
/// time and sending, or a reply stamped when it was read, as the kernel does before its receive timestamps
/// are turned on) could leave the clock tens of ms off until the once-a-second answers corrected it, and the
/// output then jumped to the schedule. (That is the likeliest reading of a CI run in which SinkTests' mpv test
/// heard the start of its sweep 90 ms later than the rest; the run kept no log to prove it.) Requests nobody
/// answers are not asked again sooner: a far sender's answers would outrun the 16 remembered.
struct TimingExchange: Sendable {
    /// Requests asked 20 ms apart before the pace drops to one a second.
    static let quickRequests: UInt32 = 5
    /// Requests sent at most while answers come back with long round trips.
    static let quickRequestLimit: UInt32 = 50
    /// A round trip that knows the clock to within half of it: 5 ms, the filter's step threshold.
    static let knownDelay: Int64 = 5_000_000
    static let quickInterval: UInt64 = 20_000_000
    static let interval: UInt64 = 1_000_000_000
    /// Requests remembered for their replies; an older one's reply is dropped.
    static let outstandingLimit = 16

    private(set) var sequence: UInt32 = 0
    /// When the next request is due (local clock, ns).
    private(set) var next: UInt64
    private var outstanding: [UInt32: UInt64] = [:]
    /// An answer's round trip was at most `knownDelay`.
    private(set) var known = false

    init(start: UInt64) { next = start }

    /// The request to send at `now`, if one is due.
    mutating func request(at now: UInt64) -> [UInt8]? {
        guard now >= next else { return nil }
        sequence &+= 1
        outstanding[sequence] = now
        if outstanding.count > Self.outstandingLimit, let oldest = outstanding.keys.min() { outstanding[oldest] = nil }
        next = now + (sequence < Self.quickRequests ? Self.quickInterval : Self.interval)
        return TimingPacket(kind: .request, sequence: sequence, t1: now).serialized()
    }

    /// The sample a reply that arrived at `arrival` gives, or nil when it is not the answer to an outstanding
    /// request (malformed, a request, an unknown sequence, another `t1`, or answered already) or says nothing
    /// true: a negative round trip, the sender holding the request longer than the whole exchange took (a
    /// broken or forged reply, or a clock stepped), which no filter can use; it is asked again as a slow one is.
    mutating func take(_ bytes: [UInt8], arrival: UInt64) -> TimingClient.Sample? {
        guard let packet = TimingPacket(parsing: bytes), packet.kind == .response, outstanding[packet.sequence] == packet.t1 else { return nil }
        outstanding[packet.sequence] = nil
        let (offset, delay) = packet.offsetAndDelay(t4: arrival)
        if (0...Self.knownDelay).contains(delay) {
            known = true
        } else if !known, sequence < Self.quickRequestLimit {
            next = min(next, arrival + Self.quickInterval)
        }
        return delay >= 0 ? (arrival, offset, delay) : nil
    }
}
