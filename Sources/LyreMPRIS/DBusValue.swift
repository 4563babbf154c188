import CDBus

/// The D-Bus type codes this module reads and writes. `DBUS_TYPE_*` are `((int) 'x')` casts, which Swift does not
/// import.
enum DBusType {
    static let boolean = code("b")
    static let int32 = code("i")
    static let int64 = code("x")
    static let double = code("d")
    static let string = code("s")
    static let objectPath = code("o")
    static let array = code("a")
    static let variant = code("v")
    static let dictEntry = code("e")
    static let uint32 = code("u")
    static let uint64 = code("t")
    static let int16 = code("n")
    static let uint16 = code("q")
    static let byte = code("y")

    private static func code(_ character: Unicode.Scalar) -> Int32 { Int32(character.value) }
}

/// A value of the D-Bus type system, as far as MPRIS needs it.
enum DBusValue: Equatable, Sendable {
    case boolean(Bool)
    case int32(Int32)
    case int64(Int64)
    case double(Double)
    case string(String)
    /// Checked with `dbus_validate_path` when written: libdbus aborts the process on an invalid path.
    case objectPath(String)
    case stringArray([String])
    /// `a{sv}`: every value goes inside a variant.
    case dictionary([DBusDictEntry])
    /// `v`: a value with its own signature (what `Properties.Get` answers).
    indirect case variant(DBusValue)

    /// The D-Bus signature, e.g. `a{sv}`.
    var signature: String {
        switch self {
        case .boolean: "b"
        case .int32: "i"
        case .int64: "x"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .stringArray: "as"
        case .dictionary: "a{sv}"
        case .variant: "v"
        }
    }
}

/// One entry of an `a{sv}` dictionary; kept in order so that messages are reproducible.
struct DBusDictEntry: Equatable, Sendable {
    var key: String
    var value: DBusValue

    init(_ key: String, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// Checks of names and strings before they reach libdbus, whose argument checks abort the process by default
/// (`_dbus_warn_check_failed` is fatal unless `DBUS_FATAL_WARNINGS=0`).
enum DBusValidation {
    static func isObjectPath(_ path: String) -> Bool { dbus_validate_path(path, nil) != 0 }
    static func isBusName(_ name: String) -> Bool { dbus_validate_bus_name(name, nil) != 0 }
    static func isErrorName(_ name: String) -> Bool { dbus_validate_error_name(name, nil) != 0 }
}

/// Appends values to a message through `DBusMessageIter` (the variadic `dbus_message_append_args` is unavailable
/// from Swift). Every function answers `false` when libdbus runs out of memory or a value is invalid; the message is
/// then not to be sent.
enum DBusMessageWriter {
    static func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values where !append(value, to: &iter) { return false }
        return true
    }

    static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .boolean(let flag):
            var raw: dbus_bool_t = flag ? 1 : 0
            return dbus_message_iter_append_basic(&iter, DBusType.boolean, &raw) != 0
        case .int32(var raw):
            return dbus_message_iter_append_basic(&iter, DBusType.int32, &raw) != 0
        case .int64(var raw):
            return dbus_message_iter_append_basic(&iter, DBusType.int64, &raw) != 0
        case .double(var raw):
            return dbus_message_iter_append_basic(&iter, DBusType.double, &raw) != 0
        case .string(let text):
            return appendString(text, type: DBusType.string, to: &iter)
        case .objectPath(let path):
            guard DBusValidation.isObjectPath(path) else { return false }
            return appendString(path, type: DBusType.objectPath, to: &iter)
        case .stringArray(let strings):
            return appendContainer(DBusType.array, signature: "s", to: &iter) { sub in
                strings.allSatisfy { appendString($0, type: DBusType.string, to: &sub) }
            }
        case .variant(let inner):
            return appendContainer(DBusType.variant, signature: inner.signature, to: &iter) { append(inner, to: &$0) }
        case .dictionary(let entries):
            return appendContainer(DBusType.array, signature: "{sv}", to: &iter) { array in
                entries.allSatisfy { entry in
                    appendContainer(DBusType.dictEntry, signature: nil, to: &array) { pair in
                        appendString(entry.key, type: DBusType.string, to: &pair)
                            && appendContainer(DBusType.variant, signature: entry.value.signature, to: &pair) {
                                append(entry.value, to: &$0)
                            }
                    }
                }
            }
        }
    }

    /// A string or object path. A Swift string is valid UTF-8; one with an embedded NUL is cut there.
    private static func appendString(_ text: String, type: Int32, to iter: inout DBusMessageIter) -> Bool {
        text.withCString { pointer in
            var raw: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iter, type, &raw) != 0
        }
    }

    /// Opens a container, fills it with `body`, and closes it, or abandons it when `body` fails.
    private static func appendContainer(
        _ type: Int32, signature: String?, to iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened =
            if let signature {
                signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) != 0 }
            } else {
                dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
            }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }
}

/// Reads a method call's arguments in order through `DBusMessageIter` (the variadic `dbus_message_get_args` is
/// unavailable from Swift). Check the message's signature first (``BusMessage/signature``); then each read matches
/// the type it asks for.
struct DBusMessageReader {
    private var iter = DBusMessageIter()
    private var atEnd: Bool

