import Foundation

// CUBIC as Linux implements it (net/ipv4/tcp_cubic.c; RFC 9438).
//
// After a reduction at window Wmax, the window follows a cubic in the time t since the reduction (the epoch):
//
//     W(t) = C · (t − K)³ + Wmax,        K = ∛(Wmax · (1 − β) / C) = ∛((Wmax − cwnd) / C)
//
// with C = 0.4 and β = 0.7 (717/1024 in the kernel), t counted from the first ACK of the epoch plus the minimum
// RTT (`delay_min`). Each ACK sets the pace cnt = cwnd / (W(t) − cwnd) segments per one-segment increase (100 ·
// cwnd when W(t) ≤ cwnd), at most one increase per 2 segments. In the TCP-friendly region the window grows at
// least as fast as a Reno flow with the same β would, W_est += 1 per cwnd · 15/8 segments (the kernel's
// beta_scale), so CUBIC is never slower than Reno on short round trips. On a loss:
//
//     ssthresh = max(cwnd · β, 2);   Wmax = cwnd, or cwnd · (1 + β) / 2 if cwnd < the previous Wmax (fast convergence)
//
// A retransmission timeout forgets Wmax and the epoch. Before the first loss (Wmax = 0) cnt is at most 20.
// After idle, the epoch moves forward by the idle time (CA_EVENT_TX_START), so the curve does not jump.
//
// HyStart (hystart_update), in slow start with cwnd ≥ 16, by two signs that the window has filled the path:
//
// - ACK train: ACKs arriving no more than 2 ms apart (hystart_ack_delta) from a round's first ACK for longer than
//   (delay_min + ack delay) / 2, the ack delay being the time four 64 KiB units take at the pacing rate, at most
//   1 ms. A round's ACKs run back to back only while the bottleneck was busy for all of it; its receiver must ACK
//   each segment for the train to hold at 2 ms (see TCPReceiver's quick ACKs), and on links slower than about
//   6 Mbit/s one segment alone takes longer than that, so the train never forms there. One longer gap ends the
//   train for the rest of its round.
// - Delay: each round takes the minimum RTT of its first 8 ACKs; once that exceeds
//   delay_min + clamp(delay_min / 8, 4 ms, 16 ms), slow start ends.
//
// Either sets ssthresh = cwnd. A round ends when snd_una passes the snd_nxt of its start. Rounds are counted from
// the first ACK, below cwnd 16 too (upstream 25c1a9ca53db, in 6.1 stable since 6.1.129), so each opens at a
// flight's first ACK, where slow start's own burst has not queued yet. Counted from cwnd 16 only, as before that
// fix, rounds open mid-flight and end slow start well below the bandwidth-delay product.
//
// Time is continuous (nanoseconds) where the kernel counts jiffies; otherwise the arithmetic follows the kernel.

/// CUBIC's window growth and reduction, with HyStart.
public struct CubicWindow: CongestionControl {
    /// C, the cubic's scaling constant (bic_scale 41 / 102.4).
    public static let c = 0.4
    /// β in the kernel's fixed point: 717 / 1024 ≈ 0.7.
    public static let beta = 717
    public static let betaScale = 1024
    /// The TCP-friendly estimate's pace: 8 · (1024 + 717) / 3 / (1024 − 717), integer as in the kernel.
    static let renoBetaScale = 8 * (betaScale + beta) / 3 / (betaScale - beta)
    /// HyStart starts looking at this window (hystart_low_window).
    static let hystartLowWindow = 16
    /// HyStart's samples per round (HYSTART_MIN_SAMPLES).
    static let hystartMinimumSamples = 8
    /// The largest gap between ACKs of one train (hystart_ack_delta_us).
    static let hystartAckDelta = Duration.milliseconds(2)

    /// The window at the last reduction (last_max_cwnd), 0 before the first loss.
    public private(set) var lastMaxCwnd = 0
    /// The start of the current epoch; nil until the first ACK after a reduction.
    public private(set) var epochStart: Instant?
    /// K, in seconds.
    public private(set) var k = 0.0
    /// The cubic's plateau (bic_origin_point).
    public private(set) var originPoint = 0
    /// Segments delivered per one-segment increase (cnt).
    public private(set) var cnt = 0
    /// The smallest RTT seen (delay_min).
    public private(set) var delayMin: Duration?
    /// How HyStart ended slow start, if it did.
    public private(set) var slowStartExit: HyStartExit?
    private var lastCwnd = 0
    private var lastTime: Instant?
    private var ackCount = 0
    private var tcpCwnd = 0
    private var roundEndSeq: Int64 = 0
    private var roundStart: Instant = .zero
    private var lastTrainAck: Instant = .zero
    private var roundMinimumRTT: Duration?
    private var roundSamples = 0

    public init() {}

    public mutating func acked(_ sample: AckSample, window: inout CongestionWindow) {
        if let epochStart, sample.now - epochStart < .seconds(1) { return }
        let delay = max(sample.rtt, .microseconds(1))
        if delayMin.map({ $0 > delay }) ?? true { delayMin = delay }
        if slowStartExit == nil && window.inSlowStart {
            hystartUpdate(sample, delay: delay, window: &window)
        }
    }

