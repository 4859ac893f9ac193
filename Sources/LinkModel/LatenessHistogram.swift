/// How late a direction handed released bytes to their socket, after the instant its link model released them: the
/// part of the delay error that is linkcond's own (a late wake-up, a held write), apart from what the kernel and the
/// receiving app add. `status` reports its quantiles, so a machine too busy to keep an emulated delay precise says so.
///
/// Log-linear buckets, as HdrHistogram keeps them: bucket 0 holds lateness under 1024 ns, and each doubling from
/// there, up to 2^36 ns (about 69 s), splits into `perOctave` equal buckets; the last one holds everything beyond. A
/// quantile is its bucket's upper edge (capped at the maximum seen), at most 25 % above the true figure and never
/// below it, so the report errs towards "late". Pure; lives with the link that records into it.
public struct LatenessHistogram: Hashable, Sendable {
    /// Buckets per doubling: the two bits below the leading one.
    static let perOctave = 4
    static let octaves = 26
    private static let bucketCount = 2 + perOctave * octaves

    private var counts = [Int](repeating: 0, count: bucketCount)
    /// Lateness figures recorded.
    public private(set) var samples = 0
    /// The largest of them.
    public private(set) var maximum: Duration = .zero
    /// Their sum (a negative one counted as zero).
    public private(set) var total: Duration = .zero

    public init() {}

    /// Records one hand-over `lateness` after its release; a negative one (never expected) counts as on time.
    public mutating func record(_ lateness: Duration) {
        let nanoseconds = max(lateness.nanoseconds, 0)
        let index = Self.bucket(ofNanoseconds: nanoseconds)
        counts[index] += 1
        samples += 1
        total += .nanoseconds(nanoseconds)
        if lateness > maximum { maximum = lateness }
    }

    /// The lateness that a fraction `q` (0…1) of the records did not exceed, as its bucket's upper edge (capped at
    /// the maximum seen); nil before any record.
    public func quantile(_ q: Double) -> Duration? {
        guard samples > 0 else { return nil }
        let rank = max(1, Int((q * Double(samples)).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() {
            seen += count
            if seen >= rank { return min(Self.upperEdge(ofBucket: index), maximum) }
        }
        return maximum
    }

    static func bucket(ofNanoseconds nanoseconds: Int64) -> Int {
        guard nanoseconds >= 1024 else { return 0 }
        let octave = (Int64.bitWidth - 1 - nanoseconds.leadingZeroBitCount) - 10
        guard octave < octaves else { return bucketCount - 1 }
        let step = Int(nanoseconds >> (octave + 8)) - perOctave
        return 1 + perOctave * octave + step
    }

    static func upperEdge(ofBucket index: Int) -> Duration {
        guard index > 0 else { return .nanoseconds(1024) }
        guard index < bucketCount - 1 else { return .seconds(Int64.max / 1_000_000_000) }
        let octave = (index - 1) / perOctave
        let step = (index - 1) % perOctave
        return .nanoseconds(Int64(perOctave + step + 1) << (octave + 8))
    }
}
