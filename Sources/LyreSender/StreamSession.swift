import Foundation
import LyreAudio
import LyreClock
import LyreCodec
import LyreWire
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// How a sender streams (streaming.md §3).
public struct StreamConfiguration: Sendable {
    /// Target latency, ms: 20…2000.
    public var latencyMilliseconds = 250
    /// Opus bitrate, bits per second.
    public var bitrate = 128_000
    /// Opus frame: 10 or 20 ms.
    public var frameMilliseconds = 20
    /// Shown by the receiver while it plays.
    public var senderName = "Lyre"
    public var senderID: String?

    public init() {}
}

/// Why the route to the receiver changed, as `AVAudioSession.RouteChangeReason` says it on iOS.
public enum OutputRouteChangeReason: Sendable, Equatable {
    /// The receiver went away, stopped, or the connection was lost.
    case oldDeviceUnavailable
    /// Another sender took the receiver over (its name when the receiver said).
    case takenOver(by: String?)
}

/// One stream to one receiver: RTSP control, the timing responder, Opus encoding and RTP paced by the
/// sender's clock.
///
/// Audio goes in as 48 kHz interleaved stereo float through `enqueue`, which blocks while more than a
/// second is queued. A pacing thread sends each frame `lead` ahead of the time it is due.
///
/// `@unchecked Sendable`: mutable state is behind `lock`; the UDP socket is used by the pacing thread only.
public final class StreamSession: @unchecked Sendable {
    public let configuration: StreamConfiguration
    /// The receiver's output latency, ms, from its RECORD answer.
    public private(set) var outputLatencyMilliseconds: Double = 0
    /// The commands this sender accepts from the receiver (now-playing.md §4). Volume up and down are
    /// handled by the session, which owns the volume, unless replaced or disabled.
    public let remoteCommands = RemoteCommandCenter()
    private let commandQueue = DispatchQueue(label: "lyre-remote-commands")
    private var volumeDB: Double = 0
    // Content accounting: frames of queued audio, as opposed to silent slots, so that players can map a
    // position in what they enqueued to the time it plays.
    private var contentEnqueued: UInt64 = 0
    private var contentAtAnchor: UInt64 = 0
    private var contentSentSinceAnchor: UInt64 = 0
    private var silenceSinceAnchor: UInt64 = 0
    private var pendingSilence: UInt64 = 0

    private let client: RTSPClient
    private let timing: TimingResponder
    private let media: Int32
    private let sessionID: String
    private let frameSamples: Int
    private let frameNanoseconds: UInt64
    private let lead: UInt64
    private let lock = NIOLock()
    private var queue = SampleQueue()
    private var finishing = false
    private var running = false
    private var ended = false
    private var anchorClock: UInt64 = 0
    private var anchorRTP: UInt32
    private var framesSinceAnchor: UInt64 = 0
    private var sequence: UInt16
    private let ssrc: UInt32
    /// Recently sent frames, by index since the anchor, to take back on pause.
    private var history: [(index: UInt64, pcm: ArraySlice<Float>)] = []
    private var routeChangeHandlers: [@Sendable (OutputRouteChangeReason) -> Void] = []
    private var routeChangeSent = false
    private var lostRoute: OutputRouteChangeReason?
    private var pacer: Thread?
    private var lastRequest = HostClock.now()

