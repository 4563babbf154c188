import LyreWire
import Synchronization
import Testing

@testable import LyreReceiver
@testable import LyreSender

/// What a receiver asks of its sender on the session's connection (streaming.md §7, now-playing.md §4), in
/// process: each remote command the receiver relays reaches the sender's `RemoteCommandCenter` as it was
/// given, the handler's answer comes back as the outcome the receiver tells whoever asked, and a session's end
/// reaches the sender as the route change it reports.
@Suite struct ReceiverNoticeTests {
    static let session = "C0FFEE"

    /// The request the receiver sends for `notice`, as the sender's connection reads it.
    static func sent(_ notice: ReceiverNotice, session: String? = Self.session) -> RTSPMessage {
        let request = notice.request(session: session)
        return RTSPMessage.request("SET_PARAMETER", uri: "rtsp://10.77.0.2:7700/", cseq: 1, headers: request.headers, body: request.body)
    }

    /// Every command with the arguments it takes, as the control socket and MPRIS make them.
    static let events: [RemoteCommandEvent] = [
        .init(.play), .init(.pause), .init(.stop), .init(.togglePlayPause), .init(.nextTrack), .init(.previousTrack),
        .init(.skipForward, interval: 15), .init(.skipBackward, interval: 7.5), .init(.seekForward, phase: .begin), .init(.seekBackward, phase: .end),
        .init(.changePlaybackPosition, position: 61.25), .init(.changePlaybackRate, rate: 1.5), .init(.changeRepeatMode, repeatMode: .one),
        .init(.changeShuffleMode, shuffleMode: .items), .init(.volumeUp), .init(.volumeDown), .init(.changeVolume, volume: -144),
    ]

    @Test func everyCommandReachesTheSendersHandlerAndItsAnswerComesBack() async throws {
        #expect(Set(Self.events.map(\.command)) == Set(RemoteCommand.allCases), "every command is tried")
        let center = RemoteCommandCenter()
        let heard = Mutex<[RemoteCommandEvent]>([])
        // Each handler answers by the command's place in the list, so every status is seen.
        let statuses = RemoteCommandStatus.allCases
        // Every other handler is awaited: both kinds are answered alike.
        for (index, event) in Self.events.enumerated() {
            if index % 2 == 0 {
                center.addHandler(event.command) { got in
                    heard.withLock { $0.append(got) }
                    return statuses[index % statuses.count]
                }
            } else {
                center.addHandler(event.command) { got async in
                    await Task.yield()
                    heard.withLock { $0.append(got) }
                    return statuses[index % statuses.count]
                }
            }
        }
        for (index, event) in Self.events.enumerated() {
            // The sender's side, as `StreamSession.receiverRequest` answers.
            let read = ReceiverNotice.read(Self.sent(.command(event)), session: Self.session)
            guard case .success(.command(let got)) = read else { Issue.record("\(event.command): \(read)"); continue }
            #expect(got == event)
            let answer = ReceiverNotice.answer(await center.handle(got))
            // The receiver's side, as `RTSPConnectionHandler.relay` tells whoever asked.
            let response = RTSPMessage.response(answer.status, cseq: 1, headers: answer.headers)
            let outcome = RTSPConnectionHandler.outcome(of: response, command: event.command, sender: "Kitchen laptop")
            let expected = statuses[index % statuses.count]
            #expect(outcome.kind.rawValue == expected.rawValue, "\(event.command)")
            #expect(outcome.message == (expected == .success ? "ok" : "'Kitchen laptop' answered \(expected.rawValue) to \(event.command.rawValue)"))
        }
        #expect(heard.withLock { $0 } == Self.events)
        // A command the sender has no handler for, or disabled, is answered as such.
        center.setEnabled(.play, false)
        let answer = ReceiverNotice.answer(await center.handle(RemoteCommandEvent(.play)))
        let outcome = RTSPConnectionHandler.outcome(of: .response(answer.status, cseq: 1, headers: answer.headers), command: .play, sender: "S")
        #expect(answer.status == 403 && outcome.kind == .disabled)
    }

    @Test func onlyTheRoomsOwnSessionCommandsIt() {
        let play = ReceiverNotice.command(RemoteCommandEvent(.play))
        #expect(ReceiverNotice.read(Self.sent(play, session: "OTHER"), session: Self.session) == .failure(.init(status: 454, reason: "not this session")))
        #expect(ReceiverNotice.read(Self.sent(play, session: nil), session: Self.session) == .failure(.init(status: 454, reason: "not this session")))
        // The session header's parameters are not part of its id.
        #expect(ReceiverNotice.read(Self.sent(play, session: Self.session + ";timeout=60"), session: Self.session) == .success(play))
    }

