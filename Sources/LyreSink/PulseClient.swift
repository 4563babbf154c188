import CPulseShim
import LyreWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// An error from the sound server, with libpulse's text.
public struct PulseError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// A playback stream on the sound server, as reported; `sink` is nil once it has ended.
public struct PulseInput: Sendable, Equatable {
    public var index: UInt32
    public var sink: UInt32?
    public var role: String?
    public var application: String?
    public var processID: UInt32?
}

/// A control connection to PulseAudio (or PipeWire through pipewire-pulse) over libpulse: `CPulseShim` runs
/// the asynchronous API on libpulse's own main-loop thread and answers each call here when its reply is in.
/// `onInput` is called on that thread for every stream that exists at connection and every change after,
/// `onVolume` for every change of a sink, and `onLost` once, if the server goes away. Calls must not be made from those callbacks.
public final class PulseClient: @unchecked Sendable {
    private final class Handlers {
        let input: @Sendable (PulseInput) -> Void
        let volume: @Sendable (UInt32, Double, Bool) -> Void
        let lost: @Sendable () -> Void
        init(input: @escaping @Sendable (PulseInput) -> Void, volume: @escaping @Sendable (UInt32, Double, Bool) -> Void,
             lost: @escaping @Sendable () -> Void) {
            self.input = input
            self.volume = volume
            self.lost = lost
        }
    }

    private let handle: OpaquePointer
    private let handlers: Unmanaged<Handlers>

    /// Opens libpulse, which is not linked (Sources/CPulseShim): throws, saying what to install, when it is
    /// missing. Connecting and recording open it too; this tells that failure from a sound server's.
    public static func openLibrary() throws(PulseError) {
        var error = [CChar](repeating: 0, count: 256)
        guard lyre_pulse_open_library(&error, error.count) == 0 else { throw PulseError(description: String(nulTerminated: error)) }
    }

    /// `onVolume` gets a sink's index, its volume in dB (-infinity for silence) and whether it is muted, when
    /// it changes.
    public init(name: String, onInput: @escaping @Sendable (PulseInput) -> Void,
                onVolume: @escaping @Sendable (UInt32, Double, Bool) -> Void,
                onLost: @escaping @Sendable () -> Void) throws(PulseError) {
        let handlers = Unmanaged.passRetained(Handlers(input: onInput, volume: onVolume, lost: onLost))
        var error = [CChar](repeating: 0, count: 256)
        let callback: LyrePulseInputCallback = { user, index, sink, role, app, pid in
            let handlers = Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue()
            if index == UInt32.max { handlers.lost(); return }
            handlers.input(PulseInput(index: index, sink: sink == UInt32.max ? nil : sink, role: role.map { String(cString: $0) },
                                      application: app.map { String(cString: $0) }, processID: pid == 0 ? nil : pid))
        }
        let volume: LyrePulseSinkCallback = { user, sink, db, muted in
            Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue().volume(sink, db, muted != 0)
        }
        guard let handle = lyre_pulse_connect(name, callback, volume, handlers.toOpaque(), &error, error.count) else {
            handlers.release()
            throw PulseError(description: String(nulTerminated: error))
        }
        self.handle = handle
        self.handlers = handlers
        var server = [CChar](repeating: 0, count: 256)
        let status = lyre_pulse_server_name(handle, &server, server.count)
        serverName = status == 0 ? String(nulTerminated: server) : "unknown"
    }

    /// The server's name, as it says it: "pulseaudio", or "PulseAudio (on PipeWire 1.2.7)" from pipewire-pulse.
    public let serverName: String

    deinit {
        lyre_pulse_close(handle)
        handlers.release()
    }

    private func check(_ status: Int32, _ what: String) throws(PulseError) {
        guard status == 0 else { throw PulseError(description: "\(what): \(String(cString: lyre_pulse_strerror(status)))") }
    }

    /// Makes a null sink called `name`, shown as `description`; returns its module and sink index.
    public func loadNullSink(name: String, description: String) throws(PulseError) -> (module: UInt32, sink: UInt32) {
        // The module's arguments quote the property list in single quotes and the property list quotes the
        // description in double quotes; a name with quotes or backslashes loses them here.
        let plain = String(description.unicodeScalars.filter { !"'\"\\".unicodeScalars.contains($0) })
        // Float samples: the slider's volume, which the server applies before the monitor and lyre sink undoes
        // (MonitorCapture.gain), loses no precision on the way.
        let arguments = "sink_name=\(name) format=float32le rate=48000 channels=2 norewinds=1 sink_properties='device.description=\"\(plain)\"'"
        var module: UInt32 = 0
        try check(lyre_pulse_load_module(handle, "module-null-sink", arguments, &module), "cannot make the output \(name)")
        var sink: UInt32 = 0
        try check(lyre_pulse_sink_index(handle, name, &sink), "the output \(name) did not appear")
        return (module, sink)
    }

    public func setVolume(sink: UInt32, decibels: Double) throws(PulseError) {
        try check(lyre_pulse_set_sink_volume(handle, sink, decibels), "cannot set the volume of sink \(sink)")
    }

    public func unloadModule(_ module: UInt32) throws(PulseError) {
        try check(lyre_pulse_unload_module(handle, module), "cannot remove module \(module)")
    }

    /// Moves stream `input` to the machine's own output: the default sink, or when that is one of Lyre's,
    /// the first sink that is not.
    public func moveToLocal(input: UInt32) throws(PulseError) {
        var name = [CChar](repeating: 0, count: 256)
        try check(lyre_pulse_local_sink(handle, SinkRouter.sinkPrefix, &name, name.count), "no local output to move stream \(input) to")
        try check(lyre_pulse_move_input(handle, input, name), "cannot move stream \(input)")
    }

    /// Moves stream `input` to the sink called `name`.
    public func move(input: UInt32, toSink name: String) throws(PulseError) {
        try check(lyre_pulse_move_input(handle, input, name), "cannot move stream \(input) to \(name)")
    }
}
