import LyreCommandLine
import Testing

struct TextTableTests {
    /// Columns line up by characters (not bytes, nor UTF-16 units: `é` and `🔊` are one each), with two spaces
    /// between them and none at a line's end, even after an empty last cell.
    @Test func columnsLineUpByCharacter() {
        let rows = [["NAME", "STATUS", "ID"], ["Cuisine é", "ok", "1"], ["🔊", "playing", ""]]
        #expect(TextTable.lines(rows) == [
            "NAME       STATUS   ID",
            "Cuisine é  ok       1",
            "🔊          playing",
        ])
        #expect(TextTable.render([]) == "")
    }
}
