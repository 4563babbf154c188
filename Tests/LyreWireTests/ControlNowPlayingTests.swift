import Foundation
import LyreWire
import Testing

/// The now-playing answer lyred writes is the one `lyre remote now-playing` reads (now-playing.md §5).
struct ControlNowPlayingTests {
    @Test func readsWhatItWritesAndLeavesOutWhatIsNotGiven() throws {
        var answer = ControlNowPlaying(state: "paused", volume: -12.5, at: 42)
        answer.title = "Given"
        answer.artist = "Someone"
        answer.position = 61.9
        answer.duration = 225
        answer.commands = ["play", "pause"]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(answer), as: UTF8.self)
        #expect(text == #"{"artist":"Someone","at":42,"commands":["play","pause"],"duration":225,"position":61.9,"#
            + #""state":"paused","title":"Given","updates":0,"volume":-12.5}"#)
        #expect(try JSONDecoder().decode(ControlNowPlaying.self, from: Data(text.utf8)) == answer)
        #expect(answer.summary == "⏸ Given — Someone  1:01 / 3:45")
    }

    @Test func summaryOfEachState() {
        var answer = ControlNowPlaying(volume: 0, at: 0)
        #expect(answer.summary == "nothing is playing")
        answer.state = "playing"
        #expect(answer.summary == "▶ untitled")
        answer.album = "Tests"
        answer.duration = 300
        answer.sender = "Den Laptop"
        #expect(answer.summary == "▶ untitled (Tests)  from Den Laptop")
        answer.state = "stopped"
        answer.position = 0
        #expect(answer.summary == "■ untitled (Tests)  0:00 / 5:00  from Den Laptop")
    }
}
