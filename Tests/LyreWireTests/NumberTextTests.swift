import Foundation
import LyreWire
import Testing

/// NumberText writes what `String(format:)` wrote (issue 30: lyre's status line and tables used it, and
/// `LinkQuality.summary` is public, so its text may not change).
struct NumberTextTests {
    @Test func writesWhatStringFormatWrites() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0, -0.0, 0.05, 0.25, 4.75, -0.04, 99.95, 100, 1e15, -1e300, .greatestFiniteMagnitude,
                                -.greatestFiniteMagnitude, .leastNonzeroMagnitude, .nan, .infinity, -.infinity]
        // Ties and near-ties at one decimal (x.x5), and values across the range lyre shows (dB, ms, percent).
        values += (0..<2000).map { Double($0) / 20 - 50 }
        values += (0..<2000).map { _ in Double.random(in: -200...200, using: &generator) }
        for value in values {
            for decimals in [0, 1, 3] {
                #expect(NumberText.fixed(value, decimals: decimals) == String(format: "%.\(decimals)f", value), "\(value) at \(decimals)")
            }
        }
    }

    @Test func theCountOfDecimalsIsKeptFrom0To17() {
        #expect(NumberText.fixed(1.5, decimals: -3) == "2")
        #expect(NumberText.fixed(1, decimals: 40) == "1.00000000000000000")
    }
}
