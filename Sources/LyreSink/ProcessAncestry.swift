import Foundation

/// A process and its parents, from `/proc/PID/stat`: an app may play from a child process (a browser's audio
/// process) while its parent owns the MPRIS name.
public enum ProcessAncestry {
    /// `pid` first, then its parent, and so on, at most `depth` processes, never init.
    public static func chain(of pid: UInt32?, depth: Int = 8) -> [UInt32] {
        var chain: [UInt32] = []
        var next = pid
        while let current = next, current > 1, chain.count < depth, !chain.contains(current) {
            chain.append(current)
            next = FileManager.default.contents(atPath: "/proc/\(current)/stat").flatMap { parent(inStat: Array($0)) }
        }
        return chain
    }

    /// The parent's pid in a `stat` line: the fourth field, counted after the command name's closing
    /// parenthesis (the name itself may hold spaces and parentheses).
    public static func parent(inStat stat: [UInt8]) -> UInt32? {
        guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count >= 2 else { return nil }
        return UInt32(String(decoding: fields[1], as: UTF8.self))
    }
}
