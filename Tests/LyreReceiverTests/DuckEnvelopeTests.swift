import Foundation
import LyreReceiver
import Testing

/// The ducking of streaming.md §7 as a function of the announcement's position: its figures, its continuity,
/// and that two rooms whose blocks fall differently lower the music by the same dB at the same sample.
struct DuckEnvelopeTests {
    let envelope = DuckEnvelope()

    @Test func theMusicIsDownByTheFirstSampleAndBackAfterTheRelease() {
        #expect(envelope.depthDB == -15)
        #expect(envelope.decibels(at: -2401, end: nil) == 0)
        #expect(envelope.decibels(at: -1200, end: nil) == -7.5)
        #expect(envelope.decibels(at: 0, end: nil) == -15)
        // While the end is not known, it stays down.
        #expect(envelope.decibels(at: 10 * 48000, end: nil) == -15)
        #expect(envelope.decibels(at: 48000, end: 48000) == -15)
        #expect(envelope.decibels(at: 48000 + 7200, end: 48000) == -7.5)
        #expect(envelope.decibels(at: 48000 + 14400, end: 48000) == 0)
        #expect(!envelope.isReleased(at: 48000 + 14399, end: 48000))
        #expect(envelope.isReleased(at: 48000 + 14400, end: 48000))
        #expect(!envelope.isReleased(at: 10 * 48000, end: nil))
    }

    /// No step anywhere: from one frame to the next the level moves by at most the steeper ramp's step
    /// (15 dB over 2400 frames), also for an announcement that ends before the ramp down is over.
    @Test func noFrameStepsLikeAClick() {
        let steepest = 15.0 / 2400 + 1e-9
        for end: Int64? in [nil, 48000, 600, 0] {
            var last = envelope.decibels(at: -5000, end: end)
            var steps = 0
            for position in Int64(-4999)...Int64(70000) {
                let db = envelope.decibels(at: position, end: end)
                if abs(db - last) > steepest { steps += 1 }
                last = db
            }
            #expect(steps == 0, "\(steps) steps, end \(String(describing: end))")
            // Back up once the end is known; down for as long as it is not.
            #expect(last == (end == nil ? -15 : 0))
        }
    }

    /// Two rooms render in blocks of their own size and phase; the gains they give each announcement frame
    /// are the same.
    @Test func roomsWithOtherBlocksDuckAlike() {
        func gains(block: Int, phase: Int) -> [Float] {
            var all: [Float] = []
            var position = Int64(-3000 - phase)
            while position < 20000 {
                var gains = [Float](repeating: 1, count: block)
                var level: Double?
                envelope.lower(&gains, from: position, end: 9000, level: &level)
                all += gains
                position += Int64(block)
            }
            return Array(all.dropFirst(phase).prefix(22000))
        }
        #expect(gains(block: 480, phase: 0) == gains(block: 2400, phase: 317))
    }

    /// An announcement whose audio ran out (the music coming back up) and came again 100 ms later: the music
    /// goes back down over the ramp from where it had got to, never faster, and is at the depth again after
    /// it; rendered in blocks, as a room does, with its level carried between them.
    @Test func anAnnouncementThatComesAgainTakesTheMusicDownWithoutAStep() {
        let steepest = 15.0 / 2400 + 1e-9
        var level: Double?, all: [Float] = []
        var position: Int64 = -3000
        while position < 30000 {
            // Its audio ran out at 9960 (where a block starts, as a room finds it) and came again at 14760.
            let end: Int64? = (9960..<14760).contains(position) ? 9960 : nil
            var gains = [Float](repeating: 1, count: 480)
            envelope.lower(&gains, from: position, end: end, level: &level)
            all += gains
            position += 480
        }
        let decibels = all.map { 20 * log10(Double($0)) }
        let steps = zip(decibels, decibels.dropFirst()).filter { abs($1 - $0) > steepest + 1e-4 }.count
        #expect(steps == 0, "\(steps) steps")
        // Up to -10 dB by 14760 (4800 of the 14400 frames up), down again 2400 frames later at most.
        let back = decibels[14760 + 3000]
        #expect(back > -10.1 && back < -9.9, "\(back)")
        #expect(abs(decibels[14760 + 3000 + 2400] + 15) < 1e-3)
    }

    /// Two announcements at once: the music is as low as the lower asks.
    @Test func theLowerOfTwoHolds() {
        let shallow = DuckEnvelope(depthDB: -6)
        var gains = [Float](repeating: 1, count: 4)
        var (shallowLevel, level): (Double?, Double?) = (nil, nil)
        shallow.lower(&gains, from: 100, end: nil, level: &shallowLevel)
        envelope.lower(&gains, from: 100, end: nil, level: &level)
        #expect(gains.allSatisfy { abs($0 - Float(pow(10, -15.0 / 20))) < 1e-6 })
    }

    @Test func theMixSumsEachAtItsGainAndClips() {
        let mixed = SessionMixer.mix(main: [1000, -1000, 30000, 30000], mainGains: [0.5, 1],
                                     overlays: [([100, 100, 10000, -10000], 1), ([7, 7, 7, 7], 0)], frames: 2)
        #expect(mixed == [600, -400, 32767, 20000])
        #expect(SessionMixer.mix(main: nil, mainGains: nil, overlays: [([5, -5], 0.5)], frames: 1) == [3, -3])
    }
}
