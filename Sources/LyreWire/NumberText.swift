#if canImport(Glibc)
import Glibc
#endif

/// A number with a fixed count of decimals, as `String(format: "%.1f", value)` writes it, without Foundation:
/// `String(format:)` lives in Foundation's text half, which brings CoreFoundation and ICU into a program's
/// memory (issue 30). The C library's own `%.*f` writes it, so the digits and the rounding are printf's.
public enum NumberText {
    /// `value` with `decimals` digits after the point (0 to 17): `4.75` → `4.8` at 1, `-0.04` → `-0.0`,
    /// `nan` and `inf` as printf writes them.
    public static func fixed(_ value: Double, decimals: Int = 1) -> String {
        let decimals = Int32(min(max(decimals, 0), 17))
        // The longest %f of a double: a sign, 309 digits, the point and 17 decimals, and the terminating NUL.
        var buffer = [CChar](repeating: 0, count: 330)
        _ = buffer.withUnsafeMutableBufferPointer { bytes in
            withVaList([decimals, value]) { vsnprintf(bytes.baseAddress, bytes.count, "%.*f", $0) }
        }
        return String(nulTerminated: buffer)
    }
}
