import CAvahiClient
@testable import LyreDiscovery
import LyreWire
import Logging
import Testing

/// `ServicePublication`'s rules (discovery.md §6) on a stack that records the entry-group calls made of it. The
/// same rules are held end to end on both real stacks by `DiscoveryPeerTests`; here each step's calls, their
/// order and the events said are checked one by one.
@Suite struct ServicePublicationTests {
    /// An avahi stack as `EntryGroupCalls` sees it: groups are numbers, names the stack already holds collide
    /// at add time, and every call is written down.
    final class RecordingStack {
        var running = false
        /// Names held by other services of this stack: adding one is `AVAHI_ERR_COLLISION`.
        var held: Set<String> = []
        /// What `lastError` says; nil once the stack is gone.
        var error: Int32? = Int32(AVAHI_ERR_NO_MEMORY)
        var refusesGroups = false
        private(set) var log: [String] = []
        private var contents: [Int: [String]] = [:]
        private var nextGroup = 1

        func group(_ number: Int) -> OpaquePointer { OpaquePointer(bitPattern: number)! }

        var calls: EntryGroupCalls {
            EntryGroupCalls(
                isRunning: { self.running },
                new: {
                    guard !self.refusesGroups else { return nil }
                    defer { self.nextGroup += 1 }
                    self.contents[self.nextGroup] = []
                    self.log.append("new \(self.nextGroup)")
                    return self.group(self.nextGroup)
                },
                isEmpty: { self.contents[Int(bitPattern: $0), default: []].isEmpty },
                add: { group, name, _, list in
                    self.log.append("add \(Int(bitPattern: group)) \(name) \(Self.text(StringList.bytes(list)))")
                    if self.held.contains(name) { return Int32(AVAHI_ERR_COLLISION) }
                    self.contents[Int(bitPattern: group), default: []].append(name)
                    return 0
                },
                updateTXT: { group, name, _, list in
                    self.log.append("txt \(Int(bitPattern: group)) \(name) \(Self.text(StringList.bytes(list)))")
                    return 0
                },
                reset: { group in
                    self.log.append("reset \(Int(bitPattern: group))")
                    self.contents[Int(bitPattern: group)] = []
                },
                commit: { group in
                    self.log.append("commit \(Int(bitPattern: group))")
                    return 0
                },
                free: { group in
                    self.log.append("free \(Int(bitPattern: group))")
                    self.contents[Int(bitPattern: group)] = nil
                },
                lastError: { self.error })
        }

        /// The TXT the stack was handed, read back from its wire bytes by `TXTRecord.parse` and written out:
        /// "v=1;x=2".
        static func text(_ wire: [UInt8]) -> String {
            guard let record = try? TXTRecord.parse(wire) else { return "(malformed TXT)" }
            return record.strings.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ";")
        }

