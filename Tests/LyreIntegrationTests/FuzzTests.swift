import Foundation
import Testing

/// Every network parser under libFuzzer with AddressSanitizer, briefly (Tools/fuzz, built by Tools/test):
/// from the seeds in Tools/fuzz.d/corpus, no crash and no sanitizer report. Longer runs: `Tools/fuzz all 600`.
@Suite(.serialized)
struct FuzzTests {
    static let root = URL(fileURLWithPath: TestNetwork.tools).deletingLastPathComponent().path
    static let binary = root + "/.build-fuzz/lyre-fuzz"
    static let targets = ["rtsp", "sdp", "rtp", "fec", "rtcp", "timing", "txt", "now-playing", "parameters", "control", "pairing", "headers", "sender-parameters"]

    @Test func everyHarnessIsRun() throws {
        let harness = try String(contentsOfFile: TestNetwork.tools + "/fuzz.d/Harness.swift", encoding: .utf8)
        let declared = harness.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("    \""), let end = line.dropFirst(5).firstIndex(of: "\"") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 5)..<end])
        }
        #expect(declared.sorted() == Self.targets.sorted(), "Harness.swift declares \(declared)")
    }

    /// Each target for 3 s, as many at once as the machine has cores (each run is one process that keeps one
    /// core busy, so two at once on two cores fuzz as long as one after another did, in half the time).
    @Test func parserSurvivesFuzzing() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw TestNetworkError("\(Self.binary) is missing: run Tools/test, which builds it (Tools/fuzz build)")
        }
        var pending = Self.targets[...]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<max(1, ProcessInfo.processInfo.activeProcessorCount) {
                if let target = pending.popFirst() { group.addTask { try await Self.fuzz(target) } }
            }
            while try await group.next() != nil {
                if let target = pending.popFirst() { group.addTask { try await Self.fuzz(target) } }
            }
        }
    }

    /// `target` under libFuzzer for 3 s from its seeds: it ends with "Done" and status 0, or the expectation
    /// fails with the log's last lines.
    static func fuzz(_ target: String) async throws {
        let found = FileManager.default.temporaryDirectory.appendingPathComponent("lyre-fuzz-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: found, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: found) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["-max_total_time=3", "-max_len=4096", "-timeout=10", "-rss_limit_mb=2048",
                             "-artifact_prefix=\(found.path)/", found.path, TestNetwork.tools + "/fuzz.d/corpus/\(target)"]
        process.environment = ProcessInfo.processInfo.environment.merging(["LYRE_FUZZ_TARGET": target, "SWIFT_BACKTRACE": "enable=no"]) { $1 }
        let log = found.appendingPathComponent("log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        // Waits on the process's end itself, off the test's threads.
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try handle.close()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(status == 0 && output.contains("Done "),
                "lyre-fuzz \(target): status \(status)\n\(output.split(separator: "\n").suffix(30).joined(separator: "\n"))")
    }
}
