import ArgumentParser
import Logging
import LyreCommandLine
import LyreDiscovery
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `lyre devices`: the device picker listing.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the Lyre receivers on the network.",
        discussion: """
            One-shot by default: lists what is there as soon as the mDNS stack has reported everything it \
            knows, or after --timeout. With --watch, prints one line per route change as it happens \
            (deviceAvailable, deviceUnavailable, deviceChanged) until interrupted or --timeout.
            """)

    @Flag(help: "JSON: an array, or with --watch one object per line with a 'reason'.")
    var json = false

    @Flag(help: "Keep listening and print each route change as it happens.")
    var watch = false

    @Option(help: "Seconds to browse (one-shot: an upper bound; --watch: how long to watch, default forever).")
    var timeout: Double?

    @OptionGroup var mdns: MDNSOptions

    @Option(help: "Log level for diagnostics on stderr.")
    var logLevel: Logger.Level = .warning

    /// How long a one-shot browse may take when the stack is slow to say it has everything.
    static let defaultOneShotBound = 3.0

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be a number of seconds above 0")
        }
    }

    func run() async throws {
        CommandLineMain.bootstrapLogging(level: logLevel)
        let browser: DeviceBrowser
        do { browser = try DeviceBrowser(mode: mdns.mdns, interfaces: mdns.interfaces) } catch {
            throw CommandFailure("\(error)")
        }
        defer { browser.close() }
        if watch { try await runWatch(browser) } else { try await runOneShot(browser) }
    }

    private func runOneShot(_ browser: DeviceBrowser) async throws {
        let devices: [Device]
        do { devices = try await browser.currentDevices(timeout: .seconds(timeout ?? Self.defaultOneShotBound)) } catch {
            throw CommandFailure("\(error)")
        }
        let out = Console.standardOutput
        if json {
            out.write(line: DeviceJSON.encodeArray(devices.map { DeviceJSON($0) }))
        } else if devices.isEmpty {
            out.write(line: "No Lyre receivers found. Start one with 'lyred' on a machine on this network, or check that mDNS (UDP 5353) is not blocked.")
        } else {
            out.write(line: DeviceTable.render(devices))
        }
    }

    private func runWatch(_ browser: DeviceBrowser) async throws {
        let changes: RouteChanges
        do { changes = try browser.routeChanges() } catch { throw CommandFailure("\(error)") }
        let out = Console.standardOutput
        let json = self.json
        let watcher = Task {
            for await change in changes {
                if json {
                    out.write(line: DeviceJSON(change.device, reason: change.reason).encodedLine())
                } else {
                    out.write(line: DeviceTable.watchLine(change))
                }
            }
        }
        if let timeout {
            try? await Task.sleep(for: .seconds(timeout))
            watcher.cancel()
            browser.close()
        }
        await watcher.value
    }
}

/// A device as `lyre devices --json` prints it.
struct DeviceJSON: Encodable {
    var reason: String?
    var id: String
    var name: String
    var host: String
    var port: UInt16
    var addresses: [String]
    var interfaces: [String]
    var status: String?
    var sender: String?
    var outputKind: String?
    var volume: Double?
    /// The fingerprint of the receiver's long-term key (`pk`), when it advertises one.
    var keyFingerprint: String?
    var model: String
    var codecs: [String]
    var features: [String]
    var version: Int
    var txt: [String: String]

    init(_ device: Device, reason: RouteChangeReason? = nil) {
        self.reason = reason?.rawValue
        id = device.id.rawValue
        name = device.name
        host = device.host
        port = device.port
        addresses = device.addresses
        interfaces = device.interfaces
        status = device.receiver.status?.token
        if case .playing(let from) = device.receiver.status { sender = from }
        outputKind = device.receiver.outputKind?.rawValue
        volume = device.receiver.volume
        keyFingerprint = device.receiver.keyFingerprint
        model = device.receiver.model
        codecs = device.receiver.codecs
        features = device.receiver.features
        version = device.receiver.version
        txt = device.txt
    }

    func encodedLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func encodeArray(_ devices: [DeviceJSON]) -> String {
        if devices.isEmpty { return "[]" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return String(decoding: (try? encoder.encode(devices)) ?? Data("[]".utf8), as: UTF8.self)
    }
}

/// The human listing: one row per device, columns padded to fit.
enum DeviceTable {
    static func render(_ devices: [Device]) -> String {
        TextTable.render([["NAME", "STATUS", "OUTPUT", "HOST:PORT", "ID"]] + devices.map(columns))
    }

    static func watchLine(_ change: RouteChange) -> String {
        ([change.reason.rawValue] + columns(change.device)).joined(separator: "  ")
    }

    static func columns(_ device: Device) -> [String] {
        [device.name, status(device.receiver.status), device.receiver.outputKind?.rawValue ?? "-",
         "\(device.host):\(device.port)", device.id.rawValue]
    }

    static func status(_ status: ReceiverStatus?) -> String {
        switch status {
        case .none: "-"
        case .idle: "idle"
        case .unavailable: "unavailable"
        case .leaving: "leaving"
        case .playing(let sender): sender.isEmpty ? "playing" : "playing (\(sender))"
        }
    }
}
