import DequeModule

// A Linux TCP sender over an emulated path (net/ipv4/tcp_output.c, tcp_input.c, tcp_recovery.c, tcp_timer.c),
// in segments of MSS = 1448 payload bytes (1500-byte MTU, IPv4, timestamps on).
//
// Window. The sender may have min(cwnd, rwnd) in flight, packets_in_flight = outstanding − SACKed − marked lost
// (a retransmission is in flight again). cwnd starts at the initial window (10), grows by the congestion
// control (CUBIC or Reno) for every delivered segment while the sender is window-limited (tcp_is_cwnd_limited),
// and its units are segments, as in the kernel.
//
// Loss detection (RACK, RFC 8985, as tcp_rack_detect_loss): T is the send time of the most recently sent segment
// delivered so far, R the round trip of the last segment an ACK delivered (tcp_rack_advance: SACKed ones first,
// then cumulatively acknowledged ones in sequence order, whether or not sent after T). Every segment sent before T
// and not yet delivered is lost once now ≥ its send time + R + reo_wnd, with
// reo_wnd = 0 once 3 segments are SACKed beyond it (the classic dupthresh) or in recovery, else min_rtt / 4.
// So a hole is repaired about one round trip after the loss while data keeps flowing, even when only one segment
// follows it. Segments not overdue yet wait for the reorder timer, armed (tcp_rack_mark_lost) for the latest of
// them plus 2 ms (TCP_TIMEOUT_MIN_US), rounded up to whole jiffies of HZ = 250 (Debian's kernels). That timer
// takes the retransmission timer's place (one slot, as icsk_pending); when it fires, the retransmission timer is
// rearmed one RTO after the oldest outstanding segment was sent (tcp_rearm_rto). A tail loss
// (nothing follows) is probed after PTO = 2 · srtt (+ 200 ms with one segment out), by
// sending new data or resending the last segment (TLP, RFC 8985 §7); if the probe repairs a loss, the window is
// cut by β as for a fast recovery (tcp_process_tlp_ack).
//
// Fast recovery (tcp_enter_recovery): ssthresh = the congestion control's (CUBIC: 0.7 · cwnd, Reno 0.5), then
// Proportional Rate Reduction (RFC 6937, tcp_cwnd_reduction) sends ⌈prr_delivered · ssthresh / prior_cwnd⌉ −
// prr_out while in flight > ssthresh, so the window falls smoothly to ssthresh, and cwnd = ssthresh at the end of
// recovery (when snd_una passes the snd_nxt of its start).
//
// Retransmission timeout (tcp_retransmit_timer, tcp_enter_loss): ssthresh is cut (once per episode), cwnd = 1,
// every segment not SACKed is marked lost and resent in slow start, and the timer backs off (×2 per expiry,
// cleared by the next RTT sample). The timer itself is `RetransmissionTimer`: srtt + max(4 · rttvar, 200 ms).
//
// Restart after idle (tcp_cwnd_restart, net.ipv4.tcp_slow_start_after_idle): when the application writes after
// more than one RTO with nothing in flight, ssthresh = max(ssthresh, ¾ cwnd) and cwnd halves per RTO of idle
// time, down to min(initial window, cwnd).
//
// Round-trip samples come from the most recently sent segment an ACK delivers (timestamps make retransmissions
// measurable too). Not modelled: SACK reneging, D-SACK undo of spurious retransmissions, F-RTO, pacing, TSO
// segment sizing, Nagle (segments go out as the application writes), the persist timer (the receive window
// never closes), and ECN.

/// One segment the sender puts on the path.
public struct TCPSegment: Hashable, Sendable {
    /// The sequence number of its first byte (0 is the stream's first byte).
    public var seq: Int64
    public var length: Int
    public var isRetransmission: Bool

    public var end: Int64 { seq + Int64(length) }
}

