/// Plays a scenario against a proxy's conditions with event-loop timers.
///
/// Lives on the event loop thread. Each step fires at its time from the start (or from the start of the current
/// repetition); a ramp re-applies its interpolated value every `rampStep` until it ends or the next step comes.
final class ScenarioRunner {
    let scenario: Scenario
    private let loop: EventLoop
    private let apply: (Scenario.Action, _ rampFraction: Double?) -> Void
    private var cycleStart: Instant
    private var nextIndex = 0
    private var timer: EventLoop.TimerID?
    private var activeRamp: (ramp: Ramp, start: Instant)?
    /// When the step applied last was applied: the runner's clock reading on the loop, less the start of the
    /// repetition it belongs to. Never below the step's time; the excess is how late the loop got to it.
    private(set) var currentStepAppliedAt: Duration?
    private(set) var repetitions = 0
    private(set) var finished = false

    static let rampStep: Duration = .milliseconds(100)

    /// Starts playing at once; `apply` receives each action (and, for ramps, the fraction reached).
    init(scenario: Scenario, loop: EventLoop, apply: @escaping (Scenario.Action, Double?) -> Void) {
        self.scenario = scenario
        self.loop = loop
        self.apply = apply
        self.cycleStart = loop.clock.now()
        fire()
    }

    /// The step applied last, if any.
    var currentStep: Scenario.Step? {
        nextIndex > 0 ? scenario.steps[nextIndex - 1] : nil
    }

    /// Time since the current repetition started.
    var elapsed: Duration { loop.clock.now() - cycleStart }

    /// The repeat period, never shorter than `Scenario.shortestRepeat` (a scenario built in code may ask for less).
    private var period: Duration? { scenario.repeatPeriod }

    /// Where the scenario stands at `now`, a reading of the loop's clock: the step in force, the next and when.
    func position(at now: Instant) -> ScenarioPosition {
        ScenarioPosition(of: scenario, applied: nextIndex, elapsed: now - cycleStart, repetitions: repetitions)
    }

    /// Applies every step due by now, in order. A runner that fell behind (the process was suspended, the loop
    /// stalled) finishes the cycle it was in, skips the whole cycles it missed, and plays the current one from its
    /// start: one pass, however many cycles were missed.
    private func fire() {
        timer = nil
        let now = loop.clock.now()
        applyDueSteps(at: now)
        if nextIndex == scenario.steps.count, let period, cycleStart + period <= now {
            let elapsed = (now - cycleStart).nanoseconds
            let cycles = elapsed / period.nanoseconds
            cycleStart = cycleStart + .nanoseconds(cycles &* period.nanoseconds)
            repetitions += Int(cycles)
            nextIndex = 0
            activeRamp = nil
            applyDueSteps(at: now)
        }
        if let (ramp, start) = activeRamp {
            let fraction = (now - start).seconds / ramp.over.seconds
            apply(.ramp(ramp), min(fraction, 1))
            if fraction >= 1 { activeRamp = nil }
        }
        scheduleNext(after: now)
    }

    private func applyDueSteps(at now: Instant) {
        while nextIndex < scenario.steps.count, cycleStart + scenario.steps[nextIndex].at <= now {
            let step = scenario.steps[nextIndex]
            nextIndex += 1
            currentStepAppliedAt = now - cycleStart
            activeRamp = nil
            if case .ramp(let ramp) = step.action {
                activeRamp = (ramp, cycleStart + step.at)
                apply(step.action, 0)
            } else {
                apply(step.action, nil)
            }
        }
    }

    private func scheduleNext(after now: Instant) {
        var deadlines: [Instant] = []
        if nextIndex < scenario.steps.count { deadlines.append(cycleStart + scenario.steps[nextIndex].at) }
        if activeRamp != nil { deadlines.append(now + Self.rampStep) }
        if nextIndex == scenario.steps.count, let period { deadlines.append(cycleStart + period) }
        guard let next = deadlines.min() else {
            finished = true
            return
        }
        timer = loop.schedule(at: next) { [weak self] in self?.fire() }
    }

    func stop() {
        if let timer { loop.cancel(timer) }
        timer = nil
        finished = true
    }
}
