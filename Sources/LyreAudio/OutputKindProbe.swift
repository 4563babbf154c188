import CALSA
import LyreWire

#if canImport(Glibc)
import Glibc
#endif

/// Tells what kind of output an ALSA PCM plays through, where ALSA can tell.
///
/// From the PCM name (`hdmi:…`, `iec958:…`) and the card's driver and names (`snd_ctl_card_info`):
/// a `USB-Audio` driver is ``OutputKind/usb``, an HDMI card or device is ``OutputKind/hdmi``, S/PDIF is
/// ``OutputKind/line``. An internal analog card could be speakers or headphones, so that returns `nil`
/// and the receiver falls back to what it was configured with.
public enum OutputKindProbe {
    /// The kind of `pcm`, or `nil` when ALSA cannot tell (no card, a plugin such as `file` or `null`,
    /// or an internal analog card).
    public static func detect(pcm: String) -> OutputKind? {
        kind(pcm: pcm) { cardIndex(for: pcm).flatMap { CardInfo(card: $0) } }
    }

    /// The rule of ``detect(pcm:)``, with the card's info asked of `card` (only when the name does not tell).
    static func kind(pcm: String, card: () -> CardInfo?) -> OutputKind? {
        let lowered = pcm.lowercased()
        if lowered.hasPrefix("hdmi") { return .hdmi }
        if lowered.hasPrefix("iec958") || lowered.hasPrefix("spdif") { return .line }
        guard let info = card() else { return nil }
        if info.driver == "USB-Audio" { return .usb }
        if (info.name + " " + info.longName + " " + info.id).uppercased().contains("HDMI") { return .hdmi }
        return nil
    }

    /// The card a PCM name refers to: `hw:1`, `plughw:CARD=PCH,DEV=0`, `front:0`; `default` and
    /// `sysdefault` mean the first card. `nil` for plugin PCMs and when there is no card.
    static func cardIndex(for pcm: String) -> Int32? {
        let parts = pcm.split(separator: ":", maxSplits: 1)
        let kind = parts.first.map(String.init) ?? ""
        let pluginPrefixes = ["file", "null", "wav", "pulse", "pipewire", "jack", "dmix", "dsnoop", "rate"]
        if pluginPrefixes.contains(kind) { return nil }
        if parts.count == 1 {
            guard kind == "default" || kind == "sysdefault" else { return nil }
            var card: Int32 = -1
            guard snd_card_next(&card) == 0, card >= 0 else { return nil }
            return card
        }
        // `hw:1,0`, `hw:CARD=PCH,DEV=0`, `hw:PCH`
        let arguments = parts[1].split(separator: ",")
        var cardText = arguments.first.map(String.init) ?? ""
        for argument in arguments where argument.hasPrefix("CARD=") { cardText = String(argument.dropFirst(5)) }
        let index = snd_card_get_index(cardText)
        return index >= 0 ? index : nil
    }
}

/// `snd_ctl_t` opened on one card, read for its `snd_ctl_card_info_t`, and closed.
struct CardInfo {
    var id = "", driver = "", name = "", longName = ""

    init(id: String, driver: String, name: String, longName: String) {
        (self.id, self.driver, self.name, self.longName) = (id, driver, name, longName)
    }

    init?(card: Int32) {
        var ctl: OpaquePointer?
        guard snd_ctl_open(&ctl, "hw:\(card)", 0) == 0, let ctl else { return nil }
        defer { snd_ctl_close(ctl) }
        var info: OpaquePointer?
        guard snd_ctl_card_info_malloc(&info) == 0, let info else { return nil }
        defer { snd_ctl_card_info_free(info) }
        guard snd_ctl_card_info(ctl, info) == 0 else { return nil }
        id = snd_ctl_card_info_get_id(info).map { String(cString: $0) } ?? ""
        driver = snd_ctl_card_info_get_driver(info).map { String(cString: $0) } ?? ""
        name = snd_ctl_card_info_get_name(info).map { String(cString: $0) } ?? ""
        longName = snd_ctl_card_info_get_longname(info).map { String(cString: $0) } ?? ""
    }
}

/// A PCM that ALSA names for playback, as `lyred --list-outputs` shows it.
public struct ALSAOutputDevice: Sendable, Equatable {
    /// What `--output` takes: `default`, `hw:CARD=PCH,DEV=0`, `plughw:…`, `pulse`, `pipewire`, ….
    public var pcm: String
    /// ALSA's description, its lines joined.
    public var description: String
    /// What the receiver would advertise for it, where ALSA can tell (``OutputKindProbe/detect(pcm:)``).
    public var kind: OutputKind?
}

extension OutputKindProbe {
    /// The playback PCMs ALSA lists (`snd_device_name_hint`: the configuration's PCMs that show themselves,
    /// and each card's `hw:`, `plughw:`, `sysdefault:`, … by its stable `CARD=` name), each with its kind.
    public static func outputs() -> [ALSAOutputDevice] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func field(_ hint: UnsafeMutableRawPointer, _ name: String) -> String? {
            guard let value = snd_device_name_get_hint(hint, name) else { return nil }
            defer { free(value) }
            return String(cString: value)
        }
        var devices: [ALSAOutputDevice] = []
        var cursor = hints
        while let hint = cursor.pointee {
            cursor += 1
            // IOID is absent for a PCM that plays and records, "Output" for playback only.
            guard let name = field(hint, "NAME"), field(hint, "IOID") ?? "Output" == "Output" else { continue }
            let description = (field(hint, "DESC") ?? "").split(separator: "\n").joined(separator: ", ")
            devices.append(ALSAOutputDevice(pcm: name, description: description, kind: detect(pcm: name)))
        }
        return devices
    }
}