    /// Connects and sets the stream up (OPTIONS, ANNOUNCE, SETUP). `onRouteChange` is called once, from a
    /// background thread, if the receiver goes away or another sender takes it over.
    public init(host: String, port: UInt16, configuration: StreamConfiguration,
                onRouteChange: (@Sendable (OutputRouteChangeReason) -> Void)? = nil) throws {
        precondition([10, 20].contains(configuration.frameMilliseconds), "frames are 10 or 20 ms")
        self.configuration = configuration
        frameSamples = 48 * configuration.frameMilliseconds
        frameNanoseconds = UInt64(configuration.frameMilliseconds) * 1_000_000
        lead = UInt64(min(configuration.latencyMilliseconds / 2, 100)) * 1_000_000
        anchorRTP = UInt32.random(in: 0...UInt32.max)
        sequence = UInt16.random(in: 0...UInt16.max)
        ssrc = UInt32.random(in: 1...UInt32.max)
        if let onRouteChange { routeChangeHandlers.append(onRouteChange) }

        let box = NIOLockedValueBox<StreamSession?>(nil)
        client = try RTSPClient(
            host: host, port: port,
            onRequest: { request, reply in
                if let session = box.withLockedValue({ $0 }) { session.receiverRequest(request, reply: reply) } else { reply(503, []) }
            },
            onClose: { box.withLockedValue { $0 }?.routeChanged(.oldDeviceUnavailable) })
        let local = IPv4.localAddress(client.fd).0
        timing = try TimingResponder(host: local, peer: host)
        media = try IPv4.bindUDP(host: local)

        do {
            try Self.check(client.request("OPTIONS", uri: "*"), "OPTIONS")
            let sdp = SessionDescription(audio: AudioFormat(encoding: .opus, payloadType: 96), origin: local)
            var announce = [("Content-Type", "application/sdp"), ("Lyre-Sender-Name", configuration.senderName),
                            ("Lyre-Latency", String(configuration.latencyMilliseconds))]
            if let id = configuration.senderID { announce.append(("Lyre-Sender-ID", id)) }
            try Self.check(client.request("ANNOUNCE", headers: announce, body: Array(sdp.serialized().utf8)), "ANNOUNCE")
            let localMediaPort = IPv4.localAddress(media).1
            let transport = TransportSpec(lower: .udp(client: (localMediaPort, localMediaPort &+ 1), server: nil), ssrc: ssrc)
            let reply = try Self.check(
                client.request("SETUP", uri: "rtsp://\(host):\(port)/streamid=0",
                               headers: [("Transport", transport.serialized), ("Lyre-Timing-Port", String(timing.port))]),
                "SETUP")
            guard let session = reply.headers["Session"]?.split(separator: ";").first.map(String.init),
                let answer = reply.headers["Transport"].flatMap(TransportSpec.init(parsing:)),
                case .udp(_, let server?) = answer.lower
            else { throw RTSPClient.Failure(description: "the receiver's SETUP answer has no Session or server_port") }
            sessionID = session
            let destination = try IPv4.address(host, port: server.0)
            guard IPv4.withSockaddr(destination, { connect(media, $0, $1) }) == 0 else { throw SocketError.errno("connect UDP") }
            // The sender owns the volume (as in AirPlay): start from what the receiver has now.
            let volumeReply = try client.request("GET_PARAMETER", headers: [("Session", session), ("Content-Type", "text/parameters")],
                                                 body: Array("volume\r\n".utf8))
            if volumeReply.status == 200, let db = TextParameters(parsing: volumeReply.bodyText)["volume"].flatMap(Double.init) { volumeDB = db }
        } catch {
            client.close()
            timing.close()
            Glibc.close(media)
            throw error
        }
        box.withLockedValue { $0 = self }
        remoteCommands.addHandler(.volumeUp) { [weak self] _ in self?.stepVolume(up: true) ?? .commandFailed }
        remoteCommands.addHandler(.volumeDown) { [weak self] _ in self?.stepVolume(up: false) ?? .commandFailed }
        remoteCommands.onChange = { [weak self] enabled in self?.sendEnabledCommands(enabled) }
        remoteCommands.publish()
        let thread = Thread { [self] in pace() }
        thread.name = "lyre-pacer"
        pacer = thread
        thread.start()
    }

    @discardableResult
    static func check(_ response: RTSPMessage, _ method: String) throws(RTSPClient.Failure) -> RTSPMessage {
        guard let status = response.status, status == 200 else {
            let status = response.status ?? 0
            let why = status == 503 ? "its audio output is unavailable" : "\(status) \(RTSPStatus.reason(status))"
            throw RTSPClient.Failure(description: "the receiver refused \(method): \(why)")
        }
        return response
    }

    // MARK: control

    /// Starts (or resumes) playing: RECORD with a new anchor, `startDelay` ns from now.
    public func start(startDelay: UInt64 = 20_000_000) throws {
        let (anchor, rtp, seq) = lock.withLock { () -> (UInt64, UInt32, UInt16) in
            anchorRTP = anchorRTP &+ UInt32(truncatingIfNeeded: framesSinceAnchor * UInt64(frameSamples))
            framesSinceAnchor = 0
            history.removeAll()
            anchorClock = HostClock.now() + startDelay
            contentAtAnchor = contentEnqueued - UInt64(queue.count / 2)
            contentSentSinceAnchor = 0
            silenceSinceAnchor = 0
            pendingSilence = 0
            return (anchorClock, anchorRTP, sequence)
        }
        let reply = try Self.check(
            request("RECORD", headers: [
                ("Session", sessionID), ("RTP-Info", RTPInfo(sequence: seq, rtpTime: rtp).serialized),
                ("Lyre-Anchor", PlaybackAnchor(rtpTime: rtp, senderClock: anchor).serialized),
            ]), "RECORD")
        outputLatencyMilliseconds = reply.headers["Lyre-Output-Latency"].flatMap(Double.init) ?? 0
        lock.withLock { running = true }
    }

