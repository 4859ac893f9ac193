/// Units as people type them where the profile format wants its own symbols (`10 sec`, `3 mins`, `1mbit`), for the
/// did-you-mean of a value's error.
///
/// The format reads none of these: it renders every value back with one symbol per unit, and case carries meaning
/// there (`MB/s` is megabytes, `Mbit/s` megabits), so a word that resembles a unit is suggested, never guessed.
enum UnitSpelling {
    /// A spelling the format refuses, and what it means in one of the format's units.
    struct Alias {
        var spelling: String
        /// The accepted symbol it stands for.
        var symbol: String
        /// How many of `symbol` one of it is: 60 for a minute in seconds.
        var factor: Double = 1
    }

    /// Every alias, whatever the quantity; `suggestion` keeps those whose symbol the value's units include.
    static let aliases: [Alias] =
        ["sec", "secs", "second", "seconds"].map { Alias(spelling: $0, symbol: "s") }
        + ["msec", "msecs", "millis", "millisecond", "milliseconds"].map { Alias(spelling: $0, symbol: "ms") }
        + ["usec", "usecs", "microsecond", "microseconds"].map { Alias(spelling: $0, symbol: "µs") }
        + ["nsec", "nsecs", "nanosecond", "nanoseconds"].map { Alias(spelling: $0, symbol: "ns") }
        + ["m", "min", "mins", "minute", "minutes"].map { Alias(spelling: $0, symbol: "s", factor: 60) }
        + ["h", "hr", "hrs", "hour", "hours"].map { Alias(spelling: $0, symbol: "s", factor: 3600) }
        + ["bit", "bits"].map { Alias(spelling: $0, symbol: "bit/s") }
        + ["kbit", "kbits", "kilobit", "kilobits"].map { Alias(spelling: $0, symbol: "kbit/s") }
        + ["mbit", "mbits", "megabit", "megabits"].map { Alias(spelling: $0, symbol: "Mbit/s") }
        + ["gbit", "gbits", "gigabit", "gigabits"].map { Alias(spelling: $0, symbol: "Gbit/s") }
        + ["byte", "bytes"].map { Alias(spelling: $0, symbol: "B") }
        + ["kilobyte", "kilobytes"].map { Alias(spelling: $0, symbol: "KB") }
        + ["megabyte", "megabytes"].map { Alias(spelling: $0, symbol: "MB") }
        + ["pkt", "pkts"].map { Alias(spelling: $0, symbol: "packets") }
        + ["percent", "pct"].map { Alias(spelling: $0, symbol: "%") }

    /// Misspellings shorter than this are not looked for by distance: every symbol is within two edits of them.
    static let shortestTypo = 4

    /// What to write instead of a value whose unit `unitText` none of `units` is, such as `10 s` for `10 secs`
    /// or `180 s` for `3 mins`; nil when nothing is close.
    ///
    /// A symbol in the wrong case (`MS`) or a known spelling (`sec`, `mbit`) matches exactly, ignoring case; a
    /// longer word a typo or two away from a spelling (`secnods`) matches through `NameSuggestion`, as unknown keys
    /// and profile names do.
    /// - Parameters:
    ///   - number: The value's number as written, its sign included.
    ///   - unitText: What followed the number.
    ///   - units: The units the value may take.
    static func suggestion(number: String, unitText: String, units: [ProfileValue.Unit]) -> Suggestion? {
        let candidates =
            units.map { Alias(spelling: $0.symbol, symbol: $0.symbol) }
            + aliases.filter { alias in units.contains { $0.symbol == alias.symbol } }
        let asked = unitText.lowercased()
        let match =
            candidates.first { $0.spelling.lowercased() == asked }
            ?? (asked.count < shortestTypo
                ? nil
                : NameSuggestion.closest(to: asked, among: candidates.map { $0.spelling.lowercased() })
                    .flatMap { found in candidates.first { $0.spelling.lowercased() == found } })
        guard let match else { return nil }
        if match.spelling == match.symbol { return .caseOf(match.symbol) }
        guard match.factor != 1, let value = Double(number) else { return .value("\(number) \(match.symbol)") }
        return .value("\(ProfileValue.decimal(value * match.factor)) \(match.symbol)")
    }

    /// What `suggestion` offers.
    enum Suggestion: Equatable {
        /// The unit written in another case: the symbol alone.
        case caseOf(String)
        /// Another spelling: the whole value to write.
        case value(String)

        /// The words an error appends after what it expected.
        var hint: String {
            switch self {
            case .caseOf(let symbol): "units are case-sensitive: did you mean \"\(symbol)\"?"
            case .value(let value): "did you mean \"\(value)\"?"
            }
        }
    }
}