/// One ACK as the receiver sends it.
public struct TCPAck: Hashable, Sendable {
    /// Everything before this sequence number has arrived (rcv_nxt).
    public var cumulative: Int64
    /// The first SACK block: the out-of-order bytes held together with the segment whose arrival triggered this
    /// ACK (or, with `duplicate`, that segment alone as a D-SACK).
    public var sacked: Range<Int64>?
    /// The receiver's other SACK blocks, most recent first, so an ACK lost on the way does not lose its news.
    public var moreSacked: [Range<Int64>]
    /// D-SACK: the triggering segment had arrived before (a spurious retransmission).
    public var duplicate: Bool
    /// The receive window the receiver advertises, in bytes.
    public var window: Int

    public init(cumulative: Int64, sacked: Range<Int64>? = nil, moreSacked: [Range<Int64>] = [], duplicate: Bool = false,
                window: Int) {
        self.cumulative = cumulative
        self.sacked = sacked
        self.moreSacked = moreSacked
        self.duplicate = duplicate
        self.window = window
    }
}

/// The sending half of one emulated TCP connection direction: what to send when, given the ACKs it gets.
///
/// Pure and deterministic: every call takes `now`, and calls come with `now` never decreasing. Lives on the event
/// loop thread of its link.
public struct TCPSender {
    /// The payload bytes of a full segment.
    public static let mss = 1448

    /// The congestion state (icsk_ca_state).
    public enum State: Hashable, Sendable {
        /// Nothing outstanding is known lost.
        case open
        /// Fast recovery: losses are being repaired while data keeps flowing.
        case recovery
        /// After a retransmission timeout: resending in slow start.
        case loss
    }

    private struct SentSegment {
        enum Fate { case inFlight, lost, sacked }
        var seq: Int64
        var length: Int
        var sentAt: Instant
        var fate: Fate
        var retransmitted: Bool
        var end: Int64 { seq + Int64(length) }
    }

    private enum Probe { case none, newData, retransmitLast }

    public let settings: TCPSettings
    public private(set) var window: CongestionWindow
    public private(set) var timer = RetransmissionTimer()
    public private(set) var state = State.open
    private var congestion: any CongestionControl

    /// The oldest unacknowledged byte.
    public private(set) var sndUna: Int64 = 0
    /// The next new byte to send.
    public private(set) var sndNxt: Int64 = 0
    /// The end of what the application wrote.
    public private(set) var writeSeq: Int64 = 0
    /// The receiver's advertised window, in bytes.
    public private(set) var receiveWindow: Int
    public private(set) var packetsInFlight = 0
    /// The smallest round trip measured.
    public private(set) var minRTT: Duration?

    private var segments = Deque<SentSegment>()
    /// The byte ranges above snd_una the receiver reported holding (its SACK blocks so far), merged and in order.
    private var sackedRanges: [Range<Int64>] = []
    /// The segments the ACK being taken newly SACKed, in sequence order (kept to reuse its storage).
    private var newlySACKed: [SentSegment] = []
    private var lostOut = 0
    private var sackedOut = 0
    /// snd_nxt when recovery or loss began (high_seq); the episode ends when snd_una passes it.
    private var recoveryPoint: Int64 = 0
    private var priorCwnd = 0
    private var prrDelivered = 0
    private var prrOut = 0
    private var rackSentAt: Instant?
    private var rackEndSeq: Int64 = 0
    private var rackRTT = Duration.zero
    /// Whether an ACK moved RACK since the last loss detection (rack.advanced): only then does an ACK detect.
    private var rackAdvanced = false
    /// Whether the RACK reference was a retransmission: then segments above it in sequence were sent before it.
    private var rackRetransmitted = false
    private var isCwndLimited = false
    private var maxPacketsOut = 0
    private var cwndUsageSeq: Int64 = 0
    private var lastSendAt: Instant?
    /// The retransmission and reorder timers share Linux's one slot (icsk_pending): at most one is set.
    private(set) var retransmissionDeadline: Instant? { didSet { updateNextTimer() } }
    private(set) var reorderDeadline: Instant? { didSet { updateNextTimer() } }
    private var probeDeadline: Instant? { didSet { updateNextTimer() } }
    private var probe = Probe.none
    private var tlpHighSeq: Int64?
    private var tlpRetransmitted = false

