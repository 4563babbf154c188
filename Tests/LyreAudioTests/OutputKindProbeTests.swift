import LyreWire
import Testing

@testable import LyreAudio

/// discovery.md §3, `ok` from ALSA: a `USB-Audio` driver is `usb`, an HDMI PCM or card is `hdmi`, S/PDIF
/// (`iec958`, `spdif`) is `line`; an internal analog card, or a plugin, is left to the configuration.
struct OutputKindProbeTests {
    /// Cards as `snd_ctl_card_info` describes them on real hardware.
    static let usb = CardInfo(id: "Device", driver: "USB-Audio", name: "USB Audio Device", longName: "C-Media Electronics Inc. USB Audio Device at usb-0000:00:14.0-1, full speed")
    static let intelHDMI = CardInfo(id: "HDMI", driver: "HDA-Intel", name: "HDA Intel HDMI", longName: "HDA Intel HDMI at 0xf7e14000 irq 46")
    static let piHDMI = CardInfo(id: "vc4hdmi0", driver: "vc4-hdmi", name: "vc4-hdmi-0", longName: "vc4-hdmi-0")
    static let analog = CardInfo(id: "PCH", driver: "HDA-Intel", name: "HDA Intel PCH", longName: "HDA Intel PCH at 0xf7e10000 irq 47")

    @Test func theNameOrTheCardTellsTheKind() {
        let table: [(pcm: String, card: CardInfo?, kind: OutputKind?)] = [
            ("hdmi:CARD=PCH,DEV=0", nil, .hdmi),
            ("HDMI:0", nil, .hdmi),
            ("iec958:CARD=PCH,DEV=0", nil, .line),
            ("spdif", nil, .line),
            ("hw:CARD=Device,DEV=0", Self.usb, .usb),
            ("plughw:1", Self.usb, .usb),
            ("hw:0", Self.intelHDMI, .hdmi),
            ("hw:CARD=vc4hdmi0,DEV=0", Self.piHDMI, .hdmi),
            ("hw:CARD=PCH,DEV=0", Self.analog, nil),
            ("default", Self.analog, nil),
            ("null", nil, nil),
        ]
        for row in table {
            #expect(OutputKindProbe.kind(pcm: row.pcm, card: { row.card }) == row.kind, "\(row.pcm)")
        }
    }

    /// Plugins are no card, whatever the first card is; `default` and `sysdefault` are the first card.
    @Test func pluginsAreNoCard() {
        for pcm in ["null", "file:/tmp/x", "pulse", "pipewire", "dmix:0", "wav"] {
            #expect(OutputKindProbe.cardIndex(for: pcm) == nil, "\(pcm)")
        }
    }
}