    /// Stops at once (FLUSH). Audio sent but not yet played is taken back, so `start()` resumes exactly.
    public func pause() throws {
        let (seq, rtp) = lock.withLock { () -> (UInt16, UInt32) in
            running = false
            let now = HostClock.now()
            let played = now > anchorClock + latency ? (now - anchorClock - latency) / frameNanoseconds : 0
            let unplayed = history.filter { $0.index >= played }
            queue.prepend(unplayed.flatMap { $0.pcm })
            let rewind = UInt64(unplayed.count)
            framesSinceAnchor -= min(rewind, framesSinceAnchor)
            history.removeAll()
            return (sequence, anchorRTP &+ UInt32(truncatingIfNeeded: framesSinceAnchor * UInt64(frameSamples)))
        }
        try Self.check(request("FLUSH", headers: [("Session", sessionID), ("RTP-Info", RTPInfo(sequence: seq, rtpTime: rtp).serialized)]), "FLUSH")
    }

    /// Drops queued audio (for a seek: pause, drop, enqueue from the new position, start).
    public func dropQueued() {
        lock.withLock {
            contentEnqueued -= UInt64(queue.count / 2)
            queue.removeAll()
        }
    }

    /// The volume the receiver plays at, dB (RAOP scale: −30…0, −144 = mute).
    public var volume: Double { lock.withLock { volumeDB } }

    public func setVolume(_ db: Double) throws {
        try Self.check(request("SET_PARAMETER", headers: [("Session", sessionID), ("Content-Type", "text/parameters")],
                               body: Array("volume: \(db)\r\n".utf8)), "SET_PARAMETER")
        lock.withLock { volumeDB = db }
    }

    /// One step up or down, 1/16 of the range as iOS volume buttons; below −30 dB is mute.
    private func stepVolume(up: Bool) -> RemoteCommandStatus {
        let current = volume
        let step = 30.0 / 16
        let next = up ? (current <= -144 ? -30 : min(0, current + step)) : (current - step < -30 ? -144 : current - step)
        do {
            try setVolume(next)
            return .success
        } catch {
            return .commandFailed
        }
    }

    // MARK: now playing

    /// Describes what plays (`MPNowPlayingInfoCenter.nowPlayingInfo`). Send it when the rate changes, on a
    /// seek and on a track change; the receiver extrapolates the position in between.
    public func setNowPlaying(_ info: NowPlayingInfo) throws {
        try info.validate()
        try Self.check(request("SET_PARAMETER", headers: [("Session", sessionID), ("Content-Type", "application/json")],
                               body: info.serialized()), "now-playing SET_PARAMETER")
    }

    /// Sets the cover art shown with the now-playing info; nil clears it.
    public func setArtwork(_ artwork: Artwork?) throws {
        try Self.check(request("SET_PARAMETER", headers: [("Session", sessionID), ("Content-Type", artwork?.type.rawValue ?? "image/jpeg")],
                               body: artwork?.bytes ?? []), "artwork SET_PARAMETER")
    }

    private func sendEnabledCommands(_ enabled: EnabledCommands) {
        guard !lock.withLock({ ended }) else { return }
        _ = try? request("SET_PARAMETER", headers: [("Session", sessionID), ("Content-Type", "text/parameters")],
                         body: Array(enabled.parameters.serialized.utf8))
    }

    // MARK: content positions

    /// Frames (48 kHz) enqueued so far, less what `dropQueued` dropped: the index the next enqueued frame gets.
    public var enqueuedFrames: UInt64 { lock.withLock { contentEnqueued } }

