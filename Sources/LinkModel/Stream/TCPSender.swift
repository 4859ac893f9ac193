import DequeModule

// A Linux TCP sender over an emulated path (net/ipv4/tcp_output.c, tcp_input.c, tcp_recovery.c, tcp_timer.c),
// in segments of MSS = 1448 payload bytes (1500-byte MTU, IPv4, timestamps on).
//
// Window. The sender may have min(cwnd, rwnd) in flight, packets_in_flight = outstanding − SACKed − marked lost
// (a retransmission is in flight again). cwnd starts at the initial window (10), grows by the congestion
// control (CUBIC or Reno) for the segments an ACK delivered while the sender is window-limited
// (tcp_is_cwnd_limited), only on ACKs that advance snd_una (tcp_may_raise_cwnd), and its units are segments, as in
// the kernel.
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
// cut by β as for a fast recovery (tcp_process_tlp_ack). On a connection drawn with a timer wheel (its handshake's
// grid, `TimerWheel`) these timers fire as the kernel's wheel fires them: in whole jiffies, up to a 32 ms step late.
//
// Fast recovery (tcp_enter_recovery): ssthresh = the congestion control's (CUBIC: 0.7 · cwnd, Reno 0.5), then
// Proportional Rate Reduction (RFC 6937, tcp_cwnd_reduction) sends ⌈prr_delivered · ssthresh / prior_cwnd⌉ −
// prr_out while in flight > ssthresh, so the window falls smoothly to ssthresh, and cwnd = ssthresh at the end of
// recovery (when snd_una passes the snd_nxt of its start).
//
// Retransmission timeout (tcp_retransmit_timer, tcp_enter_loss): ssthresh is cut (once per episode), cwnd = 1,
// every segment not SACKed is marked lost and resent in slow start, and the timer backs off (×2 per expiry,
// cleared by the next RTT sample). The timer itself is `RetransmissionTimer`: srtt + rttvar, as tcp_rtt_estimator
// keeps them.
//
// Restart after idle (tcp_cwnd_restart, net.ipv4.tcp_slow_start_after_idle): when the application writes after
// more than one RTO with nothing in flight, ssthresh = max(ssthresh, ¾ cwnd) and cwnd halves per RTO of idle
// time, down to min(initial window, cwnd).
//
// Round-trip samples come from the most recently sent segment an ACK delivers (timestamps make retransmissions
// measurable too).
//
// Units (TSO/GSO): new data leaves in units of several segments, sized by tcp_tso_autosize (`unitSegments`) and
// cut by the window left, as tcp_write_xmit cuts a TSO packet (tcp_mss_split_point). The path carries a unit as
// one packet; the sender keeps one record per segment, so a unit's segments are SACKed, lost and resent one by
// one. A window-limited sender with room for less than a unit waits for the next ACK (tcp_tso_should_defer), so
// units keep their size.
//
// Not modelled: SACK reneging, D-SACK undo of spurious retransmissions, F-RTO, pacing, Nagle (segments go out as
// the application writes), the persist timer (the receive window never closes), and ECN.

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
    /// When the receiver sent it (its timestamp option's TSval), which the sender echoes on its next segments.
    public var timestamp: Instant?

    public init(
        cumulative: Int64, sacked: Range<Int64>? = nil, moreSacked: [Range<Int64>] = [], duplicate: Bool = false,
        window: Int, timestamp: Instant? = nil
    ) {
        self.cumulative = cumulative
        self.sacked = sacked
        self.moreSacked = moreSacked
        self.duplicate = duplicate
        self.window = window
        self.timestamp = timestamp
    }
}

/// The sending half of one emulated TCP connection direction: what to send when, given the ACKs it gets.
///
/// Pure and deterministic: every call takes `now`, and calls come with `now` never decreasing. Lives on the event
/// loop thread of its link.
public struct TCPSender {
    /// The payload bytes of a full segment.
    public static let mss = 1448

    /// The segments a unit of `bytes` holds (tcp_skb_pcount).
    public static func segmentCount(bytes: Int) -> Int { max(1, (bytes + mss - 1) / mss) }