    /// hystart_update: ends slow start on an ACK train or a grown delay. Rounds are counted below the low window
    /// too, so that each one opens at a flight's first ACK.
    private mutating func hystartUpdate(_ sample: AckSample, delay: Duration, window: inout CongestionWindow) {
        if sample.sndUna > roundEndSeq {
            roundEndSeq = sample.sndNxt
            roundStart = sample.now
            lastTrainAck = sample.now
            roundMinimumRTT = nil
            roundSamples = 0
        }
        guard window.cwnd >= Self.hystartLowWindow, let delayMin else { return }
        if sample.now - lastTrainAck <= Self.hystartAckDelta {
            lastTrainAck = sample.now
            if sample.now - roundStart > (delayMin + Self.hystartAckDelay(pacingRate: sample.pacingRate)) / 2 {
                slowStartExit = .ackTrain(cwnd: window.cwnd)
                window.ssthresh = window.cwnd
                return
            }
        }
        let current = min(roundMinimumRTT ?? delay, delay)
        roundMinimumRTT = current
        if roundSamples < Self.hystartMinimumSamples {
            roundSamples += 1
            return
        }
        let threshold = min(max(delayMin / 8, .milliseconds(4)), .milliseconds(16))
        if current > delayMin + threshold {
            slowStartExit = .delay(cwnd: window.cwnd)
            window.ssthresh = window.cwnd
        }
    }

    /// hystart_ack_delay: the cushion a train may lose to the sender's own bursts, four 64 KiB units (GSO_MAX_SIZE)
    /// at the pacing rate, at most 1 ms.
    static func hystartAckDelay(pacingRate: Int64?) -> Duration {
        guard let pacingRate, pacingRate > 0 else { return .zero }
        return min(.milliseconds(1), .microseconds(Int64(65_536 * 4) * 1_000_000 / pacingRate))
    }

    public mutating func increase(acked: Int, now: Instant, window: inout CongestionWindow) {
        var acked = acked
        if window.inSlowStart {
            acked = window.slowStart(acked: acked)
            if acked == 0 { return }
        }
        update(cwnd: window.cwnd, acked: acked, now: now)
        window.additiveIncrease(per: cnt, acked: acked)
    }

    /// bictcp_update: the pace `cnt` for the window `cwnd` at `now`.
    mutating func update(cwnd: Int, acked: Int, now: Instant) {
        ackCount += acked
        if lastCwnd == cwnd, let lastTime, now - lastTime <= .microseconds(31_250) { return }
        if epochStart == nil || lastTime != now {
            lastCwnd = cwnd
            lastTime = now
            if epochStart == nil {
                epochStart = now
                ackCount = acked
                tcpCwnd = cwnd
                if lastMaxCwnd <= cwnd {
                    k = 0
                    originPoint = cwnd
                } else {
                    k = cbrt(Double(lastMaxCwnd - cwnd) / Self.c)
                    originPoint = lastMaxCwnd
                }
            }
            let t = (now - epochStart!).seconds + (delayMin ?? .zero).seconds
            let offset = abs(t - k)
            let delta = Int(min(Self.c * offset * offset * offset, 1e9))
            let target = t < k ? originPoint - delta : originPoint + delta
            cnt = target > cwnd ? cwnd / (target - cwnd) : 100 * cwnd
            if lastMaxCwnd == 0 && cnt > 20 { cnt = 20 }
        }
        let perIncrease = max((cwnd * Self.renoBetaScale) >> 3, 1)
        while ackCount > perIncrease {
            ackCount -= perIncrease
            tcpCwnd += 1
        }
        if tcpCwnd > cwnd {
            cnt = min(cnt, cwnd / (tcpCwnd - cwnd))
        }
        cnt = max(cnt, 2)
    }

    /// W(t) of the current epoch, `since` the epoch started, in segments (for tests and the README's curve).
    public func target(since elapsed: Duration) -> Double {
        let t = elapsed.seconds + (delayMin ?? .zero).seconds
        return Double(originPoint) + Self.c * pow3(t - k)
    }

    private func pow3(_ x: Double) -> Double { x * x * x }

    public mutating func ssthreshAfterLoss(window: CongestionWindow) -> Int {
        epochStart = nil
        if window.cwnd < lastMaxCwnd {
            lastMaxCwnd = window.cwnd * (Self.betaScale + Self.beta) / (2 * Self.betaScale)
        } else {
            lastMaxCwnd = window.cwnd
        }
        return max(window.cwnd * Self.beta / Self.betaScale, 2)
    }

    public mutating func retransmissionTimedOut() {
        self = CubicWindow()
    }

    public mutating func transmissionStarted(idle: Duration, now: Instant) {
        guard let start = epochStart, idle > .zero else { return }
        epochStart = min(start + idle, now)
    }
}
