import LyreSender
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Each receiver's last address, by id, as discovery found it: `$XDG_STATE_HOME/lyre/receivers.json`. With it
/// `lyre play --to NAME` connects at once instead of browsing first; the receiver tells its id in OPTIONS
/// (streaming.md §3), and a stale address (the receiver moved, or another has it) falls back to browsing.
struct KnownReceivers {
    struct Entry: Codable, Equatable {
        var id: String
        var name: String
        var host: String
        var port: UInt16
    }

    let path: String
    /// At most this many receivers are remembered (the most recently found).
    static let capacity = 64
    /// A file larger than this is not read.
    static let maximumBytes = 256 * 1024

    init(path: String? = nil) {
        if let path {
            self.path = path
        } else {
            self.path = SenderState.directory + "/receivers.json"
        }
    }

    func load() -> [Entry] {
        guard case .success(let bytes) = RegularFile.read(path, limit: Self.maximumBytes, followingLinks: true) else { return [] }
        return (try? JSONDecoder().decode([Entry].self, from: Data(bytes))) ?? []
    }

    /// The receiver `name` names (its id, or its name in any case), if remembered.
    func find(_ name: String) -> Entry? {
        let entries = load()
        return entries.first { $0.id == name.lowercased() } ?? entries.first { $0.name.lowercased() == name.lowercased() }
    }

    /// Remembers `routes` found by discovery (those with an id), newest first. Best effort: a cache.
    func remember(_ routes: [OutputRoute]) {
        let found = routes.compactMap { route in route.id.map { Entry(id: $0, name: route.name, host: route.host, port: route.port) } }
        guard !found.isEmpty else { return }
        var entries = load()
        let ids = Set(found.map(\.id))
        // A name belongs to one receiver: an older entry with a found receiver's name is gone.
        let names = Set(found.map { $0.name.lowercased() })
        entries.removeAll { ids.contains($0.id) || names.contains($0.name.lowercased()) }
        save(Array((found + entries).prefix(Self.capacity)))
    }

    /// Forgets receivers (their address did not answer as them).
    func forget(_ ids: [String]) {
        let entries = load()
        let kept = entries.filter { !ids.contains($0.id) }
        if kept != entries { save(kept) }
    }

    private func save(_ entries: [Entry]) {
        guard let data = try? JSONEncoder().encode(entries) else { return }
        try? FileManager.default.createDirectory(atPath: PathText.directory(of: path), withIntermediateDirectories: true)
        try? data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
