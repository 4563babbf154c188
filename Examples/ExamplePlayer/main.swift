// An app that embeds LyreSender, as an iOS app uses AVAudioSession: its music goes to a Lyre receiver
// (category .playback), while its interface sounds (SystemSound) stay on this machine's own output.
//
//   lyre-example-player SONG --host HOST:PORT [--name NAME] [--alert SOUND --alert-at SECONDS]
//                            [--category CATEGORY [--mode MODE] [--options OPTION,...]]
//                            [--category-at SECONDS CATEGORY]
//
// The category decides where the song goes (AudioRouting): `playAndRecord` without `allowLyre` keeps it on
// this machine even though a receiver is named, as a voice app's audio stays on the phone. `--category-at`
// changes the category while the song plays: one that takes the audio off the receiver ends the playback
// there (a route change, reason categoryChange).
//
// The local output is ALSA `default`, or what LYRE_LOCAL_OUTPUT names (LYRE_VOICE_OUTPUT for the voice
// output). Tests use it to show that a system sound played while streaming is heard locally and never
// reaches the receiver.
import Foundation
import LyreSender

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("lyre-example-player: \(message)\n".utf8))
    exit(1)
}

/// Takes `name VALUE` out of `arguments`.
func option(_ name: String, from arguments: inout [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(index...(index + 1)) }
    return arguments[index + 1]
}
var arguments = Array(CommandLine.arguments.dropFirst())
guard let host = option("--host", from: &arguments) else { fail("usage: lyre-example-player SONG --host HOST:PORT [--alert SOUND --alert-at SECONDS]") }
let senderName = option("--name", from: &arguments) ?? "Example Player"
let alert = option("--alert", from: &arguments)
let alertAt = option("--alert-at", from: &arguments).flatMap(Double.init) ?? 1
let parts = host.split(separator: ":")
guard parts.count == 2, let port = UInt16(parts[1]) else { fail("--host must be HOST:PORT") }

let category = option("--category", from: &arguments) ?? "playback"
let mode = option("--mode", from: &arguments) ?? "default"
var later: (Double, String)?
if let index = arguments.firstIndex(of: "--category-at"), index + 2 < arguments.count {
    guard let seconds = Double(arguments[index + 1]) else { fail("--category-at takes SECONDS CATEGORY") }
    later = (seconds, arguments[index + 2])
    arguments.removeSubrange(index...(index + 2))
}
let optionNames = option("--options", from: &arguments).map { $0.split(separator: ",").map(String.init) } ?? []
let named: [String: AudioSession.CategoryOptions] = [
    "mixWithOthers": .mixWithOthers, "duckOthers": .duckOthers, "allowLyre": .allowLyre, "defaultToSpeaker": .defaultToSpeaker,
    "interruptSpokenAudioAndMixWithOthers": .interruptSpokenAudioAndMixWithOthers,
]
guard let song = arguments.first else { fail("name a song to play") }
guard let category = AudioSession.Category(rawValue: category) else { fail("unknown category \(category)") }
guard let mode = AudioSession.Mode(rawValue: mode) else { fail("unknown mode \(mode)") }
var options: AudioSession.CategoryOptions = []
for name in optionNames {
    guard let option = named[name] else { fail("unknown option \(name)") }
    options.insert(option)
}

let audioSession = AudioSession.shared
do { try audioSession.setCategory(category, mode: mode, options: options) } catch { fail("\(error)") }

// The receiver is named: whether the song goes there is the category's to say.
if let local = audioSession.output(for: audioSession.destination(receiverChosen: true)) {
    FileHandle.standardError.write(Data("lyre-example-player: \(category.rawValue) keeps the song on this machine (\(local))\n".utf8))
    do { try LocalPlayback.play(path: song, on: local) } catch { fail("local output: \(error)") }
    exit(0)
}

var configuration = StreamConfiguration()
configuration.senderName = senderName
// A doorbell app sets duckOthers (or mixWithOthers): it asks to play over the music, not to take it over.
configuration.take(audioSession)
// Awaited, as an app on Swift concurrency connects: no thread waits while the receiver answers.
let session: StreamSession
do {
    session = try await StreamSession.connect(routes: [OutputRoute(host: String(parts[0]), port: port)], configuration: configuration)
} catch {
    fail("cannot play on \(host): \(error)")
}
// The player pauses by itself if the receiver goes away, as an iOS app does when headphones are pulled.
let player = QueuePlayer(items: [QueueItem(source: .file(path: song), metadata: TrackMetadata(title: "Example"))], session: session,
                         audioSession: audioSession)

// A notification arrives while the song plays: its sound is the machine's, not the stream's. A thread of its
// own, as SystemSound.play writes to the audio device until the sound has played.
let alertPlayed: Task<Void, Never>? = alert.map { alert in
    Task {
        await withCheckedContinuation { (played: CheckedContinuation<Void, Never>) in
            Thread {
                Thread.sleep(forTimeInterval: alertAt)
                do { try SystemSound.play(path: alert) } catch { fail("system sound: \(error)") }
                played.resume()
            }.start()
        }
    }
}
if let (seconds, name) = later {
    guard let next = AudioSession.Category(rawValue: name) else { fail("unknown category \(name)") }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
        do { try audioSession.setCategory(next) } catch { fail("\(error)") }
    }
}
do {
    let outcome = try await player.play()  // awaited: the main actor is free while the song plays
    if outcome == .interrupted(.categoryChange) {
        FileHandle.standardError.write(Data("lyre-example-player: the category moved the song off the receiver\n".utf8))
    } else if outcome != .finished {
        fail("playback ended: \(outcome)")
    }
} catch {
    fail("\(error)")
}
await alertPlayed?.value  // the alert, if it is still playing