    /// The congestion state (icsk_ca_state).
    public enum State: Hashable, Sendable {
        /// Nothing outstanding is known lost.
        case open
        /// Fast recovery: losses are being repaired while data keeps flowing.
        case recovery
        /// After a retransmission timeout: resending in slow start.
        case loss
    }

    struct SentSegment {
        enum Fate { case inFlight, lost, sacked }
        var seq: Int64
        var length: Int
        var sentAt: Instant
        var fate: Fate
        var retransmitted: Bool
        var end: Int64 { seq + Int64(length) }
    }

    enum Probe { case none, newData, retransmitLast }

    public let settings: TCPSettings
    public internal(set) var window: CongestionWindow
    public internal(set) var timer = RetransmissionTimer()
    public internal(set) var state = State.open
    var congestion: any CongestionControl
    /// The newest ACK's timestamp (ts_recent), echoed on every segment sent.
    public internal(set) var tsRecent: Instant?
    /// How slow start ended without a loss, if it did.
    public var slowStartExit: HyStartExit? { congestion.slowStartExit }

    /// The oldest unacknowledged byte.
    public internal(set) var sndUna: Int64 = 0
    /// The next new byte to send.
    public internal(set) var sndNxt: Int64 = 0
    /// The end of what the application wrote.
    public internal(set) var writeSeq: Int64 = 0
    /// The receiver's advertised window, in bytes.
    public internal(set) var receiveWindow: Int {
        didSet { largestReceiveWindow = max(largestReceiveWindow, receiveWindow) }
    }
    /// The largest window the receiver advertised (max_window), which bounds a unit to half of it.
    public internal(set) var largestReceiveWindow = 0
    public internal(set) var packetsInFlight = 0
    /// The smallest round trip measured.
    public internal(set) var minRTT: Duration?

    var segments = Deque<SentSegment>()
    /// The byte ranges above snd_una the receiver reported holding (its SACK blocks so far), merged and in order.
    var sackedRanges: [Range<Int64>] = []
    /// The segments the ACK being taken newly SACKed, in sequence order (kept to reuse its storage).
    var newlySACKed: [SentSegment] = []
    var lostOut = 0
    var sackedOut = 0
    /// snd_nxt when recovery or loss began (high_seq); the episode ends when snd_una passes it.
    var recoveryPoint: Int64 = 0
    var priorCwnd = 0
    var prrDelivered = 0
    var prrOut = 0
    var rackSentAt: Instant?
    var rackEndSeq: Int64 = 0
    var rackRTT = Duration.zero
    /// Whether an ACK moved RACK since the last loss detection (rack.advanced): only then does an ACK detect.
    var rackAdvanced = false
    /// Whether the RACK reference was a retransmission: then segments above it in sequence were sent before it.
    var rackRetransmitted = false
    var isCwndLimited = false
    var maxPacketsOut = 0
    var cwndUsageSeq: Int64 = 0
    var lastSendAt: Instant?
    /// The retransmission and reorder timers share Linux's one slot (icsk_pending): at most one is set.
    var retransmissionDeadline: Instant? { didSet { updateNextTimer() } }
    var reorderDeadline: Instant? { didSet { updateNextTimer() } }
    var probeDeadline: Instant? { didSet { updateNextTimer() } }
    var probe = Probe.none
    var tlpHighSeq: Int64?
    var tlpRetransmitted = false
    /// The kernel's timer wheel the timers fire on (the connection's grid, from its handshake); nil for exact
    /// timers.
    var timerWheel: TimerWheel?

    /// Segments resent, by any mechanism.
    public internal(set) var retransmissions = 0
    /// Retransmission timeouts.
    public internal(set) var timeouts = 0
    /// Fast recoveries entered.
    public internal(set) var recoveries = 0
    /// Tail loss probes sent.
    public internal(set) var probes = 0

    /// A sender with `settings`, before any data; `receiveWindow` is the peer's initial window.
    public init(settings: TCPSettings = TCPSettings(), receiveWindow: Int = TCPReceiver.initialWindow) {
        self.settings = settings
        self.window = CongestionWindow(cwnd: max(settings.initialWindow, 1))
        self.congestion = settings.congestion.make()
        self.receiveWindow = receiveWindow
        self.largestReceiveWindow = receiveWindow
    }

