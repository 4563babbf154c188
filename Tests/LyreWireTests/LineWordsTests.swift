import Testing

@testable import LyreWire

/// The words of the local sockets' request lines (`LineWords`; now-playing.md §5, streaming.md §9.4).
struct LineWordsTests {
    /// Names are the user's: any text, with spaces, tabs, quotes, backslashes, `=` and any script.
    static let names = ["Room C", "Living Room", "Bed \"Room\" = 2", "a\\b", "\"", "\\", "", " lead and trail ", "tab\there",
                        "Küche ☕ 客厅", "Left=left", "='\"=", "plain"]

    @Test(arguments: names)
    func aNameSurvivesTheLine(name: String) throws {
        let words = ["add", name, "volume", name, "-10"]
        #expect(try LineWords.split(LineWords.join(words)) == words)
    }

    @Test func plainWordsAreWrittenAsTheyAre() {
        #expect(LineWords.join(["volume", "Kitchen", "-10"]) == "volume Kitchen -10")
        #expect(LineWords.join(["add", "Room C"]) == "add \"Room C\"")
        #expect(LineWords.join(["unpair", "a \"b\" \\c"]) == #"unpair "a \"b\" \\c""#)
        #expect(LineWords.join(["x", ""]) == "x \"\"")
    }

    @Test func linesAsAPersonTypesThem() throws {
        #expect(try LineWords.split("  add   Kitchen\t ") == ["add", "Kitchen"])
        #expect(try LineWords.split("add Room\" C\"") == ["add", "Room C"])
        #expect(try LineWords.split("volume \"Living Room\" -10") == ["volume", "Living Room", "-10"])
        #expect(try LineWords.split("") == [])
    }

    @Test func anOpenQuoteOrADanglingEscapeIsRefused() {
        #expect(throws: LineWords.Failure.unterminatedQuote) { try LineWords.split("remove \"Bed") }
        #expect(throws: LineWords.Failure.danglingEscape) { try LineWords.split("remove \"Bed\\") }
    }

    /// The control socket reads its requests the same way: `unpair` takes a quoted name whole.
    @Test func theControlSocketTakesQuotedNames() throws {
        #expect(try ControlRequest(line: LineWords.join(["unpair", "alice \"my\" laptop"])) == .unpair("alice \"my\" laptop"))
        #expect(try ControlRequest(line: "seek 90") == .command(RemoteCommandEvent(.changePlaybackPosition, position: 90)))
        #expect(throws: RemoteCommandError.self) { try ControlRequest(line: "unpair \"alice") }
    }
}
