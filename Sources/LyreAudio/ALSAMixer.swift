import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// The playback volume control of the card (or sound server) behind an ALSA PCM (`snd_mixer_t`), so that
/// the receiver's volume is the device's, not a gain on the samples.
///
/// The control is the one named (`lyred --volume-control mixer:NAME`), else the first of Master, PCM,
/// Speaker, Headphone, Digital that has a playback volume, else any that has one. Volume is set in dB where
/// the control has a dB scale. PulseAudio's and PipeWire's ALSA controls have none: their 0…65536 range is
/// the server's cubic volume (amplitude = (v / 65536)³), and is set on that scale; any other control
/// without a dB scale is taken as linear in amplitude.
public final class ALSAMixer {
    public let controlName: String
    private let mixer: OpaquePointer
    private let element: OpaquePointer
    private let raw: (min: Int, max: Int)
    /// In 1/100 dB, when the control has a dB scale.
    private let dBRange: (min: Int, max: Int)?
    private let hasSwitch: Bool

    /// The mixer for `pcm`, or nil when it has no playback volume control (plugins such as `null` and
    /// `file`, or no card). `control` names the control to use; nil picks the first preferred one.
    public init?(pcm: String, control: String? = nil) {
        guard let (attached, elements) = Self.open(pcm: pcm) else { return nil }
        let preferred = control.map { [$0] } ?? ["Master", "PCM", "Speaker", "Headphone", "Digital"]
        let fallback = control == nil ? elements.first : nil
        guard let chosen = preferred.lazy.compactMap({ name in elements.first { $0.name == name } }).first ?? fallback else {
            snd_mixer_close(attached)
            return nil
        }
        mixer = attached
        element = chosen.element
        controlName = chosen.name
        var low = 0, high = 0
        snd_mixer_selem_get_playback_volume_range(element, &low, &high)
        raw = (low, high)
        var dBLow = 0, dBHigh = 0
        dBRange = snd_mixer_selem_get_playback_dB_range(element, &dBLow, &dBHigh) == 0 && dBLow < dBHigh ? (dBLow, dBHigh) : nil
        hasSwitch = snd_mixer_selem_has_playback_switch(element) != 0
    }

    /// The names of the playback volume controls behind `pcm`, for a message that says what there is.
    public static func playbackControls(pcm: String) -> [String] {
        guard let (attached, elements) = open(pcm: pcm) else { return [] }
        snd_mixer_close(attached)
        return elements.map(\.name)
    }

    /// The mixer attached to `pcm` (or the card behind it) with its active playback volume controls.
    private static func open(pcm: String) -> (OpaquePointer, [(name: String, element: OpaquePointer)])? {
        var opened: OpaquePointer?
        var attached: OpaquePointer?
        // The PCM's own name is a control device for `hw:N`, `default`, `pulse`; else the card behind it.
        for device in [pcm] + (OutputKindProbe.cardIndex(for: pcm).map { ["hw:\($0)"] } ?? []) {
            guard snd_mixer_open(&opened, 0) == 0, let candidate = opened else { return nil }
            if snd_mixer_attach(candidate, device) == 0, snd_mixer_selem_register(candidate, nil, nil) == 0,
                snd_mixer_load(candidate) == 0
            {
                attached = candidate
                break
            }
            snd_mixer_close(candidate)
        }
        guard let attached else { return nil }
        var elements: [(name: String, element: OpaquePointer)] = []
        var next = snd_mixer_first_elem(attached)
        while let element = next {
            if snd_mixer_selem_is_active(element) != 0, snd_mixer_selem_has_playback_volume(element) != 0 {
                elements.append((String(cString: snd_mixer_selem_get_name(element)), element))
            }
            next = snd_mixer_elem_next(element)
        }
        return (attached, elements)
    }

    deinit { snd_mixer_close(mixer) }

    /// Sets the volume in dB (RAOP scale, 0 is full, −144 mutes); false when the control refused it.
    public func setVolume(dB: Double) -> Bool {
        let mute = dB <= -144
        if hasSwitch, snd_mixer_selem_set_playback_switch_all(element, mute ? 0 : 1) != 0 { return false }
        if mute && hasSwitch { return true }
        if let dBRange {
            let target = mute ? dBRange.min : min(max(Int((dB * 100).rounded()), dBRange.min), min(0, dBRange.max))
            return snd_mixer_selem_set_playback_dB_all(element, target, 0) == 0
        }
        let amplitude = mute ? 0 : pow(10, dB / 20)
        let fraction = raw == (0, 65536) ? cbrt(amplitude) : amplitude
        let value = raw.min + Int((Double(raw.max - raw.min) * fraction).rounded())
        return snd_mixer_selem_set_playback_volume_all(element, value) == 0
    }
}