    /// How many enqueued frames have played by sender-clock time `now`.
    public func playedFrames(at now: UInt64 = HostClock.now()) -> UInt64 {
        lock.withLock {
            guard running else { return contentEnqueued - UInt64(queue.count / 2) }
            let start = anchorClock + latency
            let elapsed = now > start ? (now - start) * 48 / 1_000_000 : 0
            return contentAtAnchor + min(contentSentSinceAnchor, elapsed > silenceSinceAnchor ? elapsed - silenceSinceAnchor : 0)
        }
    }

    /// Sender-clock time at which enqueued frame `frame` plays, while playing; nil while paused.
    public func playTime(ofFrame frame: UInt64) -> UInt64? {
        lock.withLock {
            guard running else { return nil }
            let offset = Int64(frame) - Int64(contentAtAnchor) + Int64(silenceSinceAnchor)
            return UInt64(Int64(anchorClock + latency) + offset * 1_000_000 / 48)
        }
    }

    /// Queues audio: 48 kHz interleaved stereo float. Blocks while more than a second is queued; returns
    /// false once the session has ended.
    @discardableResult
    public func enqueue(_ pcm: [Float]) -> Bool {
        while true {
            let (queued, ended) = lock.withLock { (queue.count, self.ended) }
            if ended { return false }
            if queued < 96000 { break }
            usleep(5000)
        }
        lock.withLock {
            queue.append(contentsOf: pcm)
            contentEnqueued += UInt64(pcm.count / 2)
        }
        return true
    }

    /// Frames (48 kHz) queued and not yet sent.
    public var queuedFrames: Int { lock.withLock { queue.count / 2 } }

    /// The session is over: closed, or the receiver went away or was taken over.
    public var hasEnded: Bool { lock.withLock { ended } }

    /// Why the route went away, once it has (what `onRouteChange` was told).
    public var routeChangeReason: OutputRouteChangeReason? { lock.withLock { lostRoute } }

    /// Sender-clock time at which what has been sent so far will have played.
    public var sentUntil: UInt64 {
        lock.withLock { anchorClock + framesSinceAnchor * frameNanoseconds + latency }
    }

    /// Sends what is queued, waits until it has played, then TEARDOWN and close.
    public func finish() {
        lock.withLock { finishing = true }
        while lock.withLock({ !queue.isEmpty && running && !ended }) { usleep(5000) }
        let until = sentUntil
        if lock.withLock({ running && !ended }) { HostClock.sleep(until: until + 20_000_000) }
        close()
    }

    /// TEARDOWN and close now.
    public func close() {
        let wasRunning = lock.withLock {
            defer { ended = true; running = false; routeChangeSent = true }
            return !ended
        }
        if wasRunning, !client.isClosed { _ = try? client.request("TEARDOWN", headers: [("Session", sessionID)], timeout: 1) }
        client.close()
        timing.close()
    }

    private var latency: UInt64 { UInt64(configuration.latencyMilliseconds) * 1_000_000 }

    private func request(_ method: String, headers: [(String, String)], body: [UInt8] = []) throws -> RTSPMessage {
        lock.withLock { lastRequest = HostClock.now() }
        return try client.request(method, headers: headers, body: body)
    }

    // MARK: receiver events

    private func receiverRequest(_ request: RTSPMessage, reply: @escaping RTSPClient.Reply) {
        guard request.method == "SET_PARAMETER" else {
            reply(request.method == "OPTIONS" || request.method == "GET_PARAMETER" ? 200 : 501, [])
            return
        }
        let parameters = TextParameters(parsing: request.bodyText)
        if let end = parameters["session-end"] {
            reply(200, [])
            routeChanged(end == "taken-over" ? .takenOver(by: request.headers["Lyre-Taken-Over-By"]) : .oldDeviceUnavailable)
            return
        }
        guard parameters["remote-command"] != nil else {
            reply(451, [("Lyre-Error", "a sender takes session-end and remote-command")])
            return
        }
        // Only this session's receiver may command it: the request came over the session's own connection,
        // and it must name the session.
        guard request.headers["Session"]?.split(separator: ";").first.map(String.init) == sessionID else {
            reply(454, [("Lyre-Error", "not this session")])
            return
        }
        let event: RemoteCommandEvent
        do {
            event = try RemoteCommandEvent(parsing: parameters)
        } catch {
            reply(451, [("Lyre-Error", error.description)])
            return
        }
        commandQueue.async { [remoteCommands] in
            let status = remoteCommands.handle(event)
            reply(status.rtspStatus, [("Lyre-Command-Status", status.rawValue)])
        }
    }

