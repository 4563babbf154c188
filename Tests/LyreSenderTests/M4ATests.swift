import Foundation
@testable import LyreSender
import Testing

/// M4A, read through FFmpeg's libraries (issue 12): AAC and ALAC, each with its tags and an embedded PNG
/// cover (an MP4 `covr` atom), made by ffmpeg. What a player sends of it: the tags, the track number and
/// count, the length, and the cover byte for byte; and what it streams, the file as 48 kHz stereo, is what
/// ffmpeg's own decode of the file is (audio.py compare, first sample to last). That these reach a receiver
/// is the same path for every format: `RemoteControlTests.nowPlayingArrivesWithExactArtworkAndAPositionThatNeedsNoUpdates`
/// (FLAC and its PNG) and `mp3CoverArtAndOverrides` hold it end to end.
struct M4ATests {
    @Test(arguments: ["aac", "alac"])
    func anM4AIsDescribedByItsTagsAndCoverAndReadAsFFmpegDecodesIt(codec: String) throws {
        let scratch = try ScratchFolder("lyre-m4a"), directory = scratch.path
        defer { scratch.remove() }
        _ = try EncodeQualityTests.run(["sh", "-c", """
            set -e; cd '\(directory)'
            python3 '\(EncodeQualityTests.peers)/audio.py' sweep sweep.wav --rate 44100 --seconds 4
            ffmpeg -v error -y -f lavfi -i color=c=green:s=32x32 -frames:v 1 cover.png
            ffmpeg -v error -y -i sweep.wav -i cover.png -map 0:a -map 1:v -c:a \(codec) -b:a 256k -c:v copy \
              -disposition:v attached_pic -metadata title=Tagged -metadata artist=Someone -metadata album_artist=Band \
              -metadata album=Album -metadata track=2/9 song.m4a
            ffmpeg -v error -y -i song.m4a -map 0:a -ar 48000 -c:a pcm_s16le reference.wav
            """])
        let song = AudioSource.file(path: directory + "/song.m4a")

        let (metadata, artwork) = try song.describe()
        #expect(metadata == TrackMetadata(title: "Tagged", artist: "Someone", album: "Album", albumArtist: "Band",
                                          trackNumber: 2, trackCount: 9), "\(metadata)")
        let cover = try Data(contentsOf: URL(fileURLWithPath: directory + "/cover.png"))
        #expect(artwork?.type == .png && artwork?.bytes == Array(cover), "the cover: \(artwork.map { "\($0.type), \($0.bytes.count) bytes" } ?? "none")")

        var reader = try StereoReader(song.open())
        #expect(abs((reader.duration ?? 0) - 4) < 0.05, "length: \(String(describing: reader.duration))")
        var pcm: [Int16] = []
        while !reader.isAtEnd { pcm += reader.read().map { Int16(clamping: Int(($0 * 32767).rounded())) } }
        let output = directory + "/read.raw"
        try pcm.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: output)) }
        let json = try EncodeQualityTests.run(["python3", EncodeQualityTests.peers + "/audio.py", "compare", directory + "/reference.wav",
                                               output, "--out-format", "raw:s16le:48000:2"])
        let comparison = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
        print("\(codec): read against ffmpeg's decode: \(comparison)")
        #expect((comparison["matched_seconds"] as? Double ?? 0) > 3.99 && comparison["gaps"] as? Int == 0, "\(comparison)")
        #expect((comparison["lag_samples"] as? Int).map { abs($0) <= 1 } == true, "\(comparison)")
        #expect(comparison["snr_db"] as? Double ?? -100 >= 60, "\(comparison)")
    }
}
