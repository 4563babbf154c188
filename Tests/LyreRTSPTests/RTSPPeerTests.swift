import LyreRTSP
import LyreWire
import NIOCore
import NIOEmbedded
import Testing

/// The RTSP peer, sans I/O: numbering, matching, timeouts, answering once, the limit on the peer's requests.
struct RTSPPeerStateMachineTests {
    typealias Machine = RTSPPeerStateMachine<String>

    @Test func requestsAreNumberedAndResponsesMatchedByCSeqInAnyOrder() throws {
        var machine = Machine()
        guard case .write(let first) = machine.request("OPTIONS", uri: "*", token: "a", now: 0, timeout: 5),
            case .write(let second) = machine.request("SETUP", uri: "rtsp://h/", headers: [("Transport", "x")], token: "b", now: 0, timeout: 5)
        else { Issue.record("no write"); return }
        #expect(first.cseq == 1 && second.cseq == 2)
        #expect(first.headers.fields.first?.name == "CSeq")
        #expect(second.headers["Transport"] == "x")
        #expect(machine.waiting == 2)
        #expect(machine.received(.response(200, cseq: 2)) == [.complete("b", .response(200, cseq: 2))])
        #expect(machine.received(.response(454, cseq: 1)) == [.complete("a", .response(454, cseq: 1))])
        #expect(machine.waiting == 0)
        // The same response again, or one to nothing asked: dropped, for the driver to count.
        #expect(machine.received(.response(200, cseq: 1)) == [.drop(.unmatchedResponse(cseq: 1))])
        #expect(machine.received(.response(200, cseq: nil)) == [.drop(.unmatchedResponse(cseq: nil))])
    }

    @Test func requestsTimeOutOnTheGivenClockAndLateResponsesAreDropped() {
        var machine = Machine()
        _ = machine.request("RECORD", uri: "u", token: "slow", now: 1_000, timeout: 2)
        _ = machine.request("FLUSH", uri: "u", token: "later", now: 1_000_000_000, timeout: 2)
        #expect(machine.nextDeadline == 2_000_001_000)
        #expect(machine.expire(now: 2_000_000_999).isEmpty)
        #expect(machine.expire(now: 2_000_001_000) == [.fail("slow", .timeout(method: "RECORD", seconds: 2))])
        #expect(machine.nextDeadline == 3_000_000_000)
        #expect(machine.received(.response(200, cseq: 1)) == [.drop(.unmatchedResponse(cseq: 1))])
        #expect("\(Machine.Failure.timeout(method: "RECORD", seconds: 2))" == "no answer to RECORD within 2 s")
    }

    @Test func closingFailsWhatWaitsAndWhatComesAfter() {
        var machine = Machine()
        _ = machine.request("A", uri: "u", token: "1", now: 0, timeout: 5)
        _ = machine.request("B", uri: "u", token: "2", now: 0, timeout: 5)
        #expect(machine.closed() == [.fail("1", .closed), .fail("2", .closed)])
        #expect(machine.request("C", uri: "u", token: "3", now: 0, timeout: 5) == .fail("3", .closed))
        #expect(machine.nextDeadline == nil)
    }

