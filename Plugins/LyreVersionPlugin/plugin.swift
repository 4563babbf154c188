import Foundation
import PackagePlugin

/// Bakes Lyre's version (Tools/version: the release, then git's commit count and hash) into the LyreVersion
/// target before every build, so `lyre --version` and `lyred --version` name the commit they were built from.
/// A prebuild command, since its output depends on git's state, which no build input shows; Tools/version
/// rewrites the file only when the version changed, so an unchanged tree rebuilds nothing. SwiftPM runs a
/// prebuild command only when it plans a build anew, so Tools/test and Tools/package delete the saved plan
/// (`description.json`) first; a plain `swift build` after a commit keeps the version it had.
@main
struct LyreVersionPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        return [
            .prebuildCommand(
                displayName: "Lyre's version from git",
                executable: URL(filePath: "/bin/sh"),
                arguments: [
                    context.package.directoryURL.appending(path: "Tools/version").path,
                    "--swift", output.appending(path: "Version.swift").path,
                ],
                outputFilesDirectory: output)
        ]
    }
}
