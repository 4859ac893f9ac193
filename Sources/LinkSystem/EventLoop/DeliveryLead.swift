import LinkModel

/// How far ahead of a delivery's due time the event loop wakes, to poll up to that time instead of sleeping
/// through the timerfd's wake-up latency.
///
/// On this kind of virtual machine a timerfd fires 20 to 80 µs late, the more so the longer the thread slept, and
/// that lateness is added to every delay linkcond emulates. Waking early and polling epoll with a zero timeout until
/// the due time removes it. Polling is a busy wait, so the lead is a share of the quiet spell before the delivery
/// (the time since timers last ran): at most 1/`divisor` of it, and no more than `longest`. The loop therefore
/// polls at most 1/`divisor` of one core (2.5 % with the standard figures) however the deliveries fall. A lead
/// shorter than `shortest` is not taken, so a busy link, whose timers run microseconds apart and whose wake-ups are
/// not late (the loop has just run), never polls, and an idle loop has no delivery to poll for. Lives on the event
/// loop thread.
struct DeliveryLead {
    /// A fortieth of the quiet spell, from 25 to 150 µs: on this VM a timerfd fired 20–30 µs late at p50 after
    /// 1–2 ms of sleep, 43–57 µs after 10 ms and 80 µs after 100 ms, with a tail to about 100 µs. A twentieth
    /// polled 4 % of a core for one message every 3 ms through 10 ms of delay, for the same precision.
    static let standard = DeliveryLead(divisor: 40, shortest: .microseconds(25), longest: .microseconds(150))

    /// The lead is at most the quiet spell divided by this.
    let divisor: Int
    /// A shorter lead is not taken.
    let shortest: Duration
    /// The lead after a long quiet spell; zero turns leads off.
    let longest: Duration

    /// What the loop does about its earliest deadline.
    enum Step: Equatable {
        /// No lead: the timerfd is armed as usual.
        case unled
        /// Arm the timerfd for this instant, ahead of the due time.
        case wake(at: Instant)
        /// The due time is within the lead: poll the descriptors without sleeping until it comes.
        case poll
    }

    /// The lead for a delivery due `quiet` after timers last ran; zero when it earns none.
    func lead(after quiet: Duration) -> Duration {
        let lead = min(quiet / divisor, longest)
        return lead >= shortest && lead > .zero ? lead : .zero
    }

    /// The step toward a delivery due at `deadline`, when it is `now` and timers last ran at `timersLastRan`.
    func step(toward deadline: Instant, now: Instant, timersLastRan: Instant) -> Step {
        let lead = lead(after: deadline - timersLastRan)
        guard lead > .zero, deadline > now else { return .unled }
        let wake = deadline - lead
        return wake <= now ? .poll : .wake(at: wake)
    }
}
