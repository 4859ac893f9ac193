import LinkModel
import LinkProfiles
import Testing

/// What a bad profile reports: the file and line, the offending text, and what was expected.
@Suite(.timeLimit(.minutes(5)))
struct ProfileErrorTests {
    /// The error that parsing `text` as `edge.profile` throws.
    private func error(_ text: String) -> ProfileError? {
        do {
            _ = try Profile(parsing: text, name: "edge", file: "edge.profile")
            return nil
        } catch {
            return error
        }
    }

    @Test func aBadUnitNamesFileLineTextAndWhatWasExpected() {
        let error = error("description = Edge\nbandwidth = 240 kbit/s\ndownlink.delay = 400 mss")
        #expect(
            error?.description
                == #"edge.profile:3: "downlink.delay = 400 mss": expected a duration such as "400 ms" (units: ns, µs, us, ms, s)"#
        )
        #expect(error?.file == "edge.profile")
        #expect(error?.line == 3)
        #expect(error?.text == "downlink.delay = 400 mss")
    }

    /// The units docs/reference/profiles.md lists for durations and rates all parse; a bad unit's error names each.
    @Test func aBadUnitsErrorNamesEveryUnitTheREADMEDocuments() throws {
        let durations = ["ns", "µs", "us", "ms", "s"]
        let rates = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "kbps", "Mbps", "Gbps", "B/s", "KB/s", "MB/s", "GB/s"]
        let durationError = try #require(error("delay = 5 mss")?.description)
        let rateError = try #require(error("bandwidth = 5 Mbits")?.description)

        for unit in durations {
            #expect(error("delay = 5 \(unit)") == nil, "\(unit)")
            #expect(
                durationError.contains(" \(unit),") || durationError.contains(" \(unit))"), "\(unit): \(durationError)")
        }
        for unit in rates {
            #expect(error("bandwidth = 5 \(unit)") == nil, "\(unit)")
            #expect(rateError.contains(" \(unit),") || rateError.contains(" \(unit))"), "\(unit): \(rateError)")
        }
    }

    @Test func theOffendingTextLeavesOutTheComment() {
        #expect(error("delay = fast  # very")?.text == "delay = fast")
    }

    @Test func aNumberWithoutAUnitIsAnError() {
        let error = error("delay = 400")
        #expect(error?.kind == .missingUnit(expected: #"a duration such as "400 ms" (units: ns, µs, us, ms, s)"#))
        #expect(
            error?.description
                == #"edge.profile:1: "delay = 400": missing unit: expected a duration such as "400 ms" (units: ns, µs, us, ms, s)"#
        )
    }

    @Test func zeroStillNeedsAUnit() {
        #expect(error("loss = 0")?.kind == .missingUnit(expected: #"a percentage from 0 % to 100 %, such as "1 %""#))
    }

    @Test func aLineWithoutEqualsIsMalformed() {
        let error = error("\n\ndelay 400 ms")
        #expect(error?.kind == .malformedLine)
        #expect(
            error?.description == #"edge.profile:3: "delay 400 ms": expected "key = value" (a comment starts with #)"#)
    }

    @Test func anEmptyValueIsMissing() {
        #expect(
            error("delay =")?.description
                == #"edge.profile:1: "delay =": missing value: expected a duration such as "400 ms" (units: ns, µs, us, ms, s)"#
        )
    }

    @Test func anUnknownKeySuggestsTheClosestKnownKey() {
        let error = error("dowlink.delay = 400 ms")
        #expect(error?.kind == .unknownKey("dowlink.delay", suggestion: "downlink.delay"))
        #expect(
            error?.description
                == #"edge.profile:1: "dowlink.delay = 400 ms": unknown key "dowlink.delay"; did you mean "downlink.delay"?"#
        )
    }

    @Test func anUnknownKeyFarFromAnyListsTheKnownKeys() {
        let error = error("colour = blue")
        #expect(error?.kind == .unknownKey("colour", suggestion: nil))
        #expect(error?.description.contains("known keys: description, bandwidth, delay") == true)
    }

    /// Typo suggestions compare names of similar length only, so a megabyte-long key is refused as fast as a short one
    /// (a quadratic edit distance over it would take many minutes).
    @Test(.timeLimit(.minutes(1))) func aMegabyteLongUnknownKeyIsRefusedWithTheKnownKeys() {
        let key = String(repeating: "delay", count: 1 << 18)
        let error = error("\(key) = 5 ms")
        #expect(error?.kind == .unknownKey(key, suggestion: nil))
        #expect(error?.description.hasSuffix("(per-direction keys also take uplink. or downlink.)") == true)
    }

    @Test func keysAreCaseSensitiveWithAHint() {
        #expect(error("Delay = 5 ms")?.kind == .unknownKey("Delay", suggestion: "delay"))
    }

    @Test func aDuplicateKeyNamesTheFirstLine() {
        let error = error("delay = 5 ms\nloss = 1 %\ndelay = 6 ms")
        #expect(error?.kind == .duplicateKey("delay", firstLine: 1))
        #expect(
            error?.description
                == #"edge.profile:3: "delay = 6 ms": "delay" is already set on line 1; set each key once"#)
    }

    @Test func bothDirectionAndPrefixedKeysAreNotDuplicates() {
        #expect(error("delay = 5 ms\nuplink.delay = 6 ms\ndownlink.delay = 7 ms") == nil)
    }

    @Test func negativeValuesAreErrors() {
        #expect(
            error("delay = -5 ms")?.kind
                == .negativeValue(expected: #"a duration such as "400 ms" (units: ns, µs, us, ms, s)"#))
        #expect(error("downlink.jitter = -1 ms")?.line == 1)
        #expect(error("seed = -3")?.kind == .negativeValue(expected: #"an unsigned integer such as "42", or "random""#))
        if case .negativeValue = error("loss = -1 %")?.kind {} else { Issue.record("negative loss accepted") }
        if case .negativeValue = error("bandwidth = -1 Mbit/s")?.kind {
        } else {
            Issue.record("negative bandwidth accepted")
        }
    }

    @Test func lossAboveOneHundredPercentIsOutOfRange() {
        let error = error("loss = 100.5 %")
        #expect(error?.kind == .outOfRange(expected: #"a percentage from 0 % to 100 %, such as "1 %""#))
        #expect(
            error?.description
                == #"edge.profile:1: "loss = 100.5 %": out of range: expected a percentage from 0 % to 100 %, such as "1 %""#
        )
    }

    @Test func zeroBandwidthIsAnError() {
        let error = error("uplink.bandwidth = 0 kbit/s")
        if case .zeroValue = error?.kind {
        } else {
            Issue.record("zero bandwidth accepted: \(String(describing: error))")
        }
        #expect(
            error?.description.hasPrefix(
                #"edge.profile:1: "uplink.bandwidth = 0 kbit/s": zero would stop all traffic: expected a rate"#) == true
        )
    }

    @Test func zeroQueueIsAnError() {
        if case .zeroValue = error("queue = 0 B")?.kind {} else { Issue.record("zero queue accepted") }
    }

    @Test(arguments: [
        "delay = fast", "delay = 1.2.3 ms", "delay = .5 ms", "delay = 5. ms", "delay = 1e3 ms", "loss = nan %",
        "bandwidth = 10 Mb/s", "queue = 10 pkts", "fault = maybe", "seed = 1.5", "description = \"unterminated",
        "delay = \"5 ms\"",
    ])
    func malformedValuesAreInvalid(line: String) {
        if case .invalidValue = error(line)?.kind {
        } else {
            Issue.record("\"\(line)\" gave \(String(describing: error(line)))")
        }
    }

    @Test func aUnitInTheWrongCaseSuggestsTheRightOne() {
        #expect(
            error("bandwidth = 10 MBPS")?.description.contains(#"units are case-sensitive: did you mean "Mbps"?"#)
                == true)
        #expect(error("delay = 10 MS")?.description.contains(#"did you mean "ms"?"#) == true)
    }

    @Test func anErrorAppliesNothing() throws {
        var profile = Profile.none
        #expect(throws: ProfileError.self) { profile = try Profile(parsing: "delay = 5 ms\nloss = 200 %") }
        #expect(profile == Profile.none)
    }

    @Test func aProfileWithoutFileNamesOnlyTheLine() {
        do {
            _ = try Profile(parsing: "delay = 5")
            Issue.record("parsed")
        } catch {
            #expect(error.description.hasPrefix(#"1: "delay = 5": missing unit"#))
        }
    }
}
