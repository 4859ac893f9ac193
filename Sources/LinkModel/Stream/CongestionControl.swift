// The window a Linux sender keeps, in segments, and the two growth rules every congestion control shares
// (net/ipv4/tcp_cong.c):
//
//     slow start (cwnd < ssthresh):   cwnd ← min(cwnd + acked, ssthresh)       one segment per segment delivered,
//                                                                              so the window doubles per round trip
//     additive increase by w:         cwnd_cnt ← cwnd_cnt + acked; each time cwnd_cnt reaches w, cwnd ← cwnd + 1
//
// Linux counts delivered segments (acked plus newly SACKed), which is appropriate byte counting: a delayed ACK
// that covers two segments grows the window by two.

/// A sender's congestion window and slow-start threshold, in segments, as Linux names them.
public struct CongestionWindow: Hashable, Sendable {
    /// The congestion window (snd_cwnd).
    public var cwnd: Int
    /// Credit towards the next additive increase (snd_cwnd_cnt).
    public var cwndCount = 0
    /// The slow-start threshold (snd_ssthresh); `infinite` until the first loss.
    public var ssthresh: Int

    /// TCP_INFINITE_SSTHRESH.
    public static let infinite = 0x7fff_ffff

    public init(cwnd: Int, ssthresh: Int = CongestionWindow.infinite) {
        self.cwnd = cwnd
        self.ssthresh = ssthresh
    }

    /// Whether the sender is in slow start.
    public var inSlowStart: Bool { cwnd < ssthresh }

    /// tcp_slow_start: grows cwnd by `acked` up to ssthresh; returns the acked segments left over.
    public mutating func slowStart(acked: Int) -> Int {
        let grown = min(cwnd + acked, ssthresh)
        let left = acked - (grown - cwnd)
        cwnd = max(cwnd, grown)
        return max(left, 0)
    }

    /// tcp_cong_avoid_ai: one more segment per `w` segments delivered.
    public mutating func additiveIncrease(per w: Int, acked: Int) {
        let w = max(w, 1)
        if cwndCount >= w {
            cwndCount = 0
            cwnd += 1
        }
        cwndCount += acked
        if cwndCount >= w {
            let delta = cwndCount / w
            cwndCount -= delta * w
            cwnd += delta
        }
    }
}

/// What one ACK tells the congestion control (struct ack_sample, with what the hook reads from the socket).
public struct AckSample: Sendable {
    /// The round trip of the newest segment the ACK delivered.
    public var rtt: Duration
    /// When the ACK arrived.
    public var now: Instant
    /// snd_una after the ACK.
    public var sndUna: Int64
    /// snd_nxt when the ACK arrived.
    public var sndNxt: Int64
    /// sk_pacing_rate in bytes per second; nil before the first round-trip sample.
    public var pacingRate: Int64?

    public init(rtt: Duration, now: Instant, sndUna: Int64, sndNxt: Int64, pacingRate: Int64? = nil) {
        self.rtt = rtt
        self.now = now
        self.sndUna = sndUna
        self.sndNxt = sndNxt
        self.pacingRate = pacingRate
    }
}

/// How HyStart ended slow start, and at which window (TcpExt's TCPHystartTrainDetect / TrainCwnd and
/// TCPHystartDelayDetect / DelayCwnd).
public enum HyStartExit: Hashable, Sendable {
    /// ACKs ran back to back for half the minimum round trip.
    case ackTrain(cwnd: Int)
    /// A round's smallest round trip grew past the minimum by the delay threshold.
    case delay(cwnd: Int)
}

/// A congestion control algorithm, with the hooks Linux's `tcp_congestion_ops` calls.
///
/// Pure and deterministic: time comes in as arguments. Lives on its sender's thread.
public protocol CongestionControl: Sendable {
    /// pkts_acked: an ACK delivered segments.
    mutating func acked(_ sample: AckSample, window: inout CongestionWindow)
    /// cong_avoid: grows the window for `acked` delivered segments (only while the sender is window-limited).
    mutating func increase(acked: Int, now: Instant, window: inout CongestionWindow)
    /// ssthresh: the threshold after a loss, from the window when it was detected.
    mutating func ssthreshAfterLoss(window: CongestionWindow) -> Int
    /// set_state(TCP_CA_Loss): a retransmission timeout forgets what the algorithm learnt.
    mutating func retransmissionTimedOut()
    /// cwnd_event(CA_EVENT_TX_START): the sender starts sending after `idle` without data in flight.
    mutating func transmissionStarted(idle: Duration, now: Instant)
    /// How the algorithm ended slow start before any loss, if it did (HyStart); nil for Reno.
    var slowStartExit: HyStartExit? { get }
}

/// Which congestion control a profile asks for (`tcp.congestion`).
public enum CongestionAlgorithm: String, Hashable, Sendable, CaseIterable {
    case cubic
    case reno

    /// A fresh instance of the algorithm.
    public func make() -> any CongestionControl {
        switch self {
        case .cubic: CubicWindow()
        case .reno: RenoWindow()
        }
    }
}
