/// Rows as a table for a terminal: each column as wide as its widest cell, in characters, two spaces between
/// columns, and no space after a line's last cell. `lyre devices`, `lyre group` and `lyred --list-outputs`
/// print theirs with it.
public enum TextTable {
    public static func lines(_ rows: [[String]]) -> [String] {
        let columns = rows.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            var line = row.enumerated().map { column, cell in cell + String(repeating: " ", count: widths[column] - cell.count) }
                .joined(separator: "  ")
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    public static func render(_ rows: [[String]]) -> String { lines(rows).joined(separator: "\n") }
}