    /// Segments resent, by any mechanism.
    public private(set) var retransmissions = 0
    /// Retransmission timeouts.
    public private(set) var timeouts = 0
    /// Fast recoveries entered.
    public private(set) var recoveries = 0
    /// Tail loss probes sent.
    public private(set) var probes = 0

    /// A sender with `settings`, before any data; `receiveWindow` is the peer's initial window.
    public init(settings: TCPSettings = TCPSettings(), receiveWindow: Int = TCPReceiver.initialWindow) {
        self.settings = settings
        self.window = CongestionWindow(cwnd: max(settings.initialWindow, 1))
        self.congestion = settings.congestion.make()
        self.receiveWindow = receiveWindow
    }

    /// The handshake's end as this side saw it (`HandshakeAttempts.SideStart`): its first round-trip sample, from
    /// the timestamps even after a retransmission, so the first data segment's timeout is srtt + 200 ms rather
    /// than TCP_TIMEOUT_INIT's 1 s, and its initial window (one segment after a timeout not undone,
    /// tcp_init_transfer). Called again before anything was sent, it replaces what the first call set.
    public mutating func handshakeCompleted(_ start: HandshakeAttempts.SideStart) {
        timer = RetransmissionTimer()
        timer.sample(start.roundTrip)
        window.cwnd = start.startsAtOneSegment ? 1 : max(settings.initialWindow, 1)
    }

    public var cwnd: Int { window.cwnd }
    public var ssthresh: Int { window.ssthresh }
    /// Bytes written and not yet acknowledged: what the send buffer holds.
    public var bufferedBytes: Int { Int(writeSeq - sndUna) }
    /// Bytes written and never sent.
    public var unsentBytes: Int { Int(writeSeq - sndNxt) }
    /// Segments sent and not yet cumulatively acknowledged.
    public var packetsOut: Int { segments.count }

    /// The send buffer's size: twice the window, at least 64 KiB (roughly tcp_sndbuf_expand's).
    public var sendBufferLimit: Int { max(64 * 1024, 2 * window.cwnd * Self.mss) }
    /// Whether the send buffer has room for more of the application's bytes.
    public var hasSendBufferRoom: Bool { bufferedBytes < sendBufferLimit }

    /// The application wrote `bytes` at `now`; an idle sender may first restart its window.
    public mutating func write(_ bytes: Int, now: Instant) {
        guard bytes > 0 else { return }
        if settings.slowStartAfterIdle, segments.isEmpty, let lastSendAt, now - lastSendAt > timer.rto {
            restartWindow(idle: now - lastSendAt)
        }
        writeSeq += Int64(bytes)
    }

    /// tcp_cwnd_restart: the window after `idle` without anything in flight.
    private mutating func restartWindow(idle: Duration) {
        let restart = min(settings.initialWindow, window.cwnd)
        if window.ssthresh != CongestionWindow.infinite {
            window.ssthresh = max(window.ssthresh, (window.cwnd >> 1) + (window.cwnd >> 2))
        }
        var cwnd = window.cwnd
        var remaining = idle
        while true {
            remaining -= timer.rto
            guard remaining > .zero, cwnd > restart else { break }
            cwnd >>= 1
        }
        window.cwnd = max(cwnd, restart)
        window.cwndCount = 0
    }

    /// The next segment to put on the path at `now`, or nil when the window (or the data) allows none.
    public mutating func nextSegment(now: Instant) -> TCPSegment? {
        switch probe {
        case .none:
            break
        case .newData:
            probe = .none
            if let segment = sendNewData(now: now, ignoringWindow: true) {
                tlpHighSeq = sndNxt
                probeDeadline = nil
                return segment
            }
        case .retransmitLast:
            probe = .none
            if !segments.isEmpty {
                tlpHighSeq = sndNxt
                return retransmit(at: segments.index(before: segments.endIndex), now: now)
            }
        }
        if packetsInFlight >= window.cwnd {
            noteWindowUse(cwndLimited: true)
            return nil
        }
        if lostOut > 0, let index = segments.firstIndex(where: { $0.fate == .lost }) {
            return retransmit(at: index, now: now)
        }
        return sendNewData(now: now, ignoringWindow: false)
    }

