/// The sender's side of an ACK: what it delivered and SACKed, RACK's loss detection, recovery and its window.
extension TCPSender {
    /// Takes an ACK that arrived at `now`: delivered segments, losses, the window, the timers.
    public mutating func receive(_ ack: TCPAck, now: Instant) {
        receiveWindow = ack.window
        if let timestamp = ack.timestamp { tsRecent = timestamp }
        var delivered = 0
        var newest: SentSegment?
        func consider(_ segment: SentSegment) {
            delivered += 1
            advanceRACK(segment, now: now)
            if newest.map({ segment.sentAt > $0.sentAt || (segment.sentAt == $0.sentAt && segment.end > $0.end) })
                ?? true
            {
                newest = segment
            }
        }
        // As tcp_ack: the SACK block first (tcp_sacktag_write_queue), then the cumulatively acknowledged segments
        // in sequence order (tcp_clean_rtx_queue), so RACK's round trip is the last of these.
        newlySACKed.removeAll(keepingCapacity: true)
        if ack.moreSacked.isEmpty {
            if let block = ack.sacked, !ack.duplicate { takeSACK(block) }
        } else {
            var blocks = ack.moreSacked
            if let block = ack.sacked, !ack.duplicate { blocks.append(block) }
            for block in blocks.sorted(by: { $0.lowerBound < $1.lowerBound }) { takeSACK(block) }
        }
        for segment in newlySACKed { consider(segment) }
        let firstSACKedSentAt = newlySACKed.first?.sentAt
        let advanced = ack.cumulative > sndUna
        if advanced {
            while let first = segments.first, first.end <= ack.cumulative {
                segments.removeFirst()
                switch first.fate {
                case .inFlight:
                    packetsInFlight -= 1
                    consider(first)
                case .lost:
                    lostOut -= 1
                    consider(first)
                case .sacked: sackedOut -= 1
                }
            }
            sndUna = min(ack.cumulative, sndNxt)
            sackedRanges.removeAll { $0.upperBound <= sndUna }
            if let first = sackedRanges.first, first.lowerBound < sndUna { sackedRanges[0] = sndUna..<first.upperBound }
        }
        if let newest {
            let rtt = now - newest.sentAt
            timer.sample(rtt, sndUna: sndUna, sndNxt: sndNxt)
            minRTT = min(minRTT ?? rtt, rtt)
            congestion.acked(
                AckSample(rtt: rtt, now: now, sndUna: sndUna, sndNxt: sndNxt, pacingRate: pacingRate), window: &window)
        }
        var newlyLost = 0
        var armedReorder = false
        if rackAdvanced {
            rackAdvanced = false
            let detection = detectLosses(now: now)
            newlyLost = detection.lost
            if let wait = detection.wait {
                armReorderTimer(at: timerFires(after: Self.jiffies(wait + Self.minimumTimeout), now: now))
                armedReorder = true
            }
        }
        processProbeAck(ack)
        if state != .open && sndUna >= recoveryPoint {
            if state == .recovery && window.ssthresh < CongestionWindow.infinite { window.cwnd = window.ssthresh }
            state = .open
        }
        if newlyLost > 0 && state == .open { enterRecovery() }
        if state == .recovery {
            reduceWindow(delivered: delivered, newlyLost: newlyLost, advanced: advanced)
        } else if advanced && delivered > 0 && isWindowLimited {
            // tcp_may_raise_cwnd: only an ACK that acknowledges new data grows the window, by all it delivered;
            // segments SACKed by ACKs before it never count (tp->reordering stays 3 here, as nothing detects it).
            congestion.increase(acked: delivered, now: now, window: &window)
        }
        if segments.isEmpty {
            retransmissionDeadline = nil
            reorderDeadline = nil
        } else if (advanced || sacksDataSentBeforeHead(firstSACKedSentAt)) && !armedReorder {
            rearmRetransmissionTimer(now: now)
        }
        scheduleProbe(now: now)
    }

