import Logging
import LyreAudio
import LyreClock
import LyreWire
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Where audio comes from: a file (anything FFmpeg's libraries read) or raw PCM on a file descriptor.
public enum AudioSource: Sendable, Equatable, CustomStringConvertible {
    case file(path: String)
    case raw(fileDescriptor: Int32, format: RawPCMFormat)

    public var description: String {
        switch self {
        case .file(let path): path.split(separator: "/").last.map(String.init) ?? path
        case .raw: "stdin"
        }
    }

    /// A file can seek; a stream cannot.
    public var isSeekable: Bool { if case .file = self { true } else { false } }

    func open() throws -> AudioFileReader {
        switch self {
        case .file(let path): try AudioFileReader(path: path)
        case .raw(let fd, let format): try AudioFileReader(fileDescriptor: fd, raw: format)
        }
    }
}

/// What is known about an item before it plays: its tags, or what the app says instead.
public struct TrackMetadata: Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var trackCount: Int?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
                genre: String? = nil, trackNumber: Int? = nil, trackCount: Int? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.genre = genre
        self.trackNumber = trackNumber
        self.trackCount = trackCount
    }

    /// From a file's tags as FFmpeg names them (`AudioFileReader.tags`); a track number like "3/12" gives
    /// the count too.
    public init(tags: [String: String]) {
        self.init()
        let tags = tags.filter { !PathText.trimmed($0.value).isEmpty }
        title = tags["title"]
        artist = tags["artist"]
        album = tags["album"]
        albumArtist = tags["album_artist"]
        genre = tags["genre"]
        if let number = tags["track"] {
            let parts = number.split(separator: "/").map { Int(PathText.trimmed($0)) }
            trackNumber = parts.first ?? nil
            trackCount = parts.count > 1 ? parts[1] : nil
        }
    }
}

extension AudioSource {
    /// What a file says about itself, read in one opening: its tags, and its cover art (`CoverArt.find`).
    /// Nothing for a stream. Throws when the file cannot be read, before anything plays.
    public func describe() throws -> (metadata: TrackMetadata, artwork: Artwork?) {
        guard case .file(let path) = self else { return (TrackMetadata(), nil) }
        let reader = try open()
        return (TrackMetadata(tags: reader.tags), CoverArt.find(for: path, embedded: reader.picture))
    }
}

/// One entry of a play queue.
public struct QueueItem: Sendable {
    public var source: AudioSource
    public var metadata: TrackMetadata
    public var artwork: Artwork?

    public init(source: AudioSource, metadata: TrackMetadata = TrackMetadata(), artwork: Artwork? = nil) {
        self.source = source
        self.metadata = metadata
        self.artwork = artwork
    }
}

/// Plays a queue through a `StreamSession`: decodes, makes stereo, resamples to 48 kHz with libsoxr and
/// hands the audio to the session, which paces it. It describes what plays to the receiver
/// (`NowPlayingInfo`, artwork) and handles the receiver's commands: play, pause, toggle, stop, next,
/// previous, seek and skip. `play()` returns when the queue ends, the player is stopped, or the route goes away.
///
/// `@unchecked Sendable`: state is in `state` (locked); session calls that change what plays, and the
/// now-playing updates that describe them, run one at a time, in turn (`control`, a `TurnChain`), whether
/// their caller waits on a thread or awaits.
public final class QueuePlayer: @unchecked Sendable {
    public struct Progress: Sendable {
        public var index: Int
        public var title: String
        public var artist: String?
        /// Seconds into the item that is playing.
        public var elapsed: Double
        public var duration: Double?
        public var paused: Bool
    }

    /// How `play()` ended.
    public enum Outcome: Sendable, Equatable {
        case finished
        case stopped
        case interrupted(OutputRouteChangeReason)
    }

    /// Where an item's audio starts among the frames enqueued in the session.
    struct Boundary: Equatable {
        var id: Int
        var frame: UInt64
        var position: Double
        var index: Int
        var duration: Double?

        /// Seconds into the item once `played` frames have played, within 0…duration.
        func position(played: UInt64) -> Double {
            var seconds = position + Double(Int64(played) - Int64(frame)) / 48000
            if let duration { seconds = min(seconds, duration) }
            return max(0, seconds)
        }
    }

