import LyreAudio
import Testing

/// Where an ALSA output's presentation time comes from (issue 9): the device's timestamp of its pointer plus
/// the delay it gave with it, when the timestamp is usable.
struct ALSAPresentationTests {
    @Test func theDeviceTimestampPlusItsDelay() {
        // Pointer stamped 3 ms before the read, 960 frames (20 ms) queued then: presented 17 ms after the read,
        // where snd_pcm_delay at the read would say 20 ms.
        let now: UInt64 = 10_000_000_000
        #expect(ALSAOutput.presentationTime(now: now, deviceTimestamp: now - 3_000_000, delayFrames: 960) == now + 17_000_000)
        #expect(ALSAOutput.presentationTime(now: now, deviceTimestamp: now, delayFrames: -5) == now)
    }

    @Test(arguments: [UInt64(0), 8_000_000_000, 10_000_000_001])
    func noTimestampAStaleOneOrOneFromTheFutureIsNotUsed(stamp: UInt64) {
        #expect(ALSAOutput.presentationTime(now: 10_000_000_000, deviceTimestamp: stamp, delayFrames: 960) == nil)
    }
}
