import CDBus

#if canImport(Glibc)
import Glibc
#endif

/// A `DBusError` (`dbus_error_init` / `dbus_error_free`), to pass to libdbus calls that can fail.
struct DBusErrorBox: ~Copyable {
    var raw = DBusError()

    init() { dbus_error_init(&raw) }

    deinit {
        var raw = raw
        dbus_error_free(&raw)
    }

    /// libdbus's message, or a placeholder when the call failed without setting one.
    var message: String {
        guard let message = raw.message else { return "unknown error" }
        return String(cString: message)
    }
}

/// A private connection to a message bus (`dbus_bus_get_private`). `deinit` closes it and drops the reference
/// (`dbus_connection_close` + `dbus_connection_unref`, which private connections need both of).
struct BusConnection: ~Copyable {
    let raw: OpaquePointer

    /// Connects and says `Hello` (blocking); the connection does not `_exit` the process when the bus goes away.
    init(bus: MPRISBus) throws(MPRISError) {
        var error = DBusErrorBox()
        guard let raw = dbus_bus_get_private(bus == .session ? DBUS_BUS_SESSION : DBUS_BUS_SYSTEM, &error.raw) else {
            let hint =
                switch bus {
                case .session: "is DBUS_SESSION_BUS_ADDRESS set?"
                case .system: "is dbus-daemon running (/run/dbus/system_bus_socket)?"
                }
            throw MPRISError("cannot connect to the D-Bus \(bus.rawValue) bus: \(error.message); \(hint)")
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        self.raw = raw
    }

    deinit {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    var isConnected: Bool { dbus_connection_get_is_connected(raw) != 0 }

    /// Asks for `name` without queueing (`dbus_bus_request_name`, blocking): `true` when this connection owns it now,
    /// `false` when another connection does.
    func requestName(_ name: String) throws(MPRISError) -> Bool {
        var error = DBusErrorBox()
        let result = dbus_bus_request_name(raw, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &error.raw)
        guard result >= 0 else { throw MPRISError("cannot claim the D-Bus name \(name): \(error.message)") }
        return result == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || result == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER
    }

    /// Gives `name` back (`dbus_bus_release_name`, blocking), writes out what is queued (`dbus_connection_flush`),
    /// then closes and drops the connection like `deinit`. Nothing to check: on a bus that is gone already, the first
    /// two are no-ops.
    consuming func close(releasing name: String) {
        guard isConnected else { return }
        var error = DBusErrorBox()
        _ = dbus_bus_release_name(raw, name, &error.raw)
        dbus_connection_flush(raw)
    }

    /// Queues `message` for sending (`dbus_connection_send`); it is written at once when the socket takes it, or
    /// when the loop thread's poll says the socket is writable.
    /// Answers the message's serial, by which its reply is known; `nil` when libdbus ran out of memory.
    @discardableResult
    func send(_ message: BusMessage) -> UInt32? {
        var serial: UInt32 = 0
        return dbus_connection_send(raw, message.raw, &serial) != 0 ? serial : nil
    }

    /// Asks the bus for the signals `rule` matches (`dbus_bus_add_match`, blocking).
    func addMatch(_ rule: String) throws(MPRISError) {
        var error = DBusErrorBox()
        dbus_bus_add_match(raw, rule, &error.raw)
        guard dbus_error_is_set(&error.raw) == 0 else { throw MPRISError("cannot watch D-Bus signals (\(rule)): \(error.message)") }
    }
}

/// One reference to a `DBusMessage` (`dbus_message_ref` / `dbus_message_unref`).
///
/// A class, not a `~Copyable` struct: an incoming method call is shared between the loop thread and the reply
/// closure handed to the command handler, which may answer later from any thread.
///
/// `@unchecked Sendable`: libdbus counts message references atomically, and a message is only read or written on the
/// loop thread (other threads only hold and drop references).
final class BusMessage: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes over a reference the caller owns (a message `dbus_message_new_*` returned).
    init(adopting raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference to a message libdbus lends (the one a message function receives).
    init(retaining raw: OpaquePointer) { self.raw = dbus_message_ref(raw) }

    deinit { dbus_message_unref(raw) }

    /// A method call, a reply, an error or a signal (`DBUS_MESSAGE_TYPE_*`).
    var type: Int32 { dbus_message_get_type(raw) }
    var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    /// The argument types, e.g. `ss` (empty for none).
    var signature: String { dbus_message_get_signature(raw).map { String(cString: $0) } ?? "" }
    /// The connection that sent it (a unique name such as `:1.42`).
    var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    /// For a reply or an error: the serial of the call it answers.
    var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }
    /// For an error: its name.
    var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    /// The caller asked for no reply (`NO_REPLY_EXPECTED`).
    var expectsNoReply: Bool { dbus_message_get_no_reply(raw) != 0 }

    /// A signal from `path` (`dbus_message_new_signal`) carrying `arguments`; `nil` when libdbus runs out of memory.
    static func signal(path: String, interface: String, member: String, arguments: [DBusValue]) -> BusMessage? {
        guard let raw = dbus_message_new_signal(path, interface, member) else { return nil }
        let message = BusMessage(adopting: raw)
        return DBusMessageWriter.append(arguments, to: raw) ? message : nil
    }

    /// A method call of `destination` (`dbus_message_new_method_call`) carrying `arguments`; `nil` when a name is
    /// invalid (libdbus would abort) or libdbus runs out of memory.
    static func methodCall(destination: String, path: String, interface: String, member: String,
                           arguments: [DBusValue] = []) -> BusMessage? {
        guard DBusValidation.isBusName(destination), DBusValidation.isObjectPath(path),
            let raw = dbus_message_new_method_call(destination, path, interface, member)
        else { return nil }
        let message = BusMessage(adopting: raw)
        return DBusMessageWriter.append(arguments, to: raw) ? message : nil
    }

    /// The reply to this method call: a method return with `values`, or an error.
    func reply(_ body: ReplyBody) -> BusMessage? {
        switch body {
        case .values(let values):
            guard let raw = dbus_message_new_method_return(raw) else { return nil }
            let reply = BusMessage(adopting: raw)
            if DBusMessageWriter.append(values, to: raw) { return reply }
            return self.reply(.error(name: DBusErrorName.failed, message: "the reply could not be built"))
        case .error(let name, let text):
            let valid = DBusValidation.isErrorName(name)
            let message = valid ? text : "\(text) (invalid D-Bus error name '\(name)')"
            return dbus_message_new_error(raw, valid ? name : DBusErrorName.failed, message).map(
                BusMessage.init(adopting:))
        }
    }
}

/// What a method call is answered with.
enum ReplyBody: Sendable, Equatable {
    case values([DBusValue])
    case error(name: String, message: String)

