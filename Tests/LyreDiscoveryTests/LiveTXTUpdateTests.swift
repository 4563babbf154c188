import Foundation
import LyreDiscovery
import LyreWire
import Synchronization
import Testing

/// Advertiser and browser against the real avahi-daemon of the test network Tools/test runs the suite in
/// (and the embedded avahi-core stack). Refuses to run anywhere else, so it never publishes on a real LAN.
@Suite(.serialized) struct LiveTXTUpdateTests {
    static func requireTestNetwork() throws {
        guard ProcessInfo.processInfo.environment["LYRE_NETNS"] == "1" else {
            throw LiveTestError(
                "this test publishes over mDNS: run it inside the isolated test network with Tools/test (or Tools/netns -- swift test)")
        }
    }

    struct LiveTestError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Route changes for one device, as a browser delivers them.
    final class Recorder: Sendable {
        let id: DeviceID
        private let changes = Mutex<[RouteChange]>([])
        init(id: DeviceID) { self.id = id }
        func record(_ change: RouteChange) { if change.device.id == id { changes.withLock { $0.append(change) } } }
        var all: [RouteChange] { changes.withLock { $0 } }

        /// Waits (bounded) until a recorded change satisfies `match`.
        func waitFor(_ match: (RouteChange) -> Bool) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if all.contains(where: match) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return all.contains(where: match)
        }
    }

    @Test("status and volume changes update the TXT in place: deviceChanged, never a withdrawal", arguments: [MDNSMode.avahi, .embedded])
    func liveUpdate(mode: MDNSMode) async throws {
        try Self.requireTestNetwork()
        let id = DeviceID.random()
        let backend = try openMDNSBackend(mode: mode, interfaces: [], publishing: true)
        let receiver = ReceiverTXT(
            deviceID: id, model: "test", codecs: [], features: [], status: .idle, outputKind: .line, volume: 0)
        let advertiser = ReceiverAdvertiser(
            backend: backend, name: "Live \(mode.rawValue) \(id.rawValue.prefix(6))", port: 7700, receiver: receiver)
        defer { advertiser.stop() }
        try advertiser.start()

        let browser = try DeviceBrowser(mode: mode)
        defer { browser.close() }
        let recorder = Recorder(id: id)
        let changes = try browser.routeChanges()
        let listening = Task { for await change in changes { recorder.record(change) } }
        defer { listening.cancel() }

        #expect(await recorder.waitFor { $0.reason == .deviceAvailable })
        #expect(recorder.all.first?.device.receiver.outputKind == .line)

        try advertiser.setStatus(.playing(sender: "Alice’s phone"))
        #expect(await recorder.waitFor { $0.device.receiver.status == .playing(sender: "Alice’s phone") })
        try advertiser.setVolume(-20)
        #expect(await recorder.waitFor { $0.device.receiver.volume == -20 && $0.device.txt["vol"] == "-20" })
        // In place: after the first appearance, only deviceChanged, never a withdrawal and return.
        #expect(recorder.all.dropFirst().allSatisfy { $0.reason == .deviceChanged }, "saw \(recorder.all.map(\.reason))")
        #expect(recorder.all.filter { $0.reason == .deviceAvailable }.count == 1)

        // Withdrawal sends goodbyes: the browser hears it.
        advertiser.stop()
        #expect(await recorder.waitFor { $0.reason == .deviceUnavailable }, "saw \(recorder.all.map(\.reason))")
    }

    @Test("a one-shot browse returns what is there")
    func oneShot() async throws {
        try Self.requireTestNetwork()
        let id = DeviceID.random()
        let advertiser = ReceiverAdvertiser(
            backend: try openMDNSBackend(mode: .avahi, interfaces: [], publishing: true),
            name: "OneShot \(id.rawValue.prefix(6))", port: 7701,
            receiver: ReceiverTXT(deviceID: id, model: "", codecs: [], features: [], status: .idle, outputKind: nil, volume: nil))
        defer { advertiser.stop() }
        try advertiser.start()
        for await event in advertiser.events { if case .established = event { break } }
        let browser = try DeviceBrowser(mode: .avahi)
        defer { browser.close() }
        let devices = try await browser.currentDevices(timeout: .seconds(5))
        #expect(devices.contains { $0.id == id && $0.port == 7701 })
    }
}