    /// What to play next, and why.
    struct Target: Equatable {
        enum Kind: Equatable { case start, natural, jump(resume: Bool) }
        var index: Int
        var position: Double
        var kind: Kind
    }

    struct State {
        var stopped = false
        /// `stop()` was called (or the task awaiting `play()` cancelled): a category change undone before the
        /// playback began does not undo it.
        var stopAsked = false
        var paused = false
        /// The app's own `pause()` holds (no `resume()` since): a category change undone before the playback
        /// began leaves it paused.
        var pauseAsked = false
        var interruption: OutputRouteChangeReason?
        var jump: Target?
        var boundaries: [Boundary] = []
        var nextBoundaryID = 0
        var shown: Boundary?
        var artworkIndex: Int?
        /// Audio is being queued before `session.start()`: item changes are not shown until it starts.
        var awaitingStart = true
        /// While `awaitingStart`: enough is queued to start (`startQueue`, or all of a shorter item), so a
        /// `resume()` starts the session itself; before, it only unpauses, and the queueing starts it.
        var queuedToStart = false
        /// The rooms went away and the session waits for them: the now playing, for a room that comes back,
        /// is to say paused.
        var showPaused = false
    }

    private let session: StreamSession
    private let items: [QueueItem]
    private let state = Mutex(State())
    private let control: TurnChain
    /// Wakes `play()`'s thread when something it waits for may have happened: a command, the route lost,
    /// the session's queue drained (`StreamSession.whenQueued`).
    private let wakeup = Wakeup()

    /// The app's audio session when the player follows one: see `init(items:session:audioSession:)`.
    private let audioSession: AudioSession?
    private var categoryObservation: Int?

    /// The player pauses by itself when the session's route goes away (`routeChanged`).
    ///
    /// With `audioSession`, the player follows the app's category too: a category change that takes the
    /// audio off the receivers while it plays ends the playback (`.interrupted(.categoryChange)`). An app
    /// asks `AudioSession.destination(receiverChosen:)` before it makes the `StreamSession`: making one
    /// announces a session, which takes the receiver over. Should it not, `play()` sends no audio and
    /// returns `.interrupted(.categoryChange)` at once.
    public init(items: [QueueItem], session: StreamSession, audioSession: AudioSession? = nil) {
        self.items = items
        self.session = session
        self.audioSession = audioSession
        control = TurnChain(loop: session.mediaLoop)
        session.observeRouteChange { [weak self] reason in self?.routeChanged(reason) }
        categoryObservation = audioSession?.observeRouteChange { [weak self, weak audioSession] reason in
            // Only a change that takes the audio off the receivers ends the playback.
            guard let audioSession, audioSession.destination(receiverChosen: true) != .receivers else { return }
            self?.routeChanged(reason)
        }
    }

    deinit {
        if let categoryObservation { audioSession?.cancelObservation(categoryObservation) }
    }

    public convenience init(items: [AudioSource], session: StreamSession) {
        self.init(items: items.map { QueueItem(source: $0) }, session: session)
    }

    public func stop() {
        state.withLock { s in
            s.stopped = true
            s.stopAsked = true
        }
        wakeup.signal()
    }

    /// The route went away: stop feeding and mark the player paused, as an iOS app pauses when headphones
    /// are pulled. `play()` then returns `.interrupted`, unless the session waits for its rooms
    /// (`StreamConfiguration.waitsForLostRooms`): then the player is paused where the rooms stopped, and
    /// `resume()` once a room is back carries on from there.
    public func routeChanged(_ reason: OutputRouteChangeReason) {
        // A category that keeps the audio local ends the playback: no room is to be waited for.
        let waiting = reason != .categoryChange && session.isWaitingForRooms
        state.withLock { s in
            s.paused = true
            if waiting {
                if case .jump = s.jump?.kind { s.jump?.kind = .jump(resume: false) }
                // The play thread says so.
                s.showPaused = true
            } else {
                s.stopped = true
                s.interruption = reason
            }
        }
        wakeup.signal()
    }

    public var isPaused: Bool { state.withLock { $0.paused } }