    @Test func whatASenderDoesNotTakeIsRefusedWithItsReason() {
        func asked(_ body: String) -> Result<ReceiverNotice, ReceiverNotice.Refusal> {
            let request = RTSPMessage.request("SET_PARAMETER", uri: "/", cseq: 1, headers: [("Session", Self.session)], body: Array(body.utf8))
            return ReceiverNotice.read(request, session: Self.session)
        }
        #expect(asked("volume: -10\r\n") == .failure(.init(status: 451, reason: "a sender takes session-end and remote-command")))
        guard case .failure(let unknown) = asked("remote-command: dance\r\n") else { Issue.record("unknown command taken"); return }
        #expect(unknown.status == 451 && unknown.reason.contains("dance"))
        guard case .failure(let range) = asked("remote-command: changeVolume\r\nvolume: 6\r\n") else { Issue.record("out of range taken"); return }
        #expect(range == .init(status: 451, reason: "changeVolume needs a volume of -30 to 0 dB, or -144 for mute"))
    }

    @Test func aSessionsEndReachesTheSenderAsTheRouteChangeItReports() {
        // Taken over: who took it and where the output stopped, so that the sender resumes there.
        let over = ReceiverNotice.SessionEnd(.takenOver, takenOverBy: "Bob", stoppedAt: 4_000_000_123)
        let request = Self.sent(.sessionEnd(over), session: nil)
        #expect(request.headers["Session"] == nil)
        #expect(request.bodyText == "session-end: taken-over\r\n")
        #expect(ReceiverNotice.read(request, session: Self.session) == .success(.sessionEnd(over)))
        #expect(OutputRouteChangeReason(over) == .takenOver(by: "Bob"))
        // The route change each reason is: a receiver that stopped or gave up on the sender is gone (the sender
        // may wait for it); one that unpaired the sender refuses it until it pairs again.
        let reported: [ReceiverNotice.SessionEnd.Reason: OutputRouteChangeReason] = [
            .shutdown: .oldDeviceUnavailable, .timeout: .oldDeviceUnavailable, .unpaired: .unpaired]
        for reason in [ReceiverNotice.SessionEnd.Reason.shutdown, .timeout, .unpaired] {
            let request = Self.sent(.sessionEnd(.init(reason)))
            #expect(request.bodyText == "session-end: \(reason.rawValue)\r\n")
            guard case .success(.sessionEnd(let end)) = ReceiverNotice.read(request, session: nil) else {
                Issue.record("\(reason)"); continue
            }
            #expect(end.known == reason && end.takenOverBy == nil && end.stoppedAt == nil)
            #expect(OutputRouteChangeReason(end) == reported[reason], "\(reason)")
        }
        // The receiver's own reasons, each sent as the protocol names it.
        #expect(SessionEnd.takenOver(by: "Bob").notice == .takenOver)
        #expect(SessionEnd.shutdown.notice == .shutdown && SessionEnd.timeout.notice == .timeout)
        #expect(SessionEnd.unpaired.notice == .unpaired)
        #expect(SessionEnd.teardown.notice == nil && SessionEnd.connectionClosed.notice == nil)
        // A reason this sender does not know is kept: it reads as the receiver gone.
        let future = RTSPMessage.request("SET_PARAMETER", uri: "/", cseq: 1, headers: [], body: Array("session-end: asleep\r\n".utf8))
        guard case .success(.sessionEnd(let end)) = ReceiverNotice.read(future, session: Self.session) else { Issue.record("unknown reason"); return }
        #expect(end.reason == "asleep" && end.known == nil)
        #expect(OutputRouteChangeReason(end) == .oldDeviceUnavailable)
        // As a log line says them (`lyre sink`'s "stream to … ended: …"), not as Swift prints an enum.
        #expect(["\(OutputRouteChangeReason.takenOver(by: "Bob"))", "\(OutputRouteChangeReason.takenOver(by: nil))",
                 "\(OutputRouteChangeReason.unpaired)", "\(OutputRouteChangeReason.oldDeviceUnavailable)"]
                == ["'Bob' took the receiver over", "another sender took the receiver over", "the receiver unpaired this sender",
                    "the receiver is no longer available"])
    }

    @Test func anAnswerWithoutCommandStatusIsReadFromItsRTSPStatus() {
        let read = { (status: Int, headers: [(String, String)]) in ReceiverNotice.status(of: .response(status, cseq: 1, headers: headers)) }
        #expect(read(200, []).status == .success)
        #expect(read(404, []).status == .noSuchContent)
        #expect(read(403, []).status == .disabled)
        #expect(read(451, [("Lyre-Error", "no")]) == (.commandFailed, "no"))
        #expect(read(500, [("Lyre-Command-Status", "noSuchContent")]).status == .noSuchContent)
    }
}
