// NewReno's window (net/ipv4/tcp_cong.c, tcp_reno_cong_avoid and tcp_reno_ssthresh; RFC 5681):
//
//     slow start:              cwnd += delivered segments, up to ssthresh
//     congestion avoidance:    cwnd += 1 per cwnd segments delivered (one segment per round trip)
//     on loss:                 ssthresh = max(cwnd / 2, 2)

/// Reno's additive increase, multiplicative decrease by one half.
public struct RenoWindow: CongestionControl {
    public var slowStartExit: HyStartExit? { nil }

    public init() {}

    public mutating func acked(_ sample: AckSample, window: inout CongestionWindow) {}

    public mutating func increase(acked: Int, now: Instant, window: inout CongestionWindow) {
        var acked = acked
        if window.inSlowStart {
            acked = window.slowStart(acked: acked)
            if acked == 0 { return }
        }
        window.additiveIncrease(per: window.cwnd, acked: acked)
    }

    public mutating func ssthreshAfterLoss(window: CongestionWindow) -> Int {
        max(window.cwnd / 2, 2)
    }

    public mutating func retransmissionTimedOut() {}

    public mutating func transmissionStarted(idle: Duration, now: Instant) {}
}