    /// Pauses at once (FLUSH); `resume()` carries on where it stopped. Before `play()` too: `play()` then
    /// queues the first item and waits for `resume()` to start it.
    public func pause() throws {
        defer { wakeup.signal() }
        try control.run {
            guard let sessionPauses = pausing() else { return }
            if sessionPauses { try session.pause() }
            markPaused()
            publishNowPlaying(force: true)
        }
    }

    /// `pause()`, awaited: no thread waits while the rooms answer.
    public func pause() async throws {
        defer { wakeup.signal() }
        try await control.run {
            guard let sessionPauses = pausing() else { return }
            if sessionPauses { try await session.pause() }
            markPaused()
            await publishNowPlaying(force: true)
        }
    }

    /// Whether a pause is to pause the session (not when a pending jump already did); nil when the player is
    /// paused or stopped already, which the app's pause holds as asked (`State.pauseAsked`; else
    /// `markPaused` does, once the session paused). In its turn.
    private func pausing() -> Bool? {
        state.withLock { s in
            guard s.paused || s.stopped else { return s.jump == nil }
            s.pauseAsked = true
            return nil
        }
    }

    /// The player paused: a pending jump stays paused.
    private func markPaused() {
        state.withLock { s in
            s.paused = true
            s.pauseAsked = true
            if case .jump = s.jump?.kind { s.jump?.kind = .jump(resume: false) }
        }
    }

    public func resume() throws {
        defer { wakeup.signal() }
        try control.run {
            guard resuming() else { return }
            do { try session.start() } catch { throw notStarted(error) }
            started()
            publishNowPlaying(force: true)
        }
    }

    /// `resume()`, awaited: no thread waits while the rooms answer.
    public func resume() async throws {
        defer { wakeup.signal() }
        try await control.run {
            guard resuming() else { return }
            do { try await session.start() } catch { throw notStarted(error) }
            started()
            await publishNowPlaying(force: true)
        }
    }

    /// Marks the player playing; true when the session is to start (it was paused, and no jump is pending:
    /// a pending jump starts when its audio is queued; nor is the playback's first start, until enough of it
    /// is queued). In its turn.
    private func resuming() -> Bool {
        state.withLock { s in
            defer {
                s.paused = false
                s.pauseAsked = false
                if case .jump = s.jump?.kind { s.jump?.kind = .jump(resume: true) }
            }
            return s.paused && s.jump == nil && (!s.awaitingStart || s.queuedToStart)
        }
    }

    /// `resume()` started the session: the queueing is not to start it again.
    private func started() {
        state.withLock { $0.awaitingStart = false }
    }

    /// The session did not start (no room to play on: it waits for one): the player stays paused.
    private func notStarted(_ error: any Error) -> any Error {
        state.withLock { $0.paused = true }
        return error
    }

    /// Moves to `position` seconds into item `index`, for `command`; what was queued is dropped.
    func jump(to index: Int, position: Double, for command: RemoteCommand) async -> RemoteCommandStatus {
        await control.run {
            let paused = state.withLock { $0.paused }
            if !paused, state.withLock({ $0.jump == nil }) {
                let status = await outcome(of: command) { try await session.pause() }
                guard status == .success else { return status }
            }
            state.withLock { $0.jump = Target(index: index, position: max(0, position), kind: .jump(resume: !paused)) }
            wakeup.signal()
            return .success
        }
    }

    /// Seconds into the item that is playing (or paused), and that item.
    func currentPosition() -> (Boundary, Double)? {
        guard let shown = state.withLock({ $0.shown }) else { return nil }
        return (shown, shown.position(played: session.playedFrames()))
    }

    // MARK: remote commands

    private static let logger = Logger(label: "lyre.sender")

    /// A command's status from what it did; one that failed says why in the log (the receiver is told only
    /// `commandFailed`).
    private func outcome(of command: RemoteCommand, _ body: () async throws -> Void) async -> RemoteCommandStatus {
        do {
            try await body()
            return .success
        } catch {
            Self.logger.warning("the remote command \(command) failed: \(error)")
            return .commandFailed
        }
    }

    private static let handled: [RemoteCommand] = [
        .play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack, .skipForward, .skipBackward, .changePlaybackPosition,
    ]

