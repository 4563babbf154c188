import LyreWire
import Testing

/// Names and titles from the network print on one line, as they are unless they hold what could forge a line
/// or redraw a terminal.
struct PrintableTests {
    @Test func ordinaryTextIsAsItIs() {
        #expect(Printable.quoted("alice@laptop") == "'alice@laptop'")
        #expect(Printable.escaped("Küche — Den \"Left\" = #1") == "Küche — Den \"Left\" = #1")
        // A family emoji is three emoji joined by zero-width joiners, which stay.
        #expect(Printable.escaped("👨‍👩‍👧") == "👨‍👩‍👧")
    }

    @Test func whatCouldForgeALineOrRedrawATerminalIsEscaped() {
        let forged = Printable.quoted("x\nlyred: pairing with 'y': PIN 000000\r\t\u{1b}[2J\u{2028}\u{202e}evil\\")
        #expect(forged == "'x\\nlyred: pairing with 'y': PIN 000000\\r\\t\\u{1b}[2J\\u{2028}\\u{202e}evil\\\\'")
        #expect(!forged.contains("\n") && !forged.contains("\r") && !forged.contains("\u{1b}"))
    }
}
