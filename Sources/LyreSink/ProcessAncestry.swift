#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A process and its parents, from `/proc/PID/stat`: an app may play from a child process (a browser's audio
/// process) while its parent owns the MPRIS name.
public enum ProcessAncestry {
    /// `pid` first, then its parents, up to `parents` of them (now-playing.md §7: up to 8), never init.
    /// `stat` reads a process's `/proc/PID/stat`.
    public static func chain(of pid: UInt32?, parents: Int = 8,
                             stat: (UInt32) -> [UInt8]? = { FileManager.default.contents(atPath: "/proc/\($0)/stat").map(Array.init) })
        -> [UInt32]
    {
        var chain: [UInt32] = []
        var next = pid
        while let current = next, current > 1, chain.count <= parents, !chain.contains(current) {
            chain.append(current)
            next = stat(current).flatMap { parent(inStat: $0) }
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