    /// The handshake's end as this side saw it (`HandshakeAttempts.SideStart`): its first round-trip sample, from
    /// the timestamps even after a retransmission, so the first data segment's timeout is srtt + max(2 · srtt,
    /// 200 ms) rather than TCP_TIMEOUT_INIT's 1 s, and its initial window (one segment after a timeout not undone,
    /// tcp_init_transfer). Called again before anything was sent, it replaces what the first call set.
    public mutating func handshakeCompleted(_ start: HandshakeAttempts.SideStart) {
        timer = RetransmissionTimer()
        timer.sample(start.roundTrip, sndUna: sndUna, sndNxt: sndNxt)
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

    /// The next segment to put on the path at `now`, or nil when the window (or the data) allows none. New data
    /// goes out in units of up to `largestUnit` segments, sized as Linux sizes its TSO packets (`unitSegments`);
    /// retransmissions and probes are single segments.
    public mutating func nextSegment(now: Instant, largestUnit: Int = 1) -> TCPSegment? {
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
        let autosized = unitSegments(largest: largestUnit)
        let room = window.cwnd - packetsInFlight
        if autosized > 1 && room < autosized && unsentBytes > room * Self.mss && shouldDefer(room: room, now: now) {
            noteWindowUse(cwndLimited: true)
            return nil
        }
        return sendNewData(now: now, ignoringWindow: false, segments: min(autosized, room))
    }

    /// tcp_tso_should_defer: with room for less than a whole unit, wait for the ACK that is due soon rather than
    /// send a small one, so that units keep their size once the window limits the sender. Send now when room
    /// is at least a third of the window (tcp_tso_win_divisor), when nothing is outstanding, when the oldest
    /// outstanding segment left less than half a round trip ago (the next ACK is not due soon), or when the last
    /// send was in an earlier jiffy.
    private func shouldDefer(room: Int, now: Instant) -> Bool {
        guard let lastSendAt, jiffyCount(now) == jiffyCount(lastSendAt) else { return false }
        let windowBytes = min(Int64(receiveWindow), Int64(window.cwnd * Self.mss))
        let limit = min(Int64(room * Self.mss), Int64(receiveWindow) - (sndNxt - sndUna))
        guard limit < windowBytes / Self.tsoWindowDivisor, let oldest = segments.first, let srtt = timer.srtt else {
            return false
        }
        return now - oldest.sentAt >= srtt / 2
    }

    /// net.ipv4.tcp_tso_win_divisor's default.
    static let tsoWindowDivisor: Int64 = 3

    /// The jiffy (HZ = 250) `instant` falls in, on the timer wheel's grid when the connection has one.
    func jiffyCount(_ instant: Instant) -> Int64 {
        timerWheel?.jiffy(of: instant) ?? instant.nanoseconds / Self.jiffy.nanoseconds
    }

    /// When a timer armed at `now` for `timeout` fires: as the kernel's timer wheel fires it when the connection
    /// has one (`timerWheel`), else exactly.
    func timerFires(after timeout: Duration, now: Instant) -> Instant {
        timerWheel?.fires(armedAt: now, after: timeout) ?? now + timeout
    }

    /// Sends up to `count` new segments as one unit: as many whole segments as the data and the receive window
    /// allow, each recorded on its own (losses, SACKs and retransmissions stay per segment, as the kernel splits
    /// a TSO packet with tcp_fragment).
    private mutating func sendNewData(now: Instant, ignoringWindow: Bool, segments count: Int = 1) -> TCPSegment? {
        let start = sndNxt
        var end = start
        var sentCount = 0
        while sentCount < count {
            let length = min(Int64(Self.mss), writeSeq - end)
            guard length > 0, end + length - sndUna <= Int64(receiveWindow) else { break }
            if sentCount == 0, packetsInFlight == 0, let lastSendAt {
                congestion.transmissionStarted(idle: now - lastSendAt, now: now)
            }
            segments.append(
                SentSegment(seq: end, length: Int(length), sentAt: now, fate: .inFlight, retransmitted: false))
            end += length
            sentCount += 1
        }
        guard sentCount > 0 else { return nil }
        sndNxt = end
        packetsInFlight += sentCount
        sent(now: now, segments: sentCount)
        if !ignoringWindow { noteWindowUse(cwndLimited: packetsInFlight >= window.cwnd) }
        scheduleProbe(now: now)
        return TCPSegment(seq: start, length: Int(end - start), isRetransmission: false)
    }

    /// tcp_tso_autosize and tcp_xmit_size_goal: how many segments one unit of new data may hold. About 1 ms of the
    /// pacing rate (`pacingRate`), plus 64 KiB >>
    /// (min_rtt / 512 µs) on short paths (tcp_tso_rtt_log), at most 64 KiB less headers and half the largest
    /// window the receiver advertised, and never more than `largest`, what the link lets arrive as one (see
    /// `StreamLink`): one segment on slow links, whose segments arrive apart however the sender grouped them. At
    /// least one segment where Linux takes two (tcp_min_tso_segs): when the window allows, the next segment
    /// follows at once anyway, one serialisation time later. 1 with `tcp.segmentation-offload = off`.
    func unitSegments(largest: Int) -> Int {
        guard largest > 1, settings.segmentationOffload, let pacingRate else { return 1 }
        var bytes = pacingRate >> Self.pacingShift
        if let minRTT {
            let shift = (minRTT.nanoseconds / 1_000) >> Self.tsoRTTLog
            if shift < 32 { bytes += Int64(Self.largestUnitBytes) >> shift }
        }
        var unit = Int(min(bytes, Int64(Self.largestUnitBytes))) / Self.mss
        if largestReceiveWindow > Self.mss { unit = min(unit, largestReceiveWindow / 2 / Self.mss) }
        return max(1, min(unit, Self.largestUnitSegments, largest))
    }

    /// tcp_update_pacing_rate: sk_pacing_rate in bytes per second, the window per srtt at 200 % while cwnd <
    /// ssthresh / 2 and 120 % after; nil before the first round-trip sample.
    var pacingRate: Int64? {
        guard let srtt = timer.srtt else { return nil }
        let percent: Int64 = window.cwnd < window.ssthresh / 2 ? 200 : 120
        let srttMicroseconds = max(srtt.nanoseconds / 1_000, 1)
        let packets = Int64(max(window.cwnd, segments.count))
        return Int64(Self.mss) * packets * percent * 10_000 / srttMicroseconds
    }

    /// sk_pacing_shift: a unit holds about 2^-10 s of the pacing rate.
    static let pacingShift = 10
    /// net.ipv4.tcp_tso_rtt_log's default.
    static let tsoRTTLog = 9
    /// GSO_LEGACY_MAX_SIZE, the largest packet a device takes without BIG TCP.
    static let largestUnitBytes = 65_536
    /// The full segments that fit in one unit once MAX_TCP_HEADER is taken off (tcp_xmit_size_goal).
    static let largestUnitSegments = (largestUnitBytes - 1 - 320) / mss

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
        if index == segments.startIndex, reorderDeadline == nil {
            retransmissionDeadline = timerFires(after: timer.timeout, now: now)
        }
        let segment = segments[index]
        return TCPSegment(seq: segment.seq, length: segment.length, isRetransmission: true)
    }

    private mutating func sent(now: Instant, segments count: Int = 1) {
        lastSendAt = now
        if state == .recovery { prrOut += count }
        if retransmissionDeadline == nil, reorderDeadline == nil {
            retransmissionDeadline = timerFires(after: timer.timeout, now: now)
        }
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
    var isWindowLimited: Bool {
        isCwndLimited || (window.inSlowStart && window.cwnd < 2 * maxPacketsOut)
    }

    /// When the sender next needs `timerFired`: the reorder, probe or retransmission timer. Stored, and kept up to
    /// date as the deadlines change, because the link asks every flow at every event: a computed property read
    /// through the flow copied the whole sender (retaining everything it holds) on each call.
    public internal(set) var nextTimer: Instant?

    private mutating func updateNextTimer() {
        var next = reorderDeadline
        if let at = probeDeadline { next = min(next ?? at, at) }
        if let at = retransmissionDeadline { next = min(next ?? at, at) }
        nextTimer = next
    }
}
