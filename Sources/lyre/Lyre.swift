import ArgumentParser
import LyreCommandLine
import LyreVersion

@main
struct Lyre: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lyre",
        abstract: "Lyre sender: find receivers on the network and play to them.",
        version: LyreVersion.current,
        subcommands: [Devices.self, Play.self, Sink.self, Group.self, Remote.self, Pair.self])

    static func main() async { await CommandLineMain.run(Self.self) }
}
