import Foundation

/// Durations given on the command line: a whole number with an optional ms, s or min suffix (seconds without).
enum CommandLineDuration {
    static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, (Int64) -> Duration)] = [
            ("ms", { .milliseconds($0) }), ("min", { .seconds($0) * 60 }), ("s", { .seconds($0) }),
        ]
        for (suffix, make) in units where trimmed.hasSuffix(suffix) {
            guard let value = Int64(trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)), value > 0 else { return nil }
            return make(value)
        }
        guard let value = Int64(trimmed), value > 0 else { return nil }
        return .seconds(value)
    }
}