    private func installCommands() {
        for command in Self.handled {
            session.remoteCommands.addHandler(command) { [weak self] event async in await self?.handle(event) ?? .commandFailed }
        }
    }

    /// A receiver's command, awaited: no thread waits while the rooms answer a pause, a resume or a jump.
    func handle(_ event: RemoteCommandEvent) async -> RemoteCommandStatus {
        switch event.command {
        case .play: return await outcome(of: event.command) { try await resume() }
        case .pause: return await outcome(of: event.command) { try await pause() }
        case .togglePlayPause:
            let paused = isPaused
            return await outcome(of: event.command) { if paused { try await resume() } else { try await pause() } }
        case .stop:
            stop()
            return .success
        default: break
        }
        guard let (shown, position) = currentPosition() else { return .noSuchContent }
        switch event.command {
        case .nextTrack:
            return shown.index + 1 < items.count ? await jump(to: shown.index + 1, position: 0, for: event.command) : .noSuchContent
        case .previousTrack:
            // As media players do: restart the item unless it has only just begun.
            return await jump(to: position > 3 || shown.index == 0 ? shown.index : shown.index - 1, position: 0, for: event.command)
        case .skipForward, .skipBackward, .changePlaybackPosition:
            guard items[shown.index].source.isSeekable else { return .commandFailed }
            let target: Double =
                switch event.command {
                case .skipForward: position + (event.interval ?? 15)
                case .skipBackward: max(0, position - (event.interval ?? 15))
                default: event.position ?? 0
                }
            if let duration = shown.duration, target >= duration {
                guard event.command == .skipForward else { return .commandFailed }
                return shown.index + 1 < items.count ? await jump(to: shown.index + 1, position: 0, for: event.command) : .noSuchContent
            }
            return await jump(to: shown.index, position: target, for: event.command)
        default:
            return .commandFailed
        }
    }

    // MARK: now playing

    /// Sends the now-playing info when the item that plays has changed (or always, with `force`).
    /// In a `control` turn.
    private func publishNowPlaying(force: Bool = false) {
        guard let update = nowPlayingUpdate(force: force) else { return }
        if let artwork = update.artwork { session.bestEffort("the cover") { try session.setArtwork(artwork) } }
        session.bestEffort("now playing") { try session.setNowPlaying(update.info) }
    }

    /// `publishNowPlaying(force:)`, awaited: no thread waits while the rooms answer.
    private func publishNowPlaying(force: Bool = false) async {
        guard let update = nowPlayingUpdate(force: force) else { return }
        if let artwork = update.artwork { await session.bestEffort("the cover") { try await session.setArtwork(artwork) } }
        await session.bestEffort("now playing") { try await session.setNowPlaying(update.info) }
    }

    /// What the receivers are to be told of the item that plays: its cover when it is another item's (an
    /// `Artwork?` to send, nil when the cover stays), and its now playing; nil when the item has not changed
    /// and `force` is false. The commands the item allows are enabled here.
    private func nowPlayingUpdate(force: Bool) -> (artwork: Artwork??, info: NowPlayingInfo)? {
        let played = session.playedFrames()
        let (boundary, changed, sendArtwork) = state.withLock { s -> (Boundary?, Bool, Bool) in
            guard let boundary = s.boundaries.last(where: { $0.frame <= played }) ?? s.boundaries.first else { return (nil, false, false) }
            let changed = boundary.id != s.shown?.id
            s.shown = boundary
            let sendArtwork = s.artworkIndex != boundary.index
            if sendArtwork { s.artworkIndex = boundary.index }
            return (boundary, changed, sendArtwork)
        }
        guard let boundary, changed || force else { return nil }
        let item = items[boundary.index]
        var artwork: Artwork?? = nil
        if sendArtwork {
            let previous = boundary.index > 0 ? items[boundary.index - 1].artwork : nil
            if boundary.index == 0 || item.artwork != previous { artwork = .some(item.artwork) }
            session.remoteCommands.setEnabled([
                .nextTrack: boundary.index + 1 < items.count,
                .skipForward: item.source.isSeekable, .skipBackward: item.source.isSeekable,
                .changePlaybackPosition: item.source.isSeekable,
            ])
        }
        let metadata = item.metadata
        var info = NowPlayingInfo(
            title: metadata.title ?? item.source.description, artist: metadata.artist, album: metadata.album,
            albumArtist: metadata.albumArtist, genre: metadata.genre, trackNumber: metadata.trackNumber,
            trackCount: metadata.trackCount, duration: boundary.duration, queueIndex: boundary.index, queueCount: items.count)
        if !isPaused, let start = session.playTime(ofFrame: boundary.frame) {
            info.elapsed = boundary.position
            info.anchor = start
            info.rate = 1
        } else {
            info.elapsed = boundary.position(played: played)
            info.anchor = HostClock.now()
            info.rate = 0
        }
        return (artwork, info)
    }

