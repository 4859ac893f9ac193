// When the kernel's timer wheel fires a timer (kernel/time/timer.c, HZ = 250). TCP's timers are jiffy timers:
// a timeout is rounded up to whole jiffies (usecs_to_jiffies) and the timer armed in jiffy J for T jiffies expires
// at E = J + T. The wheel files it by T in a level of granularity 1 jiffy (T < 63), 8 (T < 504), 64 (T < 4032), …
// and fires it at the first multiple of that granularity after E (calc_index rounds up strictly, so a timer never
// fires early even when armed at the end of its jiffy). So a 200 ms reorder or probe timer fires up to a jiffy
// late, and a 600 ms retransmission timeout on a 200 ms path up to 32 ms late.

/// The kernel's timer wheel, in a grid of jiffies whose origin lies `phase` before the origin of the times given
/// (the client's connect() for a handshake, `Instant.zero` for a sender).
struct TimerWheel: Hashable, Sendable {
    static let jiffy = TCPSender.jiffy
    /// The coarsest granularity a connection's timers reach (tcp_syn_retries' 64 s: 512 jiffies), times 8: a phase
    /// is drawn below it, and phases apart by a multiple of it fire every timer alike.
    static let span = jiffy * 4096
    let phase: Duration

    /// The same grid, for times measured from `origin` (given as a time measured from the current origin).
    func measured(from origin: Duration) -> TimerWheel {
        let span = Self.span.nanoseconds
        let shifted = (phase.nanoseconds + origin.nanoseconds) % span
        return TimerWheel(phase: .nanoseconds(shifted < 0 ? shifted + span : shifted))
    }

    /// The jiffy `time` falls in.
    func jiffy(of time: Duration) -> Int64 { (phase + time).nanoseconds / Self.jiffy.nanoseconds }

    /// When a timer armed at `armed` for `timeout` fires.
    func fires(armedAt armed: Duration, after timeout: Duration) -> Duration {
        let jiffy = Self.jiffy.nanoseconds
        let length = (max(timeout.nanoseconds, 0) + jiffy - 1) / jiffy
        var granularity: Int64 = 1
        var levelEnd: Int64 = 63
        while length >= levelEnd && granularity < 1 << 21 {
            granularity <<= 3
            levelEnd <<= 3
        }
        let expiry = self.jiffy(of: armed) + length
        return .nanoseconds((expiry / granularity + 1) * granularity * jiffy) - phase
    }

    /// When a timer armed at `now` for `timeout` fires, on the instants' clock.
    func fires(armedAt now: Instant, after timeout: Duration) -> Instant {
        Instant(nanoseconds: fires(armedAt: .nanoseconds(now.nanoseconds), after: timeout).nanoseconds)
    }

    /// The jiffy `instant` falls in.
    func jiffy(of instant: Instant) -> Int64 { jiffy(of: .nanoseconds(instant.nanoseconds)) }
}
