#if canImport(Glibc)
import Glibc
#endif

/// A WAV file written in real time, as a DAC would play it: for headless hosts and tests.
///
/// Paced by a `ClockPacedTimeline`: a block is written `outputLatency` ahead of its presentation time. The header's sizes are brought up to date four times a
/// second and when output stops or the file closes, so the file is a valid WAV at any moment (one being
/// read while it grows may hold up to 250 ms more than its header says). Sessions append to the same file.
public final class WAVFileOutput: PCMSink {
    public let blockFrames = 240
    public let longestBlockFrames = ClockPacedTimeline.longestBlockFrames
    public let outputLatency: UInt64 = 10_000_000
    public var recoveries: Int { 0 }
    public var volumeControl: String? { nil }
    public func setVolume(dB: Double) -> Bool { false }
    private let fd: Int32
    private var dataBytes: UInt32 = 0
    private var timeline: ClockPacedTimeline
    private var framesSinceHeader = 0

    /// `skewPPM`: the file's timeline runs that much fast against the host clock (a DAC's crystal).
    public init(path: String, skewPPM: Double = 0) throws(AudioOutputError) {
        timeline = ClockPacedTimeline(skewPPM: skewPPM)
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AudioOutputError("cannot write \(path): \(String(cString: strerror(errno)))") }
        guard Self.header(dataBytes: 0).withUnsafeBytes({ writeAll($0) }) else { throw AudioOutputError("cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    /// A file is written `outputLatency` ahead, or `lead` when that is shorter (under 15 ms of latency, whose
    /// lead, the latency less 5 ms, is under 10 ms): it is not heard, so nothing underruns.
    public func waitForRoom(within lead: UInt64) throws(AudioOutputError) -> UInt64 { timeline.waitForRoom(lead: min(outputLatency, lead)) }

    public func write(_ samples: [Int16]) throws(AudioOutputError) {
        // Little-endian hosts only (x86_64, arm64): the samples' memory is the WAV data as it is.
        guard samples.withUnsafeBytes({ writeAll($0) }) else {
            throw AudioOutputError("WAV write failed: \(String(cString: strerror(errno)))")
        }
        timeline.advance(frames: samples.count / 2)
        dataBytes &+= UInt32(truncatingIfNeeded: samples.count * 2)
        framesSinceHeader += samples.count / 2
        if framesSinceHeader >= 12000 { updateHeader() }
    }

    @discardableResult
    public func stop() -> AudioOutputError? {
        timeline.reset()
        updateHeader()
        return nil
    }

    public func close() {
        updateHeader()
        _ = Glibc.close(fd)
    }

    /// Writes the current sizes into the RIFF and data chunk headers.
    private func updateHeader() {
        framesSinceHeader = 0
        var riff = (36 + dataBytes).littleEndian
        var data = dataBytes.littleEndian
        _ = pwrite(fd, &riff, 4, 4)
        _ = pwrite(fd, &data, 4, 40)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    /// A 44-byte RIFF/WAVE header for 48 kHz stereo 16-bit PCM.
    static func header(dataBytes: UInt32) -> [UInt8] {
        var h: [UInt8] = Array("RIFF".utf8)
        func u32(_ v: UInt32) { h += withUnsafeBytes(of: v.littleEndian, Array.init) }
        func u16(_ v: UInt16) { h += withUnsafeBytes(of: v.littleEndian, Array.init) }
        u32(36 + dataBytes)
        h += Array("WAVEfmt ".utf8)
        u32(16); u16(1); u16(2); u32(48000); u32(48000 * 4); u16(4); u16(16)
        h += Array("data".utf8)
        u32(dataBytes)
        return h
    }
}