    private func checkTransition() {
        let force = state.withLock { s in defer { s.showPaused = false }; return s.showPaused }
        guard !state.withLock({ $0.awaitingStart }) else { return }
        control.run { publishNowPlaying(force: force) }
    }

    /// When the next queued item starts to play (sender clock), for `checkTransition`; nil while paused.
    private func nextTransition() -> UInt64? {
        let played = session.playedFrames()
        guard let next = state.withLock({ $0.boundaries.first { $0.frame > played } }) else { return nil }
        return session.playTime(ofFrame: next.frame)
    }

    // MARK: playing

    /// Plays the queue; `progress` is called about 5 times a second from its thread. A request that fails
    /// because the receiver went away ends it as `.interrupted`, not as an error. Cancelling the task that
    /// awaits it stops the player, as `stop()` does: unless the queue had already ended or been interrupted,
    /// it returns `.stopped` once the rooms are torn down.
    ///
    /// The queue plays on a thread of its own, and no task waits on a thread meanwhile. A thread, not a task:
    /// playing decodes (FFmpeg's calls block) and waits while the session holds a second of audio, for as long
    /// as the queue plays, which would hold one of the few threads Swift's tasks share.
    @discardableResult
    public func play(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Outcome {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { played in
                do throws(DedicatedThread.Failure) {
                    try DedicatedThread.detach("lyre-queue") { [self] in
                        played.resume(with: Result { try playOnThisThread(progress: progress) })
                    }
                } catch {
                    played.resume(throwing: LyreSenderError.failed(error.description))
                }
            }
        } onCancel: {
            stop()
        }
    }

    private func playOnThisThread(progress: (Progress) -> Void) throws -> Outcome {
        do {
            return try playQueue(progress: progress)
        } catch {
            if let reason = awaitInterruption() {
                session.close()
                return .interrupted(reason)
            }
            throw error
        }
    }

    /// The route change that ended the session, if one did: the session's reader reports it as the
    /// connection drops, which can be a moment after a request fails or `enqueue` refuses.
    private func awaitInterruption() -> OutputRouteChangeReason? {
        let deadline = HostClock.now() + 500_000_000
        while true {
            if let reason = state.withLock({ $0.interruption }) { return reason }
            if HostClock.now() > deadline { return nil }
            wakeup.wait(until: deadline)
        }
    }

