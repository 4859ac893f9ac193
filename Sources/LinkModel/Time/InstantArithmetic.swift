extension Instant {
    /// An instant later than any real one: when something that will never happen is due.
    package static let never = Instant(nanoseconds: .max)

    /// This instant moved by `nanoseconds`, saturating instead of wrapping (so `never` stays `never`).
    package func addingSaturating(nanoseconds delta: Int64) -> Instant {
        Instant(nanoseconds: nanoseconds.addingSaturating(delta))
    }
}

extension Int64 {
    /// The sum, clamped to the representable range instead of overflowing.
    package func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}

extension Int64 {
    /// `value` rounded to the nearest whole number and clamped to the representable range (NaN reads as 0): the
    /// one conversion for nanoseconds computed in floating point from rates and sizes, which never traps.
    package init(roundingClamped value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 0x1p63 {
            self = .max
        } else if value <= -0x1p63 {
            self = .min
        } else {
            self = Int64(value.rounded())
        }
    }

    /// The product, clamped to the representable range instead of overflowing.
    package func multipliedSaturating(by other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }
}
