/// Where a playing scenario stands: the step whose conditions hold, the step due next, and how long until it.
///
/// Pure: the runner passes in how many steps of the current repetition it applied and how far into that
/// repetition it is, so a test can place a scenario anywhere without a clock.
public struct ScenarioPosition: Sendable, Hashable {
    /// The step in force: the one applied last, or, in a repetition whose first step is not due yet, the previous
    /// repetition's last; nil before the scenario's first step.
    public var current: Scenario.Step?
    /// The step due next; nil once a scenario that does not repeat applied its last step.
    public var next: Scenario.Step?
    /// How long until `next` applies, never negative; nil without a next step.
    public var untilNext: Duration?
    /// Whether `next` belongs to the following repetition: the timeline starts over before it.
    public var nextStartsOver: Bool

    /// The position `elapsed` into a repetition of `scenario` in which the first `applied` steps have been applied,
    /// after `repetitions` whole repetitions.
    public init(of scenario: Scenario, applied: Int, elapsed: Duration, repetitions: Int) {
        let steps = scenario.steps
        let applied = min(max(applied, 0), steps.count)
        if applied > 0 {
            current = steps[applied - 1]
        } else {
            current = repetitions > 0 ? steps.last : nil
        }
        if applied < steps.count {
            next = steps[applied]
            untilNext = max(steps[applied].at - elapsed, .zero)
            nextStartsOver = false
        } else if let period = scenario.repeatPeriod, let first = steps.first {
            next = first
            untilNext = max(period + first.at - elapsed, .zero)
            nextStartsOver = true
        } else {
            next = nil
            untilNext = nil
            nextStartsOver = false
        }
    }
}

extension Scenario {
    /// The period a runner repeats the scenario with: `period`, never shorter than `shortestRepeat` (a scenario
    /// built in code may ask for less).
    var repeatPeriod: Duration? {
        period.map { max($0, Scenario.shortestRepeat) }
    }
}
