import Foundation
import LyreAudio
import Testing

/// The one decoding path (FFmpeg's libraries, and libsndfile for WAV and raw PCM) without a network: what
/// comes out of AudioFileReader is the PCM that went into the file, sample for sample, from the start and
/// after a seek; raw PCM from a pipe likewise; a file that is not audio is a clear error.
struct AudioFileReaderTests {
    /// A 44.1 kHz stereo signal with no repeating stretch (a sweep on the left, noise on the right), so a
    /// frame read at the wrong place cannot match by chance.
    static func signal(frames: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: frames * 2)
        var seed: UInt32 = 12345
        for i in 0..<frames {
            let t = Double(i) / 44100
            out[2 * i] = Int16(12000 * sin(2 * .pi * (50 * t + 4000 * t * t)))
            seed = seed &* 1_664_525 &+ 1_013_904_223
            out[2 * i + 1] = Int16(truncatingIfNeeded: Int32(seed >> 16) - 32768) / 4
        }
        return out
    }

    static func wav(_ samples: [Int16], rate: Int = 44100, channels: Int = 2) -> Data {
        var data = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { data.append(contentsOf: $0) } }
        let bytes = samples.count * 2
        data.append(contentsOf: Array("RIFF".utf8)); u32(36 + bytes); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(channels); u32(rate); u32(rate * channels * 2)
        u16(channels * 2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(bytes)
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        return data
    }

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lyre-reader-\(UUID().uuidString)-\(name)").path
    }

    /// ffmpeg (a real encoder nobody here wrote) makes `name` from the file at `input`.
    static func ffmpeg(_ input: String, to name: String, _ options: [String] = []) throws -> String {
        let ffmpeg = try #require(["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                  "ffmpeg is missing: run Tools/test, which installs it")
        let path = temporary(name)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        process.arguments = ["-v", "error", "-y", "-i", input] + options + [path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "ffmpeg could not make \(name)")
        return path
    }

    static func readAll(_ reader: borrowing AudioFileReader) -> [Float] {
        var all: [Float] = []
        var buffer: [Float] = []
        while reader.read(frames: 4096, into: &buffer) > 0 { all += buffer }
        return all
    }

    static func asInt16(_ samples: [Float]) -> [Int16] { samples.map { Int16(clamping: Int(($0 * 32768).rounded())) } }

    @Test func wavComesOutSampleForSample() throws {
        let samples = Self.signal(frames: 44100)
        let path = Self.temporary("a.wav")
        try Self.wav(samples).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try AudioFileReader(path: path)
        let (rate, channels, frames) = (reader.sampleRate, reader.channels, reader.frames)
        #expect(rate == 44100 && channels == 2 && frames == 44100)
        #expect(reader.library == "libsndfile", "a WAV of samples loads no FFmpeg library")
        let same = Self.asInt16(Self.readAll(reader)) == samples
        #expect(same, "what was read is not what the file holds")
    }

    /// A WAV of each sample format ffmpeg writes is read by libsndfile, and gives the floats ffmpeg's own
    /// command line makes of it (`-f f32le`), every one of them; its LIST INFO tags come out under FFmpeg's names
    /// (the track number from `IPRT`, where ffmpeg writes it and libsndfile does not look).
    @Test(arguments: ["pcm_u8", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le", "pcm_f64le"])
    func wavIsReadAsFFmpegReadsIt(codec: String) throws {
        let source = Self.temporary("d.wav")
        try Self.wav(Self.signal(frames: 2 * 44100)).write(to: URL(fileURLWithPath: source))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let wav = try Self.ffmpeg(source, to: "d-\(codec).wav", ["-c:a", codec, "-metadata", "title=Ding Dong", "-metadata", "artist=The Door",
                                                                 "-metadata", "album=House", "-metadata", "genre=Chime", "-metadata", "track=7"])
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let raw = try Self.ffmpeg(wav, to: "d-\(codec).f32", ["-f", "f32le", "-c:a", "pcm_f32le"])
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let expected = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let reader = try AudioFileReader(path: wav)
        #expect(reader.library == "libsndfile")
        #expect(reader.sampleRate == 44100 && reader.channels == 2 && reader.frames == 2 * 44100)
        let got = Self.readAll(reader)
        #expect(expected.count == 2 * 2 * 44100, "ffmpeg made \(expected.count) samples")
        #expect(got.count == expected.count, "\(got.count) samples against ffmpeg's \(expected.count)")
        let differing = zip(expected, got).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(got.count) samples differ from ffmpeg's")
        #expect(reader.tags["title"] == "Ding Dong" && reader.tags["artist"] == "The Door" && reader.tags["album"] == "House"
                    && reader.tags["genre"] == "Chime" && reader.tags["track"] == "7", "\(reader.tags)")
    }

    /// A WAV that carries an ID3 chunk (tags, a cover; taggers such as Mutagen write one) is FFmpeg's to read:
    /// libsndfile skips that chunk. The chunk is made here (an ID3v2.3 tag with one TIT2 frame), and FFmpeg
    /// reading the title from it says it is one.
    @Test func aWAVWithAnID3ChunkIsReadByFFmpeg() throws {
        var wav = Self.wav(Self.signal(frames: 44100))
        func u32be(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        let text: [UInt8] = [0] + Array("Tagged".utf8)  // ISO-8859-1
        let frame = Array("TIT2".utf8) + u32be(text.count) + [0, 0] + text
        let tag = Array("ID3".utf8) + [3, 0, 0] + [0, 0, 0, UInt8(frame.count)] + frame  // synchsafe size < 128
        var chunk = Array("id3 ".utf8)
        withUnsafeBytes(of: UInt32(tag.count).littleEndian) { chunk += $0 }
        chunk += tag + (tag.count % 2 == 1 ? [0] : [])
        wav.append(contentsOf: chunk)
        let riffSize = UInt32(wav.count - 8).littleEndian
        withUnsafeBytes(of: riffSize) { wav.replaceSubrange(4..<8, with: $0) }
        let path = Self.temporary("e.wav")
        try wav.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try AudioFileReader(path: path)
        #expect(reader.library == "FFmpeg" && reader.tags["title"] == "Tagged", "\(reader.library) \(reader.tags)")
        let same = Self.asInt16(Self.readAll(reader)) == Self.signal(frames: 44100)
        #expect(same)
    }

    /// Seeking lands on the frame asked for, not the packet or keyframe before it: in a WAV, and in a FLAC
    /// file made by ffmpeg (4608-frame blocks, so most targets fall inside one).
    @Test(arguments: ["wav", "flac"])
    func seekIsSampleAccurate(container: String) async throws {
        let samples = Self.signal(frames: 3 * 44100)
        let wav = Self.temporary("b.wav")
        try Self.wav(samples).write(to: URL(fileURLWithPath: wav))
        var path = wav
        defer { try? FileManager.default.removeItem(atPath: wav) }
        if container == "flac" { path = try Self.ffmpeg(wav, to: "b.flac") }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try AudioFileReader(path: path)
        for target in [100_001, 7, 44100 * 2 + 333, 0] {
            let moved = reader.seek(toFrame: target)
            #expect(moved)
            var buffer: [Float] = []
            let got = reader.read(frames: 1000, into: &buffer)
            #expect(got == 1000)
            let same = Self.asInt16(buffer) == Array(samples[(2 * target)..<(2 * target + 2000)])
            #expect(same, "the 1000 frames read after a seek to \(target) are not the file's from there")
        }
    }

    /// AAC codes 1024-sample frames, so the last one decodes whole where the MP4 keeps only part of it: the
    /// reader keeps to the container's length (ffmpeg's own command line gives 752 frames of padding more).
    @Test func aacInMP4EndsWhereTheContainerSays() throws {
        let wav = Self.temporary("c.wav")
        try Self.wav(Self.signal(frames: 4 * 44100)).write(to: URL(fileURLWithPath: wav))
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let m4a = try Self.ffmpeg(wav, to: "c.m4a", ["-c:a", "aac", "-b:a", "192k"])
        defer { try? FileManager.default.removeItem(atPath: m4a) }
        let reader = try AudioFileReader(path: m4a)
        let frames = reader.frames
        let decoded = Self.readAll(reader).count / 2
        #expect(frames == 4 * 44100 && decoded == 4 * 44100, "container \(frames ?? -1), decoded \(decoded)")
    }

    @Test func rawPCMFromAPipe() throws {
        let samples = Self.signal(frames: 10000)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let writer = Thread {
            samples.withUnsafeBytes { bytes in
                var at = 0
                while at < bytes.count {
                    let n = write(writeEnd, bytes.baseAddress! + at, bytes.count - at)
                    if n <= 0 { break }
                    at += n
                }
            }
            close(writeEnd)
        }
        writer.start()
        let reader = try AudioFileReader(fileDescriptor: readEnd, raw: RawPCMFormat("s16le:44100:2")!)
        let (rate, channels, frames) = (reader.sampleRate, reader.channels, reader.frames)
        #expect(frames == nil && rate == 44100 && channels == 2 && reader.library == "libsndfile")
        let same = Self.asInt16(Self.readAll(reader)) == samples
        #expect(same, "what was read is not what went into the pipe")
        let moved = reader.seek(toFrame: 0)
        #expect(!moved, "a pipe cannot seek")
        close(readEnd)
    }

    @Test func aFileThatIsNotAudioIsAClearError() throws {
        let path = Self.temporary("notes.txt")
        try Data("not audio at all\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            _ = try AudioFileReader(path: path)
        } throws: { error in
            "\(error)".hasPrefix("cannot read \(path) as audio: ")
        }
        #expect(throws: AudioError.self) { _ = try AudioFileReader(path: path + ".missing") }
    }
}
