extension Instant {
    /// An instant later than any real one: when something that will never happen is due.
    static let never = Instant(nanoseconds: .max)

    /// This instant moved by `nanoseconds`, saturating instead of wrapping (so `never` stays `never`).
    func addingSaturating(nanoseconds delta: Int64) -> Instant {
        Instant(nanoseconds: nanoseconds.addingSaturating(delta))
    }
}

extension Int64 {
    /// The sum, clamped to the representable range instead of overflowing.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}
