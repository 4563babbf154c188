import LyreSender
import Testing

/// The sender's settings as README and streaming.md §4.3 state them.
struct StreamConfigurationTests {
    func configuration(latency: Int, frame: Int = 20, fec: StreamConfiguration.FECMode = .auto) -> StreamConfiguration {
        var configuration = StreamConfiguration()
        configuration.latencyMilliseconds = latency
        configuration.frameMilliseconds = frame
        configuration.fec = fec
        return configuration
    }

    /// `--fec auto` (the default) sends parity only under 100 ms of latency; at `--latency 20` (10 ms frames)
    /// one parity packet per 2 media packets (README: "50 % more bandwidth").
    @Test func autoSendsFECOnlyUnder100Milliseconds() {
        #expect(StreamConfiguration().fec == .auto)
        #expect(configuration(latency: 250).fecRow == nil)
        #expect(configuration(latency: 100).fecRow == nil)
        #expect(configuration(latency: 20, frame: 10).fecRow == 2)
        #expect(configuration(latency: 99, frame: 20).fecRow != nil)
    }

    /// streaming.md §4.3's figures: N = (latency + send-ahead) ÷ (2 × frame), from 2 to 10: N = 2 at 20 ms
    /// with 10 or 20 ms frames, N = 3 at 80 ms and 20 ms frames, and the cap of 10 at 99 ms and 2.5 ms frames.
    @Test func theRowLengthIsTheSpecsFormula() {
        #expect(configuration(latency: 20, frame: 10).fecRow == 2)
        #expect(configuration(latency: 20, frame: 20).fecRow == 2)
        #expect(configuration(latency: 80, frame: 20).fecRow == 3)
        #expect(configuration(latency: 99, frame: 10).fecRow == 7)  // (99 + 49) / 20
        #expect(configuration(latency: 99, frame: 5).fecRow == 10)  // (99 + 49) / 10 = 14, capped
    }

    /// `--fec off` sends none at any latency; `--fec N` sends one per N packets at any latency.
    @Test func offAndAFixedRowAreKept() {
        #expect(configuration(latency: 20, frame: 10, fec: .off).fecRow == nil)
        #expect(configuration(latency: 250, fec: .row(4)).fecRow == 4)
    }

    /// A file's lead is half the latency, at most 100 ms; a live source's is its own.
    @Test func theLeadIsHalfTheLatencyAtMost100Milliseconds() {
        #expect(configuration(latency: 20).leadMilliseconds == 10)
        #expect(configuration(latency: 250).leadMilliseconds == 100)
        var live = configuration(latency: 250)
        live.liveLeadMilliseconds = 0
        #expect(live.leadMilliseconds == 0)
    }

    /// A live source's slot waits for late audio half the latency (it can still play then); a file's passes at
    /// once, as its audio running dry is the app's pause.
    @Test func onlyALiveSourceWaitsForLateAudioHalfTheLatency() {
        #expect(configuration(latency: 250).lateAudioWaitMilliseconds == 0)
        var live = configuration(latency: 250)
        live.liveLeadMilliseconds = 0
        #expect(live.lateAudioWaitMilliseconds == 125)
    }
}

extension StreamConfigurationTests {
    /// streaming.md §4.3: under 50 ms of latency `lyre play` sends 10 ms frames unless told, under 20 ms 5 ms
    /// frames, else 20 ms; at 10 ms an FEC row is two 5 ms frames.
    @Test func underFiftyMillisecondsTheFrameIs10Milliseconds() {
        #expect(StreamConfiguration.defaultFrameMilliseconds(latency: 10) == 5)
        #expect(StreamConfiguration.defaultFrameMilliseconds(latency: 19) == 5)
        #expect(configuration(latency: 10, frame: 5).fecRow == 2)
        #expect(StreamConfiguration.defaultFrameMilliseconds(latency: 20) == 10)
        #expect(StreamConfiguration.defaultFrameMilliseconds(latency: 49) == 10)
        #expect(StreamConfiguration.defaultFrameMilliseconds(latency: 50) == 20)
        #expect(StreamConfiguration.defaultFrameMilliseconds(latency: 250) == 20)
    }
}
