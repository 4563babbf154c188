import LyreWire
import Testing

/// What a receiver takes as now playing and artwork, and what it refuses with which status
/// (now-playing.md §2, §3). Each body here is what a sender could put on the wire.
@Suite struct NowPlayingInfoTests {
    private static let tags = ["title", "artist", "album", "albumArtist", "genre"]

    private func body(_ fields: String) -> [UInt8] {
        Array(#"{"elapsed":1.5,"rate":1,"anchor":42\#(fields)}"#.utf8)
    }

    private func status(_ body: [UInt8]) -> Int? {
        do {
            _ = try NowPlayingInfo(parsing: body)
            return nil
        } catch { return error.status }
    }

    @Test func aTagIsAtMost1024BytesOfUTF8() throws {
        // 512 two-byte characters are 1024 bytes but 512 characters: the limit counts bytes.
        let fits = String(repeating: "é", count: 512)
        let over = fits + "a"
        for tag in Self.tags {
            let info = try NowPlayingInfo(parsing: body(#","\#(tag)":"\#(fits)""#))
            #expect([info.title, info.artist, info.album, info.albumArtist, info.genre].contains(fits), "\(tag)")
            #expect(status(body(#","\#(tag)":"\#(over)""#)) == 400, "\(tag)")
        }
    }

    @Test func numbersOutsideTheirRangesAre400() throws {
        for bad in [#","trackNumber":-1"#, #","trackCount":-1"#, #","queueIndex":-1"#, #","queueCount":-1"#,
                    #","duration":-0.5"#] {
            #expect(status(body(bad)) == 400, "\(bad)")
        }
        for (elapsed, rate, refused) in [("-0.001", "1", true), ("0", "32", false), ("0", "-32", false),
                                         ("0", "32.01", true), ("0", "-33", true), ("0", "0", false)] {
            let json = Array(#"{"elapsed":\#(elapsed),"rate":\#(rate),"anchor":7}"#.utf8)
            #expect((status(json) == 400) == refused, "elapsed \(elapsed) rate \(rate)")
        }
        let edge = try NowPlayingInfo(parsing: body(#","trackNumber":0,"queueIndex":0,"duration":0"#))
        #expect(edge.trackNumber == 0 && edge.queueIndex == 0 && edge.duration == 0)
    }

    @Test func aBodyWithoutARequiredKeyOrNotJSONOrNotUTF8Is400() {
        #expect(status(Array(#"{"rate":1,"anchor":42}"#.utf8)) == 400)
        #expect(status(Array(#"{"elapsed":1,"anchor":42}"#.utf8)) == 400)
        #expect(status(Array(#"{"elapsed":1,"rate":1}"#.utf8)) == 400)
        #expect(status(Array("title=Song".utf8)) == 400)
        #expect(status(Array(#"["elapsed",1]"#.utf8)) == 400)
        #expect(status(Array(#"{"elapsed":1,"rate":1,"anchor":42,"title":""#.utf8) + [0xC3, 0x28, 0x22, 0x7D]) == 400)
    }

    @Test func unknownKeysAreIgnored() throws {
        let plain = try NowPlayingInfo(parsing: body(#","title":"Song","queueCount":3"#))
        let extended = try NowPlayingInfo(parsing: body(
            #","title":"Song","queueCount":3,"lyrics":"la la","x-vendor":{"nested":[1,2,{"deep":null}]},"rating":4.5"#))
        #expect(extended == plain)
    }

    @Test func aBodyIsAtMost64KiBAndLargerIs413() throws {
        // Padded to the exact size with an unknown key, which is ignored: the limit is on the body, not the tags.
        func padded(to size: Int) -> [UInt8] {
            let head = body(#","pad":""#).dropLast()  // without the closing brace
            let filler = size - head.count - 2  // the string's closing quote and the object's brace
            return Array(head) + Array(repeating: UInt8(ascii: "x"), count: filler) + Array(#""}"#.utf8)
        }
        let limit = NowPlayingInfo.maximumBodyBytes
        #expect(limit == 64 * 1024)
        #expect(padded(to: limit).count == limit)
        #expect(status(padded(to: limit)) == nil)
        #expect(status(padded(to: limit + 1)) == 413)
    }

    @Test func eachBodyIsTheWholeState() throws {
        // A later snapshot that leaves a key out has no value for it: nothing carries over from the one before.
        let first = try NowPlayingInfo(parsing: body(#","title":"One","artist":"A","duration":200,"queueIndex":0"#))
        let second = try NowPlayingInfo(parsing: body(#","title":"Two""#))
        #expect(first.artist == "A" && first.duration == 200)
        #expect(second.title == "Two" && second.artist == nil && second.duration == nil && second.queueIndex == nil)
    }

    private static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8)
    private static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D]

    private func artworkStatus(_ bytes: [UInt8], _ declared: String?) -> Int? {
        do {
            _ = try Artwork(bytes: bytes, declared: declared)
            return nil
        } catch { return error.status }
    }

    @Test func artworkIsWhatItsMagicBytesSayAndMustAgreeWithItsContentType() throws {
        #expect(try Artwork(bytes: Self.jpeg, declared: "image/jpeg").type == .jpeg)
        #expect(try Artwork(bytes: Self.png, declared: "image/png").type == .png)
        #expect(try Artwork(bytes: Self.png, declared: "IMAGE/PNG; name=cover.png").type == .png)
        // The name says nothing: the bytes decide.
        #expect(try Artwork(bytes: Self.png).fileExtension == "png")
        #expect(artworkStatus(Self.jpeg, "image/png") == 415)
        #expect(artworkStatus(Self.png, "image/jpeg") == 415)
        #expect(artworkStatus(Array("GIF89a".utf8), "image/jpeg") == 415)
        #expect(artworkStatus(Array(Self.jpeg.prefix(2)), "image/jpeg") == 415)
    }

    @Test func artworkIsAtMost1MiBAndLargerIs413() throws {
        #expect(Artwork.maximumBytes == 1_048_576)
        let fits = Self.jpeg + Array(repeating: 0, count: Artwork.maximumBytes - Self.jpeg.count)
        #expect(try Artwork(bytes: fits, declared: "image/jpeg").bytes.count == 1_048_576)
        #expect(artworkStatus(fits + [0], "image/jpeg") == 413)
    }
}