    private func playQueue(progress: (Progress) -> Void) throws -> Outcome {
        if let audioSession {
            guard audioSession.destination(receiverChosen: true) == .receivers else {
                session.close()
                return .interrupted(.categoryChange)
            }
            // A category that went local and back before the playback began stops nothing.
            state.withLock { s in
                guard s.interruption == .categoryChange else { return }
                s.interruption = nil
                s.stopped = s.stopAsked
                s.paused = s.pauseAsked
            }
        }
        installCommands()
        var target = Target(index: 0, position: 0, kind: .start)
        var nextReport: UInt64 = 0
        func report() {
            let now = HostClock.now()
            guard now >= nextReport else { return }
            nextReport = now + 200_000_000
            guard let (shown, position) = currentPosition() else { return }
            let item = items[shown.index]
            progress(Progress(index: shown.index, title: item.metadata.title ?? item.source.description, artist: item.metadata.artist,
                              elapsed: position, duration: shown.duration, paused: isPaused))
        }
        /// Waits until `done` holds, watching for item changes; false when a jump or stop came first. It
        /// sleeps until something can have changed: a command, fewer than `queueBelow` frames queued, the
        /// next progress report or item change, or `doneAt` (sender clock), when `done` turns true by itself.
        func wait(until done: () -> Bool, queueBelow: Int? = nil, doneAt: () -> UInt64? = { nil }) -> Bool {
            while true {
                if state.withLock({ $0.stopped || $0.jump != nil }) { return false }
                if done() { return true }
                checkTransition()
                report()
                if let queueBelow { session.whenQueued(below: queueBelow) { [wakeup] in wakeup.signal() } }
                var deadline = nextReport
                if let next = nextTransition() { deadline = min(deadline, next) }
                if let at = doneAt() { deadline = min(deadline, at + 1_000_000) }
                // A deadline that passed while what it waits for still lags (a source that fell behind
                // moves the schedule on) wakes it at most 100 times a second, never in a spin.
                wakeup.wait(until: max(deadline, HostClock.now() + 10_000_000))
            }
        }

        queue: while !state.withLock({ $0.stopped }) {
            if case .jump = target.kind { session.dropQueued() }
            guard target.index < items.count else {
                // The end of the queue: wait until everything has played (a command may still move back).
                session.padToPacket()
                if wait(until: { !isPaused && session.playedFrames() >= session.enqueuedFrames },
                        doneAt: { session.playTime(ofFrame: session.enqueuedFrames) }) { break queue }
                if let jump = takeJump() { target = jump; continue queue }
                break queue
            }
            let item = items[target.index]
            var source = try StereoReader(item.source.open())
            var position = target.position
            if position > 0, !source.seek(toSeconds: position) { position = 0 }
            let duration = source.duration
            state.withLock { s in
                s.boundaries.append(Boundary(id: s.nextBoundaryID, frame: session.enqueuedFrames, position: position,
                                             index: target.index, duration: duration))
                s.nextBoundaryID += 1
                if s.boundaries.count > 16 { s.boundaries.removeFirst() }
            }
            if case .jump(resume: false) = target.kind { control.run { publishNowPlaying(force: true) } }
            while true {
                if let jump = takeJump() { target = jump; continue queue }
                if state.withLock({ $0.stopped }) { break queue }
                guard wait(until: { session.queuedFrames < 48000 }, queueBelow: 48000) else { continue }
                let stereo = source.read()
                if !stereo.isEmpty {
                    guard session.enqueue(stereo) else { break queue }
                }
                // Start once enough is queued that the first frames, sent `lead` early, do not outrun the
                // decoder while the RECORD and now-playing requests are answered.
                let queuedEnough = session.queuedFrames >= Self.startQueue || source.sourceEnded
                if queuedEnough, session.queuedFrames > 0, state.withLock({ s in
                    if s.awaitingStart { s.queuedToStart = true }
                    return s.awaitingStart
                }) {
                    try control.run {
                        // Not when paused (`resume()` starts it then) or started by a `resume()` already.
                        guard state.withLock({ $0.awaitingStart && $0.jump == nil && !$0.paused }) else { return }
                        do {
                            try session.start()
                        } catch where session.isWaitingForRooms {
                            // The rooms went away before it started: paused, `resume()` starts it when one is back.
                            state.withLock { $0.paused = true; $0.awaitingStart = false }
                            return
                        }
                        state.withLock { $0.awaitingStart = false }
                        publishNowPlaying(force: true)
                    }
                }
                report()
                if source.isAtEnd { break }
            }
            target = Target(index: target.index + 1, position: 0, kind: .natural)
        }
        if session.hasEnded, !state.withLock({ $0.stopped }) { _ = awaitInterruption() }
        let outcome = state.withLock { s -> Outcome in
            if let reason = s.interruption { return .interrupted(reason) }
            return s.stopped ? .stopped : .finished
        }
        if outcome == .finished { session.finish() } else { session.close() }
        return outcome
    }

    /// Frames queued before `start()`: 300 ms.
    static let startQueue = 14_400

    /// The pending jump, taken; whether its start awaits its audio is set in the same step, so that a
    /// `resume()` never sees the jump gone and the start not yet awaited.
    private func takeJump() -> Target? {
        state.withLock { s in
            defer { s.jump = nil }
            if case .jump(let resume) = s.jump?.kind {
                s.awaitingStart = resume
                s.queuedToStart = false
            }
            return s.jump
        }
    }
}
