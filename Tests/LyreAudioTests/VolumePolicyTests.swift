import LyreAudio
import Testing

/// How a volume becomes what the output does (`lyred --max-volume-db`, `--volume-control`), as a table.
struct VolumePolicyTests {
    @Test func controlsParseAndPrintBack() {
        let table: [(text: String, control: VolumeControl)] = [
            ("auto", .auto), ("software", .software), ("none", VolumeControl.none),
            ("mixer:Speaker", .mixer("Speaker")), ("mixer:Front Left", .mixer("Front Left")),
        ]
        for row in table {
            #expect(VolumeControl(row.text) == row.control)
            #expect(row.control.description == row.text)
        }
    }

    @Test(arguments: ["", "mixer:", "Mixer:PCM", "hardware", "auto "])
    func anythingElseIsNoControl(text: String) {
        #expect(VolumeControl(text) == nil)
    }

    /// Every volume plays `maximumDB` lower, so the sender's slider keeps its 30 dB of travel under the cap;
    /// a mute stays a mute, and nothing plays above full.
    @Test func theLevelIsTheVolumeUnderTheCap() {
        let table: [(volume: Double, maximum: Double, level: Double)] = [
            (0, 0, 0), (-10, 0, -10), (-30, 0, -30), (0, -6, -6), (-10, -6, -16), (-30, -6, -36), (-30, -30, -60),
            (-144, 0, -144), (-144, -6, -144),
        ]
        for row in table {
            #expect(VolumePolicy(maximumDB: row.maximum).outputLevel(for: row.volume) == row.level, "\(row)")
        }
    }

    /// (control, whether the mixer takes the level) → (gain on the samples, whether the mixer was set, whether
    /// it was asked at all), for volume −10 dB under a −6 dB cap: −16 dB.
    @Test func eachControlMovesOneThing() {
        let quieter = 0.158489  // −16 dB
        let table: [(control: VolumeControl, mixerTakes: Bool, gain: Double, onMixer: Bool, mixerAsked: Bool)] = [
            (.auto, true, 1, true, true),
            (.auto, false, quieter, false, true),  // no mixer (a WAV file) or it refused: the samples
            (.mixer("PCM"), true, 1, true, true),
            (.mixer("PCM"), false, quieter, false, true),
            (.software, true, quieter, false, false),  // the mixer is never asked
            (VolumeControl.none, true, 1, false, false),  // full level, nothing touched
        ]
        for row in table {
            var asked: [Double] = []
            let applied = VolumePolicy(control: row.control, maximumDB: -6).apply(-10) { level in
                asked.append(level)
                return row.mixerTakes
            }
            #expect(abs(applied.gain - row.gain) < 1e-6, "\(row): gain \(applied.gain)")
            #expect(applied.onMixer == row.onMixer, "\(row)")
            #expect(asked == (row.mixerAsked ? [-16] : []), "\(row)")
        }
    }

    @Test func aMuteIsSilenceInSoftware() {
        #expect(VolumePolicy(control: .software).apply(-144) { _ in true }.gain == 0)
        #expect(VolumePolicy(control: .auto).apply(-144) { _ in false }.gain == 0)
    }
}
