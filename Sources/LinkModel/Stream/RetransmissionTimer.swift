// The retransmission timer as Linux computes it (net/ipv4/tcp_input.c, tcp_rtt_estimator and __tcp_set_rto).
//
// For each round-trip sample R, with the error e = R − srtt:
//
//     first sample:  srtt = R,  mdev = 2 R,  rttvar = max(mdev, TCP_RTO_MIN),  mdev_max = rttvar
//     later:         srtt += e / 8
//                    mdev += |e| − mdev / 4    (a sample below srtt adds only an eighth of that, when positive)
//                    mdev_max = max(mdev_max, mdev),  rttvar = max(rttvar, mdev_max)
//     once a round:  rttvar −= (rttvar − mdev_max) / 4 when mdev_max is smaller,  mdev_max = TCP_RTO_MIN
//     rto = srtt + rttvar
//
// mdev and rttvar are four times a mean deviation, as the kernel keeps them (tcp_info's rttvar is mdev / 4). A round
// ends when snd_una passes the snd_nxt of its start (rtt_seq). So the variance term is at least the round's largest
// deviation, never below 200 ms, and falls by at most a quarter of its excess over that a round: the first flight
// of a 200 ms path keeps the handshake's 3 × RTT timeout (600, then about 556 and 517 ms), where RFC 6298's
// per-sample smoothing would have brought it down to about 2 × RTT within a few ACKs.
//
// Before any sample rto is 1 s (TCP_TIMEOUT_INIT); a connection's handshake normally gives the first one. Each
// expiry doubles the wait (`backoff`, capped at TCP_RTO_MAX = 120 s); a new sample clears the backoff, as Linux does
// when an ACK gives a valid RTT.

/// Linux's retransmission timeout: smoothed RTT, RTT variation per round, and exponential backoff.
public struct RetransmissionTimer: Hashable, Sendable {
    /// TCP_RTO_MIN: the smallest variance allowance Linux adds to srtt.
    public static let minimum = Duration.milliseconds(200)
    /// TCP_TIMEOUT_INIT: the timeout before the first RTT sample.
    public static let initial = Duration.seconds(1)
    /// TCP_RTO_MAX: the longest timeout, backoff included.
    public static let maximum = Duration.seconds(120)

    /// Smoothed round-trip time; nil before the first sample.
    public private(set) var srtt: Duration?
    /// The variance allowance the timeout adds to srtt (rttvar_us): at least the round's largest `deviation` and
    /// 200 ms.
    public private(set) var rttvar: Duration = .zero
    /// The smoothed mean deviation of the samples, times four (mdev_us).
    private(set) var deviation: Duration = .zero
    /// The largest `deviation` of this round (mdev_max_us), at least 200 ms.
    private var roundDeviation = Int128(0)
    /// The sequence number whose acknowledgement ends this round (rtt_seq).
    private var roundEnd = Int64(0)
    /// The timeout without backoff.
    public private(set) var rto: Duration = RetransmissionTimer.initial
    /// How many times the timer expired since the last valid sample (icsk_backoff).
    public private(set) var backoff = 0

    public init() {}

    /// Takes one round-trip sample from an ACK that left `sndUna` and `sndNxt`, and recomputes rto; clears the
    /// backoff.
    ///
    /// The arithmetic is on attoseconds, the kernel's on microseconds, without `Duration`'s generic conversions:
    /// this runs for every ACK of every flow.
    public mutating func sample(_ rtt: Duration, sndUna: Int64, sndNxt: Int64) {
        let sample = rtt.attoseconds
        let floor = Self.minimum.attoseconds
        var smoothed: Int128
        var variation = rttvar.attoseconds
        if let previous = srtt?.attoseconds {
            var error = sample - previous
            smoothed = previous + error / 8
            var mean = deviation.attoseconds
            if error < 0 {
                error = -error - mean / 4
                if error > 0 { error /= 8 }
            } else {
                error -= mean / 4
            }
            mean += error
            deviation = Duration(attoseconds: mean)
            if mean > roundDeviation {
                roundDeviation = mean
                variation = max(variation, mean)
            }
            if sndUna > roundEnd {
                if roundDeviation < variation { variation -= (variation - roundDeviation) / 4 }
                roundEnd = sndNxt
                roundDeviation = floor
            }
        } else {
            smoothed = sample
            deviation = Duration(attoseconds: sample * 2)
            variation = max(sample * 2, floor)
            roundDeviation = variation
            roundEnd = sndNxt
        }
        smoothed = max(smoothed, 1)
        rttvar = Duration(attoseconds: variation)
        srtt = Duration(attoseconds: smoothed)
        rto = Duration(attoseconds: min(Self.maximum.attoseconds, smoothed + variation))
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
