import Foundation

/// Durations given on the command line: a whole number with an optional ms, s or min suffix (seconds without).
enum CommandLineDuration {
    /// The duration `text` gives, or nil when it is not a positive whole number of its unit or its seconds overflow
    /// (minutes are counted in seconds first, so `9223372036854775807min` is refused rather than trapping).
    static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(suffix: String, make: (Int64) -> Duration?)] = [
            ("ms", { .milliseconds($0) }),
            (
                "min",
                { minutes in
                    let (seconds, overflow) = minutes.multipliedReportingOverflow(by: 60)
                    return overflow ? nil : .seconds(seconds)
                }
            ),
            ("s", { .seconds($0) }),
        ]
        for (suffix, make) in units where trimmed.hasSuffix(suffix) {
            guard let value = Int64(trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)), value > 0
            else { return nil }
            return make(value)
        }
        guard let value = Int64(trimmed), value > 0 else { return nil }
        return .seconds(value)
    }
}
