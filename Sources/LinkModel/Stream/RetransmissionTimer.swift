// The retransmission timer of RFC 6298, as Linux computes it (net/ipv4/tcp_input.c, tcp_rtt_estimator and
// __tcp_set_rto).
//
// For each round-trip sample R:
//
//     first sample:  srtt = R,                          rttvar = R / 2
//     later:         rttvar = 3/4 rttvar + 1/4 |srtt − R|,  srtt = 7/8 srtt + 1/8 R
//     rto = srtt + max(4 · rttvar, TCP_RTO_MIN)            (Linux floors the variance term, not the sum, at 200 ms)
//
// Before any sample rto is 1 s (TCP_TIMEOUT_INIT); a connection's handshake normally gives the first one. Each expiry doubles the wait (`backoff`, capped at
// TCP_RTO_MAX = 120 s); a new sample clears the backoff, as Linux does when an ACK gives a valid RTT.

/// Linux's retransmission timeout: smoothed RTT, RTT variance, and exponential backoff.
public struct RetransmissionTimer: Hashable, Sendable {
    /// TCP_RTO_MIN: the smallest variance allowance Linux adds to srtt.
    public static let minimum = Duration.milliseconds(200)
    /// TCP_TIMEOUT_INIT: the timeout before the first RTT sample.
    public static let initial = Duration.seconds(1)
    /// TCP_RTO_MAX: the longest timeout, backoff included.
    public static let maximum = Duration.seconds(120)

    /// Smoothed round-trip time; nil before the first sample.
    public private(set) var srtt: Duration?
    /// Round-trip time variation.
    public private(set) var rttvar: Duration = .zero
    /// The timeout without backoff.
    public private(set) var rto: Duration = RetransmissionTimer.initial
    /// How many times the timer expired since the last valid sample (icsk_backoff).
    public private(set) var backoff = 0

    public init() {}

    /// Takes one round-trip sample and recomputes rto; clears the backoff.
    ///
    /// The arithmetic is on attoseconds, as `Duration`'s own operators do it (the same truncating divisions, so the
    /// same results), without their generic conversions: this runs for every ACK of every flow.
    public mutating func sample(_ rtt: Duration) {
        let sample = rtt.attoseconds
        var variance: Int128
        let smoothed: Int128
        if let previous = srtt?.attoseconds {
            let error = previous > sample ? previous - sample : sample - previous
            variance = rttvar.attoseconds * 3 / 4 + error / 4
            smoothed = previous * 7 / 8 + sample / 8
        } else {
            smoothed = sample
            variance = sample / 2
        }
        rttvar = Duration(attoseconds: variance)
        srtt = Duration(attoseconds: smoothed)
        variance *= 4
        rto = Duration(attoseconds: min(Self.maximum.attoseconds, smoothed + max(variance, Self.minimum.attoseconds)))
        backoff = 0
    }

    /// Notes an expiry: the next timeout waits twice as long.
    public mutating func backOff() {
        backoff = min(backoff + 1, 30)
    }

    /// How long the timer waits now: rto doubled per expiry, at most TCP_RTO_MAX.
    public var timeout: Duration {
        var wait = rto
        for _ in 0..<backoff where wait < Self.maximum { wait *= 2 }
        return min(wait, Self.maximum)
    }
}

extension RetransmissionTimer {
    /// Forgets the backoff (for a path that changed under the sender).
    public mutating func clearBackoff() { backoff = 0 }
}
