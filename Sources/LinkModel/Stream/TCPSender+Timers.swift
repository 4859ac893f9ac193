/// The sender's timers: the reorder timer, the tail loss probe and the retransmission timeout, which share one
/// slot as in Linux (icsk_pending).
extension TCPSender {
    /// tcp_rack_mark_lost's inet_csk_reset_xmit_timer(ICSK_TIME_REO_TIMEOUT): the reorder timer takes the
    /// retransmission timer's slot, so the ACK that arms it does not restart the retransmission timeout.
    mutating func armReorderTimer(at deadline: Instant) {
        retransmissionDeadline = nil
        probeDeadline = nil
        reorderDeadline = deadline
    }

    /// tcp_rearm_rto: the retransmission timer takes the slot back. In place of a pending reorder timer it counts
    /// from the oldest outstanding segment's transmission (tcp_rto_delta_us), at least one jiffy ahead; otherwise
    /// one timeout from now.
    mutating func rearmRetransmissionTimer(now: Instant) {
        guard let head = segments.first else {
            retransmissionDeadline = nil
            reorderDeadline = nil
            return
        }
        if reorderDeadline != nil {
            reorderDeadline = nil
            retransmissionDeadline = timerFires(after: max(head.sentAt + timer.timeout - now, Self.jiffy), now: now)
        } else {
            retransmissionDeadline = timerFires(after: timer.timeout, now: now)
        }
    }

    /// What a loss probe waits beyond 2 · srtt with more than one segment out.
    private static let probeAllowance = Duration.milliseconds(2)

    /// tcp_schedule_loss_probe: a probe 2 · srtt after the last transmission while nothing else would send, at
    /// the latest when the retransmission timer would fire.
    /// (Duration's own `*` and `/` by an integer convert it generically, a runtime call per ACK; the attoseconds
    /// arithmetic here is theirs.)
    mutating func scheduleProbe(now: Instant) {
        probeDeadline = nil
        guard state == .open, tlpHighSeq == nil, reorderDeadline == nil, !segments.isEmpty, let srtt = timer.srtt else {
            return
        }
        if packetsInFlight < window.cwnd && unsentBytes > 0 { return }
        let timeout =
            Duration(attoseconds: srtt.attoseconds * 2)
            + (segments.count == 1 ? RetransmissionTimer.minimum : Self.probeAllowance)
        guard let retransmissionDeadline else {
            probeDeadline = timerFires(after: timeout, now: now)
            return
        }
        // Capped at the retransmission timeout, which the probe replaces in the kernel's one slot: that deadline
        // is already on the wheel, so the cap is taken after rounding.
        let capped = timerFires(after: min(timeout, retransmissionDeadline - now), now: now)
        probeDeadline = min(capped, retransmissionDeadline)
    }

    /// Runs the timers due by `now`. The reorder timer (tcp_rack_reo_timeout) marks what is overdue, without
    /// arming itself again; a loss it finds outside a recovery (after a timeout too) starts one, with PRR's first
    /// step, and within one leaves the window to the ACKs. Then it gives the slot back to the retransmission timer.
    public mutating func timerFired(now: Instant) {
        if let deadline = reorderDeadline, deadline <= now {
            let before = packetsInFlight
            let lost = detectLosses(now: now).lost
            if lost > 0, before != packetsInFlight, state != .recovery {
                enterRecovery()
                reduceWindow(delivered: 1, newlyLost: lost, advanced: false)
            }
            rearmRetransmissionTimer(now: now)
        }
        if let deadline = probeDeadline, deadline <= now {
            probeDeadline = nil
            sendProbe(now: now)
        }
        if let deadline = retransmissionDeadline, deadline <= now {
            timeOut(now: now)
        }
    }

    /// tcp_send_loss_probe: one segment outside the window, new data if there is any, else the last one again.
    private mutating func sendProbe(now: Instant) {
        guard state == .open, !segments.isEmpty else { return }
        probes += 1
        let canSendNew = unsentBytes > 0 && sndNxt + Int64(min(Self.mss, unsentBytes)) - sndUna <= Int64(receiveWindow)
        probe = canSendNew ? .newData : .retransmitLast
        tlpRetransmitted = !canSendNew
        retransmissionDeadline = timerFires(after: timer.timeout, now: now)
    }

    /// tcp_retransmit_timer and tcp_enter_loss: everything not SACKed is lost; slow start from one segment.
    private mutating func timeOut(now: Instant) {
        guard !segments.isEmpty else {
            retransmissionDeadline = nil
            return
        }
        timeouts += 1
        if state == .open { window.ssthresh = congestion.ssthreshAfterLoss(window: window) }
        congestion.retransmissionTimedOut()
        for index in segments.indices where segments[index].fate == .inFlight {
            segments[index].fate = .lost
            lostOut += 1
        }
        packetsInFlight = 0
        window.cwnd = 1
        window.cwndCount = 0
        state = .loss
        recoveryPoint = sndNxt
        timer.backOff()
        retransmissionDeadline = timerFires(after: timer.timeout, now: now)
        reorderDeadline = nil
        probeDeadline = nil
        probe = .none
        tlpHighSeq = nil
    }

    /// Restarts a backed-off retransmission timer from `now` without backoff, for a path that just changed (a
    /// live profile switch): the sender retries within one RTO instead of waiting out a long backoff.
    public mutating func pathChanged(now: Instant) {
        guard !segments.isEmpty, timer.backoff > 0 else { return }
        timer.clearBackoff()
        if reorderDeadline == nil { retransmissionDeadline = timerFires(after: timer.timeout, now: now) }
    }
}
