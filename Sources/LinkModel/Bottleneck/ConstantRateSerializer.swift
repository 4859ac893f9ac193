// A constant-rate serialiser with a token bucket, as the kernel's tbf keeps it: in time, not in bytes.
//
// At rate R (bits/s) a packet of n bytes takes t(n) = n × 8 / R seconds. The serialiser keeps the theoretical
// end of the previous transmission, E, and a bucket depth b in time (burst bytes × 8 / R). A packet that may
// start at s begins at max(E, s − b), so an idle link banks at most b of credit, and
//
//     E' = max(E, s − b) + t(n),        leaves at max(E', s).
//
// With b = 0 this is plain serialisation: E' = s + t(n) whenever the link was free at s.

/// Serialises at a constant rate, with an optional burst that an idle link may send at line speed.
public struct ConstantRateSerializer: Serializer {
    public let rate: BitRate
    /// How long an idle link may bank: the burst's bytes at `rate`.
    public let burstNanoseconds: Int64
    private let nanosecondsPerByte: Double
    private var theoreticalEnd = Instant(nanoseconds: .min)

    /// A serialiser at `rate` that lets `burst` bytes through at once after an idle period.
    public init(rate: BitRate, burst: ByteCount = ByteCount(bytes: 0)) {
        self.rate = rate
        let perByte = rate.bitsPerSecond > 0 ? 8e9 / rate.bitsPerSecond : 0
        nanosecondsPerByte = perByte
        burstNanoseconds = Self.nanoseconds(Double(max(burst.bytes, 0)) * perByte)
    }

    public mutating func transmissionEnd(bytes: Int, startingAt start: Instant) -> Instant? {
        guard rate.bitsPerSecond > 0 else { return nil }
        let begin = max(theoreticalEnd, start.addingSaturating(nanoseconds: -burstNanoseconds))
        theoreticalEnd = begin.addingSaturating(nanoseconds: Self.nanoseconds(Double(bytes) * nanosecondsPerByte))
        return max(theoreticalEnd, start)
    }

    /// `value` rounded to whole nanoseconds, clamped so that adding it to an instant cannot trap.
    private static func nanoseconds(_ value: Double) -> Int64 {
        guard value.isFinite else { return Int64.max / 2 }
        return Int64(min(max(value.rounded(), 0), Double(Int64.max / 2)))
    }
}