    /// tcp_clean_rtx_queue's FLAG_SET_XMIT_TIMER without a cumulative ACK: an ACK that SACKs data sent before the
    /// head was last (re)transmitted restarts the retransmission timer, so a head resent in recovery gets a full
    /// RTO after the SACKs of what was sent before it stop; SACKs of data sent after it do not extend it (RACK
    /// repairs a lost resend then). Without this the timer ran from the ACK before the resend, and at 1 Mbit/s with
    /// a 2 s queue the model timed out 0.4 times per 1 MB fetch where Linux did 0.05 times (guest's TcpExt).
    private func sacksDataSentBeforeHead(_ firstSACKedSentAt: Instant?) -> Bool {
        guard let firstSACKedSentAt, let head = segments.first else { return false }
        return firstSACKedSentAt < head.sentAt
    }

    /// tcp_process_tlp_ack: a D-SACK says the probed segment had arrived (no loss); an ACK beyond the probe says
    /// the probe repaired a loss, which cuts the window as a fast recovery would.
    private mutating func processProbeAck(_ ack: TCPAck) {
        guard let high = tlpHighSeq, ack.cumulative >= high else { return }
        if !tlpRetransmitted || ack.duplicate {
            tlpHighSeq = nil
        } else if ack.cumulative > high {
            tlpHighSeq = nil
            guard state == .open else { return }
            window.ssthresh = congestion.ssthreshAfterLoss(window: window)
            window.cwnd = window.ssthresh
            window.cwndCount = 0
        }
    }

    /// tcp_sacktag_write_queue for one block (an ACK's blocks go in sequence order): marks SACKed the outstanding
    /// segments inside `block` that no earlier ACK reported, and appends them to `newlySACKed`. Only the parts of
    /// the block outside `sackedRanges` are walked, so a block repeated ACK after ACK costs nothing.
    private mutating func takeSACK(_ block: Range<Int64>) {
        let block = max(block.lowerBound, sndUna)..<max(block.upperBound, sndUna)
        guard !block.isEmpty else { return }
        var start = block.lowerBound
        for known in sackedRanges where known.upperBound > start && known.lowerBound < block.upperBound {
            if known.lowerBound > start { markSACKed(start..<known.lowerBound) }
            start = max(start, known.upperBound)
        }
        if start < block.upperBound { markSACKed(start..<block.upperBound) }
        insertSACKed(block)
    }

    private mutating func markSACKed(_ range: Range<Int64>) {
        var index = firstIndex(atOrAbove: range.lowerBound)
        while index < segments.endIndex, segments[index].end <= range.upperBound {
            switch segments[index].fate {
            case .inFlight: packetsInFlight -= 1
            case .lost: lostOut -= 1
            case .sacked:
                index += 1
                continue
            }
            segments[index].fate = .sacked
            sackedOut += 1
            newlySACKed.append(segments[index])
            index += 1
        }
    }

    /// Adds `block` to the SACKed ranges, merging it with those it touches.
    private mutating func insertSACKed(_ block: Range<Int64>) {
        var merged = block
        var index = sackedRanges.startIndex
        while index < sackedRanges.endIndex {
            let known = sackedRanges[index]
            if known.upperBound < merged.lowerBound {
                index += 1
            } else if known.lowerBound > merged.upperBound {
                break
            } else {
                merged = min(known.lowerBound, merged.lowerBound)..<max(known.upperBound, merged.upperBound)
                sackedRanges.remove(at: index)
            }
        }
        sackedRanges.insert(merged, at: index)
    }

