import CSoxr
import LyreAudio

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A `soxr_t` (`soxr_create` / `soxr_delete`): interleaved float at any rate in, 48 kHz out.
public struct Resampler: ~Copyable {
    private let handle: soxr_t
    public let inputRate: Double
    public let outputRate: Double
    public let channels: Int

    public init(from inputRate: Int, to outputRate: Int = 48000, channels: Int) throws(AudioError) {
        var error: soxr_error_t?
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        guard let handle = soxr_create(Double(inputRate), Double(outputRate), UInt32(channels), &error, &io, &quality, nil),
            error == nil
        else {
            throw AudioError(description: "soxr_create: \(error.map { String(cString: $0) } ?? "failed")")
        }
        self.handle = handle
        self.inputRate = Double(inputRate)
        self.outputRate = Double(outputRate)
        self.channels = channels
    }

    deinit { soxr_delete(handle) }

    /// Resamples `input` (interleaved); pass an empty array at the end to drain. Returns what is ready.
    public func process(_ input: [Float], end: Bool = false) -> [Float] {
        let inFrames = input.count / channels
        let capacity = Int((Double(inFrames) * outputRate / inputRate).rounded(.up)) + 1024
        var output = [Float](repeating: 0, count: capacity * channels)
        var used = 0
        var done = 0
        input.withUnsafeBufferPointer { src in
            output.withUnsafeMutableBufferPointer { dst in
                _ = soxr_process(
                    handle, end ? nil : UnsafeRawPointer(src.baseAddress), end ? 0 : inFrames, &used,
                    UnsafeMutableRawPointer(dst.baseAddress), capacity, &done)
            }
        }
        output.removeLast((capacity - done) * channels)
        return output
    }
}