    static let empty = ReplyBody.values([])
}

/// The standard error names (`DBUS_ERROR_*`), plus Lyre's.
enum DBusErrorName {
    static let failed = DBUS_ERROR_FAILED
    static let notSupported = DBUS_ERROR_NOT_SUPPORTED
    static let invalidArgs = DBUS_ERROR_INVALID_ARGS
    static let unknownMethod = DBUS_ERROR_UNKNOWN_METHOD
    static let unknownInterface = DBUS_ERROR_UNKNOWN_INTERFACE
    static let unknownProperty = DBUS_ERROR_UNKNOWN_PROPERTY
    static let propertyReadOnly = DBUS_ERROR_PROPERTY_READ_ONLY
    /// The command handler dropped its reply closure without answering.
    static let noAnswer = "org.mpris.MediaPlayer2.Lyre.NoAnswer"
}

/// A pipe whose read end is in the loop thread's `poll`: writing a byte wakes it (`pipe` / `close`). Both ends are
/// non-blocking and close-on-exec.
struct WakeupPipe: ~Copyable, Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws(MPRISError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw MPRISError("cannot create a pipe: \(String(cString: strerror(errno)))") }
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        Glibc.close(readEnd)
        Glibc.close(writeEnd)
    }

    /// Makes the read end readable; a full pipe already is.
    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe after a wake-up.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}
