#if canImport(Glibc)
import Glibc
#endif

/// Band-limited interpolation of a 48 kHz stream at any fractional position: a windowed-sinc kernel of
/// 2 × `halfLength` taps (Kaiser, β = 8.6: about −85 dB sidelobes, flat to 19.5 kHz), tabulated at `phases`
/// positions between two samples and interpolated linearly between them. It is linear-phase, so every
/// frequency keeps its place: the drift correction moves the output by a fraction of a sample and the
/// waveform stays the input's.
///
/// Why it is written here and not taken from libsoxr: soxr's variable-rate engine (`SOXR_VR`) is the only
/// variable-ratio resampler among the libraries Lyre uses, and it is not linear-phase (its delay was measured
/// at 1.6 frames below 5 kHz and about 2.6 at 19 kHz), which took a sweep's waveform SNR from 31 to 16 dB
/// end to end; it also holds input inside it, so where its output stands in the input is only known
/// approximately. Here the position of every output frame is exactly the one asked for.
public struct SincInterpolator: Sendable {
    public let halfLength: Int
    public let phases: Int
    /// `phases + 1` rows of `2 × halfLength` taps; row r is the kernel for fraction r / phases.
    private let table: [Float]

    public init(halfLength: Int = 24, phases: Int = 512, cutoff: Double = 0.92, beta: Double = 8.6) {
        self.halfLength = halfLength
        self.phases = phases
        let taps = 2 * halfLength
        var table = [Float](repeating: 0, count: (phases + 1) * taps)
        func bessel0(_ x: Double) -> Double {
            var sum = 1.0
            var term = 1.0
            for k in 1..<30 {
                term *= (x / 2 / Double(k)) * (x / 2 / Double(k))
                sum += term
            }
            return sum
        }
        let norm = bessel0(beta)
        for row in 0...phases {
            let fraction = Double(row) / Double(phases)
            var kernel = [Double](repeating: 0, count: taps)
            for tap in 0..<taps {
                // Tap t weighs input sample n + t − halfLength + 1 for an output at n + fraction.
                let x = Double(tap - halfLength + 1) - fraction
                let sinc = x == 0 ? 1 : sin(.pi * cutoff * x) / (.pi * cutoff * x)
                let r = x / Double(halfLength)
                let window = abs(r) < 1 ? bessel0(beta * (1 - r * r).squareRoot()) / norm : 0
                kernel[tap] = cutoff * sinc * window
            }
            let sum = kernel.reduce(0, +)  // unity gain at DC for every fraction
            for tap in 0..<taps { table[row * taps + tap] = Float(kernel[tap] / sum) }
        }
        self.table = table
    }

    /// Interleaved stereo at `position` (in frames from the start of `samples`), which must have
    /// `halfLength − 1` frames before `floor(position)` and `halfLength` after it.
    @inline(__always)
    public func stereo(_ samples: UnsafeBufferPointer<Float>, at position: Double) -> (Float, Float) {
        let n = Int(position.rounded(.down))
        let scaled = (position - Double(n)) * Double(phases)
        let row = min(Int(scaled), phases - 1)
        let mix = Float(scaled - Double(row))
        let taps = 2 * halfLength
        return table.withUnsafeBufferPointer { t in
            var (a0, a1, b0, b1): (Float, Float, Float, Float) = (0, 0, 0, 0)
            let k0 = t.baseAddress! + row * taps
            let k1 = k0 + taps
            var s = samples.baseAddress! + (n - halfLength + 1) * 2
            for tap in 0..<taps {
                let l = s[0]
                let r = s[1]
                a0 += k0[tap] * l
                a1 += k1[tap] * l
                b0 += k0[tap] * r
                b1 += k1[tap] * r
                s += 2
            }
            return (a0 + (a1 - a0) * mix, b0 + (b1 - b0) * mix)
        }
    }
}
