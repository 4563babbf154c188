import Foundation

/// A folder of its own in the temporary directory for one test's files, removed by `remove()` (in a
/// `defer` beside the making).
struct ScratchFolder {
    let path: String

    init(_ prefix: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
