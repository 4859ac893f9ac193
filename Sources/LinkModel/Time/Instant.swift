/// A point on the monotonic clock, in nanoseconds since an arbitrary origin (boot, for the real clock).
///
/// The link model never reads a clock itself: every method that needs the time takes an `Instant`.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static let zero = Instant(nanoseconds: 0)

    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `rhs` later, saturating at the ends of time instead of wrapping.
    public static func + (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds.addingSaturating(rhs.nanoseconds))
    }

    /// The instant `rhs` earlier, saturating at the ends of time instead of wrapping.
    public static func - (lhs: Instant, rhs: Duration) -> Instant {
        let negated = rhs.nanoseconds == .min ? Int64.max : -rhs.nanoseconds
        return Instant(nanoseconds: lhs.nanoseconds.addingSaturating(negated))
    }

    /// The time from `rhs` to `lhs`, saturating instead of wrapping.
    public static func - (lhs: Instant, rhs: Instant) -> Duration {
        let (difference, overflow) = lhs.nanoseconds.subtractingReportingOverflow(rhs.nanoseconds)
        guard overflow else { return Duration(attoseconds: Int128(difference) * 1_000_000_000) }
        return .nanoseconds(lhs.nanoseconds < rhs.nanoseconds ? Int64.min : Int64.max)
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// The duration as whole nanoseconds (truncated toward zero), saturating at `Int64.min` and `Int64.max`.
    ///
    /// One division of the attoseconds: the same value as seconds × 10⁹ + attoseconds / 10⁹ from `components`,
    /// without the generic wide division that made this a hot spot of the link model (every instant it computes).
    /// Durations that fit 64 bits of attoseconds (under 9.2 s, nearly all the model computes) divide in 64 bits, with
    /// the same truncation; the 128-bit division is a call into the runtime.
    public var nanoseconds: Int64 {
        let attoseconds = attoseconds
        let narrow = Int64(truncatingIfNeeded: attoseconds)
        if Int128(narrow) == attoseconds { return narrow / 1_000_000_000 }
        return Int64(clamping: attoseconds / 1_000_000_000)
    }

    /// The duration in seconds as a floating-point number.
    public var seconds: Double { Double(nanoseconds) / 1e9 }
}
