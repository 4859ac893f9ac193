import LinkProfiles
import Testing

/// The settings `linkcond set` reads from the words a person types: three spellings, several at once, split on keys.
@Suite(.timeLimit(.minutes(5)))
struct SettingAssignmentTests {
    private func lines(_ words: [String]) throws(ProfileError) -> [String] {
        try SettingAssignment.parse(words: words).map(\.line)
    }

    @Test(arguments: [
        ["downlink.delay=800ms"], ["downlink.delay", "=", "800", "ms"], ["downlink.delay", "800", "ms"],
        ["downlink.delay=", "800 ms"], ["downlink.delay", "=800", "ms"], ["downlink.delay", "800 ms"],
    ])
    func eachSpellingGivesTheSameSetting(words: [String]) throws {
        let lines = try lines(words)
        #expect(lines == ["downlink.delay = 800ms"] || lines == ["downlink.delay = 800 ms"], "\(words): \(lines)")
    }

    @Test func severalSettingsSplitOnTheirKeys() throws {
        #expect(
            try lines(["downlink.delay=800ms", "uplink.bandwidth=1Mbit/s"])
                == ["downlink.delay = 800ms", "uplink.bandwidth = 1Mbit/s"])
        #expect(
            try lines(["downlink.delay", "=", "800", "ms", "uplink.bandwidth", "=", "1", "Mbit/s"])
                == ["downlink.delay = 800 ms", "uplink.bandwidth = 1 Mbit/s"])
        #expect(
            try lines(["downlink.delay", "800", "ms", "loss", "2", "%", "fault", "none"])
                == ["downlink.delay = 800 ms", "loss = 2 %", "fault = none"])
    }

    /// The first word after a key is its value even when it is a key's name; a `KEY=VALUE` word keeps its spaces.
    @Test func aValueThatLooksLikeAKeyStaysAValue() throws {
        #expect(try lines(["exclude", "delay"]) == ["exclude = delay"])
        #expect(
            try lines(["description=slow delay link", "loss", "1 %"]) == [
                "description = slow delay link", "loss = 1 %",
            ])
    }

    @Test func aBadPairIsNamedWithItsValue() {
        #expect(throws: ProfileError.self) { try lines(["delay=800ms", "loss=200 %"]) }
        do {
            _ = try lines(["delay", "800", "ms", "uplink.bandwith", "1", "Mbit/s"])
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains("unknown key \"uplink.bandwith\"; did you mean \"uplink.bandwidth\"?"))
        }
    }

    @Test func aKeyWithoutValueSaysWhatIsMissing() {
        do {
            _ = try lines(["loss", "2 %", "delay="])
            Issue.record("accepted")
        } catch {
            #expect(error.description.hasPrefix("\"delay = \": missing value: expected a duration"), "\(error)")
        }
    }

    @Test func aKeyGivenTwiceIsRefused() {
        do {
            _ = try lines(["delay=1ms", "delay", "2", "ms"])
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains("each key once (delay is already set to \"1ms\" here)"), "\(error)")
        }
    }

    @Test func aValueOnSeveralLinesIsRefused() {
        #expect(throws: ProfileError.self) { try lines(["description=one\nloss = 100 %"]) }
    }
}