    /// The index of the first outstanding segment starting at or after `seq`, by binary search (segments are in
    /// order).
    private func firstIndex(atOrAbove seq: Int64) -> Int {
        var low = segments.startIndex
        var high = segments.endIndex
        while low < high {
            let middle = (low + high) / 2
            if segments[middle].seq < seq { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// tcp_rack_advance, for each segment an ACK delivers: RACK's round trip becomes this segment's (whether or not
    /// it was sent after the reference), and the reference moves to it when it was sent later (by send time, then
    /// end sequence). A retransmission delivered sooner than the minimum RTT may be acknowledging the original and
    /// is ignored.
    private mutating func advanceRACK(_ segment: SentSegment, now: Instant) {
        let rtt = now - segment.sentAt
        if segment.retransmitted, let minRTT, rtt < minRTT { return }
        rackAdvanced = true
        rackRTT = rtt
        let isNewer =
            rackSentAt.map { segment.sentAt > $0 || (segment.sentAt == $0 && segment.end > rackEndSeq) } ?? true
        guard isNewer else { return }
        rackSentAt = segment.sentAt
        rackEndSeq = segment.end
        rackRetransmitted = segment.retransmitted
    }

    /// tcp_rack_detect_loss: marks lost every segment sent before the newest delivered one and overdue by its
    /// round trip plus the reordering window, and returns how many, with the LATEST remaining time of those not
    /// overdue yet: tcp_rack_mark_lost arms the reorder timer for it, plus TCP_TIMEOUT_MIN_US, rounded up to whole
    /// jiffies, so one expiry marks them all. The kernel walks its segments in send order; in sequence order the walk may stop at
    /// the reference only when the reference was a first transmission, since a delivered retransmission was sent
    /// after segments above it.
    mutating func detectLosses(now: Instant) -> (lost: Int, wait: Duration?) {
        guard let rackSentAt else { return (0, nil) }
        var latest: Duration?
        let reorderWindow =
            (state != .open || sackedOut >= 3)
            ? Duration.zero : min(Duration(attoseconds: (minRTT ?? .zero).attoseconds / 4), timer.srtt ?? .zero)
        var newlyLost = 0
        for index in segments.indices {
            let segment = segments[index]
            if segment.seq >= rackEndSeq && !rackRetransmitted { break }
            guard segment.fate == .inFlight else { continue }
            let sentAfter = segment.sentAt > rackSentAt || (segment.sentAt == rackSentAt && segment.end > rackEndSeq)
            if sentAfter { continue }
            let due = segment.sentAt + rackRTT + reorderWindow
            if due <= now {
                segments[index].fate = .lost
                packetsInFlight -= 1
                lostOut += 1
                newlyLost += 1
            } else {
                latest = max(latest ?? due - now, due - now)
            }
        }
        return (newlyLost, latest)
    }

    /// TCP_TIMEOUT_MIN_US: the floor Linux adds to the reorder timer's wait.
    static let minimumTimeout = Duration.milliseconds(2)
    /// One jiffy at HZ = 250, the tick of Debian's and most distributions' kernels: timers wait whole jiffies.
    static let jiffy = Duration.milliseconds(4)

    /// usecs_to_jiffies: `wait` rounded up to whole jiffies.
    static func jiffies(_ wait: Duration) -> Duration {
        let tick = jiffy.nanoseconds
        let wait = max(wait.nanoseconds, 0)
        let partial = wait % tick
        return .nanoseconds(partial == 0 ? wait : (wait - partial).addingSaturating(tick))
    }

    /// tcp_enter_recovery: ssthresh from the congestion control, PRR from here.
    mutating func enterRecovery() {
        state = .recovery
        recoveries += 1
        priorCwnd = max(window.cwnd, 1)
        prrDelivered = 0
        prrOut = 0
        recoveryPoint = sndNxt
        window.ssthresh = congestion.ssthreshAfterLoss(window: window)
        window.cwndCount = 0
        tlpHighSeq = nil
        probeDeadline = nil
    }

    /// tcp_cwnd_reduction: Proportional Rate Reduction of the window during recovery.
    mutating func reduceWindow(delivered: Int, newlyLost: Int, advanced: Bool) {
        guard delivered > 0 else { return }
        let delta = window.ssthresh - packetsInFlight
        prrDelivered += delivered
        var sendCount: Int
        if delta < 0 {
            sendCount = (window.ssthresh * prrDelivered + priorCwnd - 1) / priorCwnd - prrOut
        } else {
            sendCount = max(prrDelivered - prrOut, delivered)
            if advanced && newlyLost == 0 { sendCount += 1 }
            sendCount = min(delta, sendCount)
        }
        sendCount = max(sendCount, prrOut == 0 ? 1 : 0)
        window.cwnd = max(packetsInFlight + sendCount, 1)
    }
}
