import LyreAudio
import NIOConcurrencyHelpers

/// Where audio comes from: a file (anything libsndfile reads) or raw PCM on a file descriptor.
public enum AudioSource: Sendable, Equatable, CustomStringConvertible {
    case file(path: String)
    case raw(fileDescriptor: Int32, format: RawPCMFormat)

    public var description: String {
        switch self {
        case .file(let path): path.split(separator: "/").last.map(String.init) ?? path
        case .raw: "stdin"
        }
    }

    /// Opens and closes the source, to report an unreadable file before anything plays.
    public func openCheck() throws {
        if case .file = self { _ = try open() }
    }

    func open() throws -> AudioFileReader {
        switch self {
        case .file(let path): try AudioFileReader(path: path)
        case .raw(let fd, let format): try AudioFileReader(fileDescriptor: fd, raw: format)
        }
    }
}

/// Plays a queue of sources through a `StreamSession`: decodes, makes stereo, resamples to 48 kHz with
/// libsoxr and hands the audio to the session, which paces it. `play()` blocks until the queue ends, the
/// player is stopped, or the route goes away.
public final class QueuePlayer: @unchecked Sendable {
    public struct Progress: Sendable {
        public var index: Int
        public var title: String
        /// Seconds sent to the receiver for this item.
        public var elapsed: Double
        public var duration: Double?
        public var paused: Bool
    }

    private let session: StreamSession
    private let items: [AudioSource]
    private let state = NIOLockedValueBox<(stopped: Bool, paused: Bool, sentFrames: Int, index: Int, interruption: OutputRouteChangeReason?)>(
        (false, false, 0, 0, nil))

    public init(items: [AudioSource], session: StreamSession) {
        self.items = items
        self.session = session
    }

    public func stop() { state.withLockedValue { $0.stopped = true } }

    /// The route went away: stop feeding and mark the player paused, as an iOS app pauses when headphones
    /// are pulled. `play()` then returns `.interrupted`.
    public func routeChanged(_ reason: OutputRouteChangeReason) {
        state.withLockedValue { $0.paused = true; $0.stopped = true; $0.interruption = reason }
    }

    /// How `play()` ended.
    public enum Outcome: Sendable, Equatable {
        case finished
        case stopped
        case interrupted(OutputRouteChangeReason)
    }

    /// Pauses at once; `resume()` carries on where it stopped.
    public func pause() throws {
        let already = state.withLockedValue { s in defer { s.paused = true }; return s.paused }
        if !already { try session.pause() }
    }

    public func resume() throws {
        let paused = state.withLockedValue { s in defer { s.paused = false }; return s.paused }
        if paused { try session.start() }
    }

    public var isPaused: Bool { state.withLockedValue { $0.paused } }

    /// Plays the queue; `progress` is called about 5 times a second from this thread.
    @discardableResult
    public func play(progress: (Progress) -> Void = { _ in }) throws -> Outcome {
        try session.start()
        for (index, item) in items.enumerated() {
            if state.withLockedValue({ $0.stopped }) { break }
            let reader = try item.open()
            var resampler = reader.sampleRate == 48000 ? nil : try Resampler(from: reader.sampleRate, channels: 2)
            let duration = reader.frames.map { Double($0) / Double(reader.sampleRate) }
            state.withLockedValue { $0.sentFrames = 0; $0.index = index }
            var buffer: [Float] = []
            var lastReport: UInt64 = 0
            while !state.withLockedValue({ $0.stopped }) {
                let got = reader.read(frames: 4800, into: &buffer)
                var stereo = Self.stereo(buffer, channels: reader.channels)
                if resampler != nil { stereo = resampler!.process(stereo, end: got == 0) }
                if !stereo.isEmpty {
                    guard session.enqueue(stereo) else { return outcome() }
                    state.withLockedValue { $0.sentFrames += stereo.count / 2 }
                }
                let now = HostClock.now()
                if now - lastReport > 200_000_000 {
                    lastReport = now
                    progress(report(index: index, item: item, duration: duration))
                }
                if got == 0 {
                    if resampler == nil || stereo.isEmpty { break }
                }
            }
            resampler = nil
        }
        guard !state.withLockedValue({ $0.stopped }) else {
            session.close()
            return outcome()
        }
        session.finish()
        return outcome()
    }

    private func outcome() -> Outcome {
        state.withLockedValue { s in
            if let reason = s.interruption { return .interrupted(reason) }
            return s.stopped ? .stopped : .finished
        }
    }

    private func report(index: Int, item: AudioSource, duration: Double?) -> Progress {
        let (sent, paused) = state.withLockedValue { ($0.sentFrames, $0.paused) }
        let elapsed = max(0, Double(sent - session.queuedFrames) / 48000)
        return Progress(index: index, title: item.description, elapsed: elapsed, duration: duration, paused: paused)
    }

    /// Interleaved stereo from any channel count: mono is doubled, more than two keep the first two.
    static func stereo(_ pcm: [Float], channels: Int) -> [Float] {
        if channels == 2 { return pcm }
        let frames = pcm.count / channels
        var out = [Float](repeating: 0, count: frames * 2)
        for f in 0..<frames {
            out[2 * f] = pcm[f * channels]
            out[2 * f + 1] = channels == 1 ? pcm[f] : pcm[f * channels + 1]
        }
        return out
    }
}