    @Test func thePeersRequestsAreDeliveredAndAnsweredOnce() {
        var machine = Machine()
        let request = RTSPMessage.request("SET_PARAMETER", uri: "u", cseq: 7)
        #expect(machine.received(request) == [.deliver(request)])
        #expect(machine.answer(.response(200, cseq: 7)) == .write(.response(200, cseq: 7)))
        #expect(machine.answer(.response(500, cseq: 7)) == nil)
        #expect(machine.answer(.response(200, cseq: 8)) == nil)
        // Input without a CSeq cannot be answered in kind: 400, and counted.
        #expect(machine.received(RTSPMessage(startLine: .request(method: "OPTIONS", uri: "*")))
                == [.drop(.requestWithoutCSeq), .write(.response(400, cseq: nil))])
        // The peer's and this end's CSeq are separate counters: a request numbered 1 by each is no clash.
        _ = machine.request("X", uri: "u", token: "x", now: 0, timeout: 1)
        let theirs = RTSPMessage.request("Y", uri: "u", cseq: 1)
        #expect(machine.received(theirs) == [.deliver(theirs)])
        #expect(machine.received(.response(200, cseq: 1)) == [.complete("x", .response(200, cseq: 1))])
    }

    /// A message whose body was skipped for its size: a request is still answered once (413); a response
    /// fails the request it answers.
    @Test func oversizedMessagesAreAnsweredOrFail() {
        var machine = Machine()
        let head = RTSPMessage.request("SET_PARAMETER", uri: "u", cseq: 3)
        #expect(machine.receivedOversized(head, length: 9_000_000) == [.deliverOversized(head, length: 9_000_000)])
        #expect(machine.answer(.response(413, cseq: 3)) == .write(.response(413, cseq: 3)))
        _ = machine.request("GET_PARAMETER", uri: "u", token: "big", now: 0, timeout: 5)
        #expect(machine.receivedOversized(.response(200, cseq: 1), length: 9_000_000) == [.fail("big", .oversizedResponse(length: 9_000_000))])
        #expect(machine.receivedOversized(.response(200, cseq: 1), length: 9_000_000) == [.drop(.unmatchedResponse(cseq: 1))])
    }

    @Test func thePeerMayNotPileUpUnansweredRequests() {
        var machine = Machine(maximumUnanswered: 2)
        for cseq in 1...2 { #expect(machine.received(.request("GET_PARAMETER", uri: "u", cseq: cseq)).count == 1) }
        let refused = machine.received(.request("GET_PARAMETER", uri: "u", cseq: 3))
        #expect(refused.first == .drop(.tooManyRequests))
        guard case .write(let answer) = refused.last else { Issue.record("no answer"); return }
        #expect(answer.status == 503 && answer.cseq == 3)
        // A CSeq already waiting is not taken twice.
        _ = machine.answer(.response(200, cseq: 1))
        #expect(machine.received(.request("GET_PARAMETER", uri: "u", cseq: 2)).first == .drop(.tooManyRequests))
        #expect(machine.received(.request("GET_PARAMETER", uri: "u", cseq: 4)).count == 1)
    }

    /// As streaming.md §1 has it: by default a peer may have 32 requests unanswered; the 33rd is answered 503
    /// with `Lyre-Error`.
    @Test func theDefaultLimitIs32Unanswered() {
        var machine = Machine()
        for cseq in 1...32 { #expect(machine.received(.request("GET_PARAMETER", uri: "u", cseq: cseq)) == [.deliver(.request("GET_PARAMETER", uri: "u", cseq: cseq))]) }
        let refused = machine.received(.request("GET_PARAMETER", uri: "u", cseq: 33))
        guard case .write(let answer) = refused.last else { Issue.record("no answer: \(refused)"); return }
        #expect(answer.status == 503 && answer.headers["Lyre-Error"] != nil, "\(answer)")
    }
}

/// The NIO handler that drives the machine, over `EmbeddedChannel`: bytes in and out, promises, timers.
struct RTSPPeerHandlerTests {
    /// Collects what the handler passes up.
    final class Recorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = RTSPFrame
        var frames: [RTSPFrame] = []
        var dropped: [RTSPPeerDropped] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { frames.append(unwrapInboundIn(data)) }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? RTSPPeerDropped { dropped.append(event) }
        }
    }

    func makeChannel() throws -> (EmbeddedChannel, Recorder) {
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPFrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(RTSPPeerHandler(maximumUnanswered: 4))
        try channel.pipeline.syncOperations.addHandler(recorder)
        return (channel, recorder)
    }

    func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) { text += buffer.readString(length: buffer.readableBytes) ?? "" }
        return text
    }

    func feed(_ channel: EmbeddedChannel, _ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    @Test func bothDirectionsOnOneConnection() throws {
        let (channel, recorder) = try makeChannel()
        let future = channel.rtspRequest(RTSPRequest("OPTIONS", uri: "*"))
        #expect(try written(channel) == "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n")
        // The peer's own request, numbered 1 too, arrives before our response; then the response, split.
        try feed(channel, "SET_PARAMETER rtsp://s/ RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 5\r\n\r\nab")
        try feed(channel, "c\r\nRTSP/1.0 200 OK\r\nCSe")
        #expect(recorder.frames.count == 1)
        guard case .message(let request) = recorder.frames.first else { Issue.record("no request"); return }
        #expect(request.method == "SET_PARAMETER" && request.bodyText == "abc\r\n")
        let response = Box<RTSPMessage?>(nil)
        future.whenSuccess { response.value = $0 }
        #expect(response.value == nil)
        try feed(channel, "q: 1\r\nPublic: OPTIONS\r\n\r\n")
        #expect(response.value?.status == 200 && response.value?.headers["Public"] == "OPTIONS")
        // The answer goes out once.
        channel.write(RTSPOutbound.response(.response(200, cseq: 1)), promise: nil)
        channel.writeAndFlush(RTSPOutbound.response(.response(500, cseq: 1)), promise: nil)
        #expect(try written(channel) == "RTSP/1.0 200 OK\r\nCSeq: 1\r\n\r\n")
        // A response to nothing: counted, not passed up.
        try feed(channel, "RTSP/1.0 200 OK\r\nCSeq: 9\r\n\r\n")
        #expect(recorder.frames.count == 1)
        #expect(recorder.dropped == [RTSPPeerDropped(drop: .unmatchedResponse(cseq: 9))])
        // Interleaved frames pass through.
        try channel.writeInbound(ByteBuffer(bytes: [0x24, 0, 0, 2, 0xAA, 0xBB]))
        #expect(recorder.frames.last == .interleaved(channel: 0, payload: [0xAA, 0xBB]))
        _ = try channel.finish()
    }

    @Test func aRequestTimesOutOnTheLoopsClock() throws {
        let (channel, _) = try makeChannel()
        let future = channel.rtspRequest(RTSPRequest("RECORD", uri: "u", timeout: 2))
        let failure = Box<Error?>(nil)
        future.whenFailure { failure.value = $0 }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(failure.value == nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(failure.value as? RTSPPeerStateMachine<Int>.Failure == .timeout(method: "RECORD", seconds: 2))
        _ = try channel.finish()
    }

    /// A request given no timeout waits 5 s (streaming.md §1).
    @Test func aRequestWaitsFiveSecondsUnlessToldOtherwise() throws {
        let (channel, _) = try makeChannel()
        let future = channel.rtspRequest(RTSPRequest("GET_PARAMETER", uri: "u"))
        let failure = Box<Error?>(nil)
        future.whenFailure { failure.value = $0 }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(failure.value == nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(failure.value as? RTSPPeerStateMachine<Int>.Failure == .timeout(method: "GET_PARAMETER", seconds: 5))
        _ = try channel.finish()
    }

    @Test func closingFailsWaitingRequestsAndLaterOnes() throws {
        let (channel, _) = try makeChannel()
        let waiting = channel.rtspRequest(RTSPRequest("GET_PARAMETER", uri: "u"))
        let failures = Box<[Error]>([])
        waiting.whenFailure { failures.value.append($0) }
        _ = try channel.finish(acceptAlreadyClosed: true)
        #expect(failures.value.count == 1)
        channel.rtspRequest(RTSPRequest("TEARDOWN", uri: "u")).whenFailure { failures.value.append($0) }
        #expect(failures.value.count == 2)
        #expect(failures.value.allSatisfy { $0 as? RTSPPeerStateMachine<Int>.Failure == .closed })
    }

    @Test func tooManyUnansweredRequestsFromThePeerAreRefused() throws {
        let (channel, recorder) = try makeChannel()
        for cseq in 1...5 { try feed(channel, "GET_PARAMETER u RTSP/1.0\r\nCSeq: \(cseq)\r\n\r\n") }
        #expect(recorder.frames.count == 4)
        #expect(try written(channel).hasPrefix("RTSP/1.0 503 Service Unavailable\r\nCSeq: 5\r\n"))
        #expect(recorder.dropped == [RTSPPeerDropped(drop: .tooManyRequests)])
        _ = try channel.finish()
    }
}

/// A value the embedded loop's callbacks set (they run on the test's own thread).
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