    /// A reader positioned at the first argument of `message`, which must stay alive while it is read.
    init(_ message: BusMessage) {
        atEnd = dbus_message_iter_init(message.raw, &iter) == 0
    }

    mutating func readString() -> String? {
        guard case .string(let text)? = read(DBusType.string) else { return nil }
        return text
    }

    mutating func readObjectPath() -> String? {
        guard case .objectPath(let path)? = read(DBusType.objectPath) else { return nil }
        return path
    }

    mutating func readInt64() -> Int64? {
        guard case .int64(let value)? = read(DBusType.int64) else { return nil }
        return value
    }

    /// The value inside a variant argument, when it is a basic type this module knows; `nil` otherwise.
    mutating func readVariant() -> DBusValue? {
        guard !atEnd, dbus_message_iter_get_arg_type(&iter) == DBusType.variant else { return nil }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        let known = [DBusType.double, DBusType.int64, DBusType.int32, DBusType.boolean, DBusType.string, DBusType.objectPath]
            .contains(dbus_message_iter_get_arg_type(&sub))
        guard case .variant(let inner)? = readValue(), known else { return nil }
        return inner
    }

    /// The next argument when it has D-Bus type `type` (and only then is it consumed).
    private mutating func read(_ type: Int32) -> DBusValue? {
        guard !atEnd, dbus_message_iter_get_arg_type(&iter) == type else { return nil }
        return readValue()
    }

    /// The next argument, whatever its type (what another player sends: its properties and signals), or `nil`
    /// (and skipped) for a type no MPRIS client needs. Unsigned and narrower integers come as `.int64`, arrays of
    /// strings or object paths as `.stringArray`, `a{sv}` as `.dictionary` (entries with another key type or an
    /// unreadable value are left out), and a variant as `.variant` of what it holds. At most
    /// ``maximumElements`` elements of an array are read, and containers at most ``maximumDepth`` deep.
    mutating func readValue() -> DBusValue? {
        guard !atEnd else { return nil }
        let value = Self.value(at: &iter, depth: 0)
        atEnd = dbus_message_iter_next(&iter) == 0
        return value
    }

    /// The arguments not read yet.
    var isAtEnd: Bool { atEnd }

    static let maximumElements = 1024
    static let maximumDepth = 6

    private static func value(at iter: inout DBusMessageIter, depth: Int) -> DBusValue? {
        func basic<T: BitwiseCopyable>(_ zero: T) -> T {
            var value = zero
            dbus_message_iter_get_basic(&iter, &value)
            return value
        }
        switch dbus_message_iter_get_arg_type(&iter) {
        case DBusType.boolean: return .boolean(basic(dbus_bool_t(0)) != 0)
        case DBusType.int32: return .int32(basic(Int32(0)))
        case DBusType.int64: return .int64(basic(Int64(0)))
        case DBusType.uint32: return .int64(Int64(basic(UInt32(0))))
        case DBusType.uint64: return .int64(Int64(clamping: basic(UInt64(0))))
        case DBusType.int16: return .int64(Int64(basic(Int16(0))))
        case DBusType.uint16: return .int64(Int64(basic(UInt16(0))))
        case DBusType.byte: return .int64(Int64(basic(UInt8(0))))
        case DBusType.double: return .double(basic(Double(0)))
        case DBusType.string: return basicString(at: &iter).map { .string($0) }
        case DBusType.objectPath: return basicString(at: &iter).map { .objectPath($0) }
        case DBusType.variant:
            guard depth < maximumDepth else { return nil }
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return value(at: &sub, depth: depth + 1).map { .variant($0) }
        case DBusType.array:
            guard depth < maximumDepth else { return nil }
            let element = dbus_message_iter_get_element_type(&iter)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            if element == DBusType.string || element == DBusType.objectPath {
                var strings: [String] = []
                while dbus_message_iter_get_arg_type(&sub) == element, strings.count < maximumElements {
                    if let text = basicString(at: &sub) { strings.append(text) }
                    guard dbus_message_iter_next(&sub) != 0 else { break }
                }
                return .stringArray(strings)
            }
            guard element == DBusType.dictEntry else { return nil }
            var entries: [DBusDictEntry] = []
            while dbus_message_iter_get_arg_type(&sub) == DBusType.dictEntry, entries.count < maximumElements {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                if dbus_message_iter_get_arg_type(&pair) == DBusType.string, let key = basicString(at: &pair),
                    dbus_message_iter_next(&pair) != 0, let value = value(at: &pair, depth: depth + 1)
                {
                    // a{sv}: the variant's content is the entry's value, as ``DBusValue/dictionary`` holds it.
                    if case .variant(let inner) = value { entries.append(DBusDictEntry(key, inner)) } else { entries.append(DBusDictEntry(key, value)) }
                }
                guard dbus_message_iter_next(&sub) != 0 else { break }
            }
            return .dictionary(entries)
        default:
            return nil
        }
    }

    private static func basicString(at iter: inout DBusMessageIter) -> String? {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) }
    }}
