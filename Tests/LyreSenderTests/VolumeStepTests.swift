@testable import LyreSender
import Testing

/// `volumeUp` / `volumeDown` as the sender applies them (now-playing.md §4.3).
struct VolumeStepTests {
    /// 1/16 of −30…0 dB per step; a step below −30 dB mutes (−144), and `volumeUp` from mute is −30.
    @Test func sixteenStepsSpanTheRangeAndOneMoreMutes() {
        var level = 0.0
        for step in 1...16 {
            level = StreamSession.stepped(level, up: false)
            #expect(abs(level - (-1.875 * Double(step))) < 1e-9, "step \(step): \(level)")
        }
        #expect(level == -30)
        #expect(StreamSession.stepped(-30, up: false) == -144)
        #expect(StreamSession.stepped(-29, up: false) == -144)
        #expect(StreamSession.stepped(-144, up: false) == -144)
        #expect(StreamSession.stepped(-144, up: true) == -30)
        for _ in 1...16 { level = StreamSession.stepped(level, up: true) }
        #expect(level == 0)
        #expect(StreamSession.stepped(0, up: true) == 0)
        #expect(StreamSession.stepped(-1, up: true) == 0)
    }
}