        /// What the stack's log says since the last look.
        func calls(since mark: inout Int) -> [String] {
            defer { mark = log.count }
            return Array(log[mark...])
        }
    }

    /// A publication on a recording stack, running or not yet.
    static func made(running: Bool) -> (RecordingStack, BackendEvents, ServicePublication) {
        let stack = RecordingStack()
        stack.running = running
        let events = BackendEvents()
        return (stack, events, ServicePublication(stack.calls, events: events, logger: Logger(label: "test")))
    }

    static func service(_ name: String, _ value: String = "1") throws -> ServiceRegistration {
        ServiceRegistration(name: name, port: 7700, txt: try TXTRecord(pairs: [(key: "v", value: value)]))
    }

    static func said(_ events: BackendEvents) async -> [PublicationEvent] {
        events.finish()
        var out: [PublicationEvent] = []
        for await event in events.publication { out.append(event) }
        return out
    }

    @Test func itRegistersOnceTheStackRunsAndTakesTheNextNameWhenThisStackHoldsIt() async throws {
        let (stack, events, publication) = Self.made(running: false)
        var mark = 0

        publication.publish(try Self.service("Kitchen"))
        #expect(stack.calls(since: &mark).isEmpty, "nothing is added before the stack runs")

        stack.running = true
        stack.held = ["Kitchen"]
        publication.registerIfNeeded()
        #expect(stack.calls(since: &mark) == ["new 1", "add 1 Kitchen v=1", "reset 1", "add 1 Kitchen (2) v=1", "commit 1"])
        publication.registerIfNeeded()
        #expect(stack.calls(since: &mark).isEmpty, "a registered group is not added to again")

        publication.groupChanged(stack.group(1), AVAHI_ENTRY_GROUP_ESTABLISHED)
        #expect(await Self.said(events) == [.renamed(from: "Kitchen", to: "Kitchen (2)"), .established(name: "Kitchen (2)")])
    }

    @Test func aRenameWithdrawsTheOldNameOnlyOnceTheNewOneIsEstablished() async throws {
        let (stack, events, publication) = Self.made(running: true)
        var mark = 0

        publication.publish(try Self.service("Kitchen"))
        publication.groupChanged(stack.group(1), AVAHI_ENTRY_GROUP_ESTABLISHED)
        #expect(stack.calls(since: &mark) == ["new 1", "add 1 Kitchen v=1", "commit 1"])

        publication.publish(try Self.service("Lounge"))
        #expect(stack.calls(since: &mark) == ["new 2", "add 2 Lounge v=1", "commit 2"], "the old name stays while the new one probes")
        publication.groupChanged(stack.group(1), AVAHI_ENTRY_GROUP_COLLISION)
        #expect(stack.calls(since: &mark).isEmpty, "the retiring group's changes are ignored")
        publication.groupChanged(stack.group(2), AVAHI_ENTRY_GROUP_ESTABLISHED)
        #expect(stack.calls(since: &mark) == ["free 1"])

        #expect(await Self.said(events) == [.established(name: "Kitchen"), .established(name: "Lounge")])
    }

    @Test func aCollisionOnTheNetworkRenamesInTheSameGroupAndRegistersAgain() async throws {
        let (stack, events, publication) = Self.made(running: true)
        var mark = 0

        publication.publish(try Self.service("Kitchen"))
        _ = stack.calls(since: &mark)
        publication.groupChanged(stack.group(1), AVAHI_ENTRY_GROUP_COLLISION)
        #expect(stack.calls(since: &mark) == ["reset 1", "add 1 Kitchen (2) v=1", "commit 1"])
        publication.groupChanged(stack.group(1), AVAHI_ENTRY_GROUP_COLLISION)
        #expect(stack.calls(since: &mark) == ["reset 1", "add 1 Kitchen (3) v=1", "commit 1"])
        publication.groupChanged(stack.group(1), AVAHI_ENTRY_GROUP_ESTABLISHED)

        #expect(
            await Self.said(events) == [
                .renamed(from: "Kitchen", to: "Kitchen (2)"), .renamed(from: "Kitchen (2)", to: "Kitchen (3)"),
                .established(name: "Kitchen (3)"),
            ])
    }

    @Test func theTXTIsRewrittenInPlaceAndAChangeWhileUnregisteredIsKeptForTheRegistration() async throws {
        let (stack, events, publication) = Self.made(running: false)
        var mark = 0

        publication.publish(try Self.service("Kitchen", "1"))
        let newer = try TXTRecord(pairs: [(key: "v", value: "2")])
        try publication.updateTXT(newer)
        #expect(stack.calls(since: &mark).isEmpty)
        #expect(publication.registration?.txt == newer)

        stack.running = true
        publication.registerIfNeeded()
        #expect(stack.calls(since: &mark) == ["new 1", "add 1 Kitchen v=2", "commit 1"], "added with the newer TXT")

        try publication.updateTXT(try TXTRecord(pairs: [(key: "v", value: "3")]))
        #expect(stack.calls(since: &mark) == ["txt 1 Kitchen v=3"], "in place: not withdrawn, not re-added")
        #expect(await Self.said(events).isEmpty)
    }

    @Test func withdrawalResetsAndFreeingSendsGoodbyesButKeepsTheServiceForTheNextStack() async throws {
        let (stack, events, publication) = Self.made(running: true)
        var mark = 0

        publication.publish(try Self.service("Kitchen"))
        publication.publish(try Self.service("Lounge"))
        _ = stack.calls(since: &mark)
        publication.withdraw()
        #expect(stack.calls(since: &mark) == ["reset 2", "free 1"], "the host name is being re-established")
        publication.registerIfNeeded()
        #expect(stack.calls(since: &mark) == ["add 2 Lounge v=1", "commit 2"])

        publication.free()
        #expect(stack.calls(since: &mark) == ["free 2"])
        publication.registerIfNeeded()
        #expect(stack.calls(since: &mark) == ["new 3", "add 3 Lounge v=1", "commit 3"], "a new stack gets the service again")
        #expect(await Self.said(events).isEmpty)
    }

    @Test func aRefusedGroupIsAFailureWithTheStacksReasonAndNothingWhenTheStackIsGone() async throws {
        let (stack, events, publication) = Self.made(running: true)
        stack.refusesGroups = true

        publication.publish(try Self.service("Kitchen"))
        stack.error = nil
        publication.registerIfNeeded()
        let said = await Self.said(events)
        #expect(said.count == 1)
        guard case .failed(let reason) = said.first else {
            Issue.record("expected a failure, got \(said)")
            return
        }
        #expect(reason.contains("entry group"), "\(reason)")
        #expect(reason.contains(String(cString: avahi_strerror(Int32(AVAHI_ERR_NO_MEMORY)))), "\(reason)")
    }
}
