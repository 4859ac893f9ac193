import LinkProfiles
import Testing

/// Units as people type them (`10 sec`, `3 mins`, `1mbit`): refused, with the value to write instead.
@Suite(.timeLimit(.minutes(5)))
struct UnitSuggestionTests {
    private func explanation(_ key: String, _ value: String) -> String? {
        do {
            _ = try Profile.none.setting(key, to: value)
            return nil
        } catch {
            return error.explanation
        }
    }

    @Test(arguments: [
        ("10 sec", "10 s"), ("5secs", "5 s"), ("10 seconds", "10 s"), ("3 mins", "180 s"), ("1.5 min", "90 s"),
        ("250 msec", "250 ms"), ("20 milliseconds", "20 ms"), ("10 secnods", "10 s"), ("-5 secs", "-5 s"),
    ])
    func aDurationSpelledOutSuggestsTheFormatsSpelling(typed: String, suggested: String) {
        let text = explanation("delay", typed)
        #expect(text?.hasSuffix("; did you mean \"\(suggested)\"?") == true, "\(typed): \(text ?? "accepted")")
        #expect(text?.hasPrefix("expected a duration") == true || text?.hasPrefix("negative") == true)
    }

    @Test(arguments: [("1mbit", "1 Mbit/s"), ("500 kbit", "500 kbit/s"), ("2 megabits", "2 Mbit/s")])
    func aRateInTcsOrWordsSuggestsTheFormatsSpelling(typed: String, suggested: String) {
        let text = explanation("bandwidth", typed)
        #expect(text?.hasSuffix("; did you mean \"\(suggested)\"?") == true, "\(typed): \(text ?? "accepted")")
    }

    @Test func aSizeAndAPercentageSpelledOutSuggestTheSymbol() {
        #expect(explanation("queue", "100 pkts")?.hasSuffix("did you mean \"100 packets\"?") == true)
        #expect(explanation("loss", "2 percent")?.hasSuffix("did you mean \"2 %\"?") == true)
    }

    /// A short unit is not guessed at: every symbol is within two edits of it.
    @Test func aShortUnknownUnitGetsNoGuess() {
        #expect(explanation("delay", "400 mss")?.contains("did you mean") == false)
        #expect(explanation("delay", "5 parsecs")?.contains("did you mean") == false)
    }

    @Test func aUnitInTheWrongCaseStillSaysSo() {
        #expect(
            explanation("bandwidth", "1 mbps")?.hasSuffix("units are case-sensitive: did you mean \"Mbps\"?") == true)
    }
}