    /// Adds a route-change handler (a `QueuePlayer` adds its own). Called at once if the route is already gone.
    func observeRouteChange(_ handler: @escaping @Sendable (OutputRouteChangeReason) -> Void) {
        let lost: OutputRouteChangeReason? = lock.withLock {
            if lostRoute == nil { routeChangeHandlers.append(handler) }
            return lostRoute
        }
        if let lost { handler(lost) }
    }

    private func routeChanged(_ reason: OutputRouteChangeReason) {
        let handlers: [@Sendable (OutputRouteChangeReason) -> Void] = lock.withLock {
            running = false
            ended = true
            guard !routeChangeSent else { return [] }
            routeChangeSent = true
            lostRoute = reason
            return routeChangeHandlers
        }
        for handler in handlers { handler(reason) }
    }

    // MARK: pacing

    private func pace() {
        do {
            let encoder = try OpusEncoder(bitrate: configuration.bitrate)
            pace(with: encoder)
        } catch {
            routeChanged(.oldDeviceUnavailable)
        }
        Glibc.close(media)
    }

    private func pace(with encoder: borrowing OpusEncoder) {
        let samplesPerFrame = frameSamples * 2
        while true {
            let step = lock.withLock { () -> (ended: Bool, running: Bool, due: UInt64) in
                (ended, running, anchorClock + framesSinceAnchor * frameNanoseconds)
            }
            if step.ended { break }
            if !step.running {
                // Paused: keep the session alive (streaming.md §7).
                if HostClock.now() - lock.withLock({ lastRequest }) > 4_000_000_000 {
                    _ = try? request("GET_PARAMETER", headers: [("Session", sessionID)])
                }
                usleep(2000)
                continue
            }
            HostClock.sleep(until: step.due > lead ? step.due - lead : 0)
            let frame = lock.withLock { () -> (pcm: ArraySlice<Float>?, index: UInt64, seq: UInt16, rtp: UInt32)? in
                guard running else { return nil }
                let index = framesSinceAnchor
                let rtp = anchorRTP &+ UInt32(truncatingIfNeeded: index * UInt64(frameSamples))
                framesSinceAnchor += 1
                if queue.count >= samplesPerFrame || (finishing && !queue.isEmpty) {
                    var pcm = queue.take(samplesPerFrame)
                    contentSentSinceAnchor += UInt64(pcm.count / 2)
                    silenceSinceAnchor += pendingSilence
                    pendingSilence = 0
                    if pcm.count < samplesPerFrame { pcm.append(contentsOf: repeatElement(0, count: samplesPerFrame - pcm.count)) }
                    history.append((index, pcm))
                    let keep = Int((latency + lead) / frameNanoseconds) + 4
                    if history.count > keep { history.removeFirst(history.count - keep) }
                    defer { sequence &+= 1 }
                    return (pcm, index, sequence, rtp)
                }
                pendingSilence += UInt64(frameSamples)
                return (nil, index, sequence, rtp)  // nothing queued: the slot passes in silence
            }
            guard let frame, let pcm = frame.pcm else { continue }
            guard let payload = try? pcm.withUnsafeBufferPointer({ try encoder.encode($0, frames: frameSamples) }) else { continue }
            let packet = RTPPacket(marker: false, payloadType: 96, sequenceNumber: frame.seq, timestamp: frame.rtp, ssrc: ssrc, payload: payload)
            let bytes = packet.serialized()
            _ = bytes.withUnsafeBytes { send(media, $0.baseAddress, $0.count, 0) }
        }
    }
}

/// The samples waiting to be sent. The pacing thread takes a frame from the front every 10–20 ms; taking
/// moves a read index instead of shifting the whole queue, which is compacted now and then.
private struct SampleQueue {
    private var storage: [Float] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(contentsOf samples: [Float]) { storage += samples }

    /// Puts samples back at the front (audio taken back on pause).
    mutating func prepend(_ samples: [Float]) {
        storage = samples + storage[head...]
        head = 0
    }

    /// Up to `n` samples from the front.
    mutating func take(_ n: Int) -> ArraySlice<Float> {
        let end = min(head + n, storage.count)
        let taken = ArraySlice(storage[head..<end])
        head = end
        if head >= 48_000, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return taken
    }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        head = 0
    }
}
