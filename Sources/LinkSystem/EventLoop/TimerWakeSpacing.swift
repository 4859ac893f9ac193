import LinkModel

/// When the event loop's timerfd should fire: at the earliest deadline, but no sooner than `spacing` after timers
/// last ran, so deadlines a few microseconds apart share one wake-up, late by at most `spacing` and never early.
///
/// Re-arming the timerfd for every deadline of a 1 Gbit/s link (segments and arrivals a few µs apart) spent 42 %
/// of the loop in timerfd_settime on a virtual machine, where each arm reprograms the host's timer. The link model
/// computes every event at its own instant, so a late wake-up shifts a delivery by at most `spacing` and never
/// changes a rate. Lives on the event loop thread.
package struct TimerWakeSpacing {
    /// 50 µs: half the 0.1 ms delay-precision target.
    package static let standard = TimerWakeSpacing(spacing: .microseconds(50))

    package let spacing: Duration
    private(set) var lastRun = Instant(nanoseconds: .min)

    /// Timers ran at `now`.
    mutating func timersRan(at now: Instant) {
        lastRun = now
    }

    /// The instant to arm for when the earliest pending deadline is `deadline`, and the earliest exact one (a timer
    /// that has spent its lateness budget already and is never postponed) is `exact`.
    func wake(forEarliest deadline: Instant, exact: Instant? = nil) -> Instant {
        let spaced = max(deadline, lastRun.addingSaturating(nanoseconds: spacing.nanoseconds))
        guard let exact else { return spaced }
        return min(spaced, max(exact, deadline))
    }
}
