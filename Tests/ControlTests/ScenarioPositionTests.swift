import LinkConditioner
import Testing

/// Where a playing scenario stands, as status shows it: the step in force and the next as written, and the wait.
struct ScenarioPositionTests {
    let ride = try! Scenario(
        parsing: """
            0s    edge   # boarding
            20s   set downlink.delay = 800 ms; uplink.delay = 800 ms
            30s   ramp downlink.bandwidth from 1 Mbit/s to 100 kbit/s over 5s
            40s   repeat
            """)

    @Test func aStepIsNamedAsWrittenWithTheNextAndTheWaitUntilIt() {
        let position = ScenarioPosition(of: ride, applied: 1, elapsed: .seconds(5), repetitions: 0)

        #expect(position.current?.text == "edge")
        #expect(position.next?.text == "set downlink.delay = 800 ms; uplink.delay = 800 ms")
        #expect(position.untilNext == .seconds(15))
        #expect(!position.nextStartsOver)
    }

    @Test func afterTheLastStepOfARepeatingScenarioItsFirstStepComesNext() {
        let position = ScenarioPosition(of: ride, applied: 3, elapsed: .seconds(32), repetitions: 2)

        #expect(position.current?.text == "ramp downlink.bandwidth from 1 Mbit/s to 100 kbit/s over 5s")
        #expect(position.next?.text == "edge")
        #expect(position.untilNext == .seconds(8))
        #expect(position.nextStartsOver)
    }

    @Test func theLastStepOfAScenarioThatDoesNotRepeatHasNoNext() throws {
        let once = try Scenario(parsing: "0s lte\n10s edge\n")

        let position = ScenarioPosition(of: once, applied: 2, elapsed: .seconds(12), repetitions: 0)

        #expect(position.current?.text == "edge")
        #expect(position.next == nil && position.untilNext == nil && !position.nextStartsOver)
    }

    @Test func beforeTheFirstStepNothingIsInForceAndEarlyInARepetitionThePreviousLastStepHolds() throws {
        let late = try Scenario(parsing: "5s edge\n10s lte\n20s repeat\n")

        let first = ScenarioPosition(of: late, applied: 0, elapsed: .seconds(2), repetitions: 0)
        let again = ScenarioPosition(of: late, applied: 0, elapsed: .seconds(2), repetitions: 1)

        #expect(first.current == nil && first.next?.text == "edge" && first.untilNext == .seconds(3))
        #expect(again.current?.text == "lte" && again.next?.text == "edge" && again.untilNext == .seconds(3))
    }

    /// A runner that fell behind its next step waits no negative time.
    @Test func aStepAlreadyDueIsDueNow() {
        let position = ScenarioPosition(of: ride, applied: 1, elapsed: .seconds(21), repetitions: 0)

        #expect(position.untilNext == .zero)
    }
}