    private mutating func sendNewData(now: Instant, ignoringWindow: Bool) -> TCPSegment? {
        let length = min(Self.mss, unsentBytes)
        guard length > 0, sndNxt + Int64(length) - sndUna <= Int64(receiveWindow) else { return nil }
        if packetsInFlight == 0, let lastSendAt { congestion.transmissionStarted(idle: now - lastSendAt, now: now) }
        let segment = SentSegment(seq: sndNxt, length: length, sentAt: now, fate: .inFlight, retransmitted: false)
        segments.append(segment)
        sndNxt += Int64(length)
        packetsInFlight += 1
        sent(now: now)
        if !ignoringWindow { noteWindowUse(cwndLimited: packetsInFlight >= window.cwnd) }
        scheduleProbe(now: now)
        return TCPSegment(seq: segment.seq, length: length, isRetransmission: false)
    }

    private mutating func retransmit(at index: Int, now: Instant) -> TCPSegment {
        if segments[index].fate == .lost {
            segments[index].fate = .inFlight
            lostOut -= 1
            packetsInFlight += 1
        }
        segments[index].sentAt = now
        segments[index].retransmitted = true
        retransmissions += 1
        sent(now: now)
        if index == segments.startIndex, reorderDeadline == nil { retransmissionDeadline = now + timer.timeout }
        let segment = segments[index]
        return TCPSegment(seq: segment.seq, length: segment.length, isRetransmission: true)
    }

    private mutating func sent(now: Instant) {
        lastSendAt = now
        if state == .recovery { prrOut += 1 }
        if retransmissionDeadline == nil, reorderDeadline == nil { retransmissionDeadline = now + timer.timeout }
    }

    /// tcp_cwnd_validate: remembers whether the window, rather than the application, limited this round.
    private mutating func noteWindowUse(cwndLimited: Bool) {
        if sndUna >= cwndUsageSeq || cwndLimited || (!isCwndLimited && segments.count > maxPacketsOut) {
            isCwndLimited = cwndLimited
            maxPacketsOut = segments.count
            cwndUsageSeq = sndNxt
        }
    }

    /// tcp_is_cwnd_limited: whether delivered segments may grow the window.
    private var isWindowLimited: Bool {
        isCwndLimited || (window.inSlowStart && window.cwnd < 2 * maxPacketsOut)
    }

