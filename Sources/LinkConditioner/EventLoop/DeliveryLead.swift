/// How far ahead of a delivery's due time the event loop wakes, to poll up to that time instead of sleeping
/// through the timerfd's wake-up latency.
///
/// On this kind of virtual machine a timerfd fires 20 to 80 µs late, the more so the longer the thread slept, and
/// that lateness is added to every delay linkcond emulates. Waking `lead` early and polling epoll with a zero
/// timeout until the due time removes it. Polling is a busy wait, so it is bounded twice: it only ever covers the
/// last `lead` before a delivery, and only for a delivery due at least `quietPeriod` after timers last ran. The
/// loop therefore polls at most lead / quietPeriod of one core (5 % with the standard figures) however the
/// deliveries fall, never when idle, and not on a busy link, whose timers run every few microseconds and whose
/// wake-ups are not late (the loop has just run). Lives on the event loop thread.
struct DeliveryLead {
    /// 100 µs ahead, after 2 ms without timers: on this VM a timerfd fired 43–57 µs late at p50 after 10 ms of
    /// sleep and 80 µs after 100 ms, but 20–30 µs when the loop ran within the last 2 ms.
    static let standard = DeliveryLead(lead: .microseconds(100), quietPeriod: .milliseconds(2))

    /// How long before the due time the loop wakes; zero turns the lead off.
    let lead: Duration
    /// How long before a delivery the loop's timers must have last run for the delivery to earn a lead.
    let quietPeriod: Duration

    /// What the loop does about its earliest deadline.
    enum Step: Equatable {
        /// No lead: the timerfd is armed as usual.
        case unled
        /// Arm the timerfd for this instant, `lead` before the due time.
        case wake(at: Instant)
        /// The due time is within the lead: poll the descriptors without sleeping until it comes.
        case poll
    }

    /// The step toward a delivery due at `deadline`, when it is `now` and timers last ran at `timersLastRan`.
    func step(toward deadline: Instant, now: Instant, timersLastRan: Instant) -> Step {
        guard lead > .zero, deadline > now, timersLastRan + quietPeriod <= deadline else { return .unled }
        let wake = deadline - lead
        return wake <= now ? .poll : .wake(at: wake)
    }
}