    /// Takes an ACK that arrived at `now`: delivered segments, losses, the window, the timers.
    public mutating func receive(_ ack: TCPAck, now: Instant) {
        receiveWindow = ack.window
        var delivered = 0
        var newest: SentSegment?
        func consider(_ segment: SentSegment) {
            delivered += 1
            advanceRACK(segment, now: now)
            if newest.map({ segment.sentAt > $0.sentAt || (segment.sentAt == $0.sentAt && segment.end > $0.end) }) ?? true {
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
        let advanced = ack.cumulative > sndUna
        if advanced {
            while let first = segments.first, first.end <= ack.cumulative {
                segments.removeFirst()
                switch first.fate {
                case .inFlight: packetsInFlight -= 1; consider(first)
                case .lost: lostOut -= 1; consider(first)
                case .sacked: sackedOut -= 1
                }
            }
            sndUna = min(ack.cumulative, sndNxt)
            sackedRanges.removeAll { $0.upperBound <= sndUna }
            if let first = sackedRanges.first, first.lowerBound < sndUna { sackedRanges[0] = sndUna..<first.upperBound }
        }
        if let newest {
            let rtt = now - newest.sentAt
            timer.sample(rtt)
            minRTT = min(minRTT ?? rtt, rtt)
            congestion.acked(rtt: rtt, now: now, window: &window, sndUna: sndUna, sndNxt: sndNxt)
        }
        var newlyLost = 0
        var armedReorder = false
        if rackAdvanced {
            rackAdvanced = false
            let detection = detectLosses(now: now)
            newlyLost = detection.lost
            if let wait = detection.wait {
                armReorderTimer(at: now + Self.jiffies(wait + Self.minimumTimeout))
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
        } else if delivered > 0 && isWindowLimited {
            congestion.increase(acked: delivered, now: now, window: &window)
        }
        if segments.isEmpty {
            retransmissionDeadline = nil
            reorderDeadline = nil
        } else if advanced && !armedReorder {
            rearmRetransmissionTimer(now: now)
        }
        scheduleProbe(now: now)
    }

    /// tcp_rack_mark_lost's inet_csk_reset_xmit_timer(ICSK_TIME_REO_TIMEOUT): the reorder timer takes the
    /// retransmission timer's slot, so the ACK that arms it does not restart the retransmission timeout.
    private mutating func armReorderTimer(at deadline: Instant) {
        retransmissionDeadline = nil
        probeDeadline = nil
        reorderDeadline = deadline
    }

    /// tcp_rearm_rto: the retransmission timer takes the slot back. In place of a pending reorder timer it counts
    /// from the oldest outstanding segment's transmission (tcp_rto_delta_us), at least one jiffy ahead; otherwise
    /// one timeout from now.
    private mutating func rearmRetransmissionTimer(now: Instant) {
        guard let head = segments.first else {
            retransmissionDeadline = nil
            reorderDeadline = nil
            return
        }
        if reorderDeadline != nil {
            reorderDeadline = nil
            retransmissionDeadline = max(head.sentAt + timer.timeout, now + Self.jiffy)
        } else {
            retransmissionDeadline = now + timer.timeout
        }
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
            case .sacked: index += 1; continue
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
        var low = segments.startIndex, high = segments.endIndex
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
        let isNewer = rackSentAt.map { segment.sentAt > $0 || (segment.sentAt == $0 && segment.end > rackEndSeq) } ?? true
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
    private mutating func detectLosses(now: Instant) -> (lost: Int, wait: Duration?) {
        guard let rackSentAt else { return (0, nil) }
        var latest: Duration?
        let reorderWindow = (state != .open || sackedOut >= 3)
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
    private mutating func enterRecovery() {
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
    private mutating func reduceWindow(delivered: Int, newlyLost: Int, advanced: Bool) {
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

    /// What a loss probe waits beyond 2 · srtt with more than one segment out.
    private static let probeAllowance = Duration.milliseconds(2)

    /// tcp_schedule_loss_probe: a probe 2 · srtt after the last transmission while nothing else would send.
    /// (Duration's own `*` and `/` by an integer convert it generically, a runtime call per ACK; the attoseconds
    /// arithmetic here is theirs.)
    private mutating func scheduleProbe(now: Instant) {
        probeDeadline = nil
        guard state == .open, tlpHighSeq == nil, reorderDeadline == nil, !segments.isEmpty, let srtt = timer.srtt else { return }
        if packetsInFlight < window.cwnd && unsentBytes > 0 { return }
        var timeout = Duration(attoseconds: srtt.attoseconds * 2)
            + (segments.count == 1 ? RetransmissionTimer.minimum : Self.probeAllowance)
        if let retransmissionDeadline { timeout = min(timeout, retransmissionDeadline - now) }
        probeDeadline = now + timeout
    }

    /// When the sender next needs `timerFired`: the reorder, probe or retransmission timer. Stored, and kept up to
    /// date as the deadlines change, because the link asks every flow at every event: a computed property read
    /// through the flow copied the whole sender (retaining everything it holds) on each call.
    public private(set) var nextTimer: Instant?

    private mutating func updateNextTimer() {
        var next = reorderDeadline
        if let at = probeDeadline { next = min(next ?? at, at) }
        if let at = retransmissionDeadline { next = min(next ?? at, at) }
        nextTimer = next
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
        retransmissionDeadline = now + timer.timeout
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
        retransmissionDeadline = now + timer.timeout
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
        if reorderDeadline == nil { retransmissionDeadline = now + timer.timeout }
    }
}
