// The receiving half of an emulated TCP connection direction, as Linux's receiver ACKs (net/ipv4/tcp_input.c,
// __tcp_ack_snd_check, tcp_event_data_recv; tcp_timer.c's delayed ACK):
//
// - in order: the bytes are released to the application at once; an ACK goes out when more than one full
//   segment is unacknowledged (every second segment), else after the delayed-ACK timeout (40 ms, TCP_ATO_MIN);
// - quick ACKs: the first 16 segments (TCP_MAX_QUICKACKS), and the first after a pause longer than an RTO, are
//   ACKed at once, as Linux does to get slow start going; so is every segment that grows the advertised window
//   (tcp_grow_window sets icsk_ack.quick), which is most of them while autotuning keeps raising the space;
// - out of order (after a hole): the segment waits, nothing is released (head-of-line blocking), and an ACK with
//   its SACK block goes out at once; a segment that fills the hole releases everything contiguous behind it and
//   is ACKed at once;
// - a duplicate is ACKed at once with a D-SACK.
//
// SACK blocks (tcp_sack_new_ofo_skb): an ACK reports up to 3 blocks (what fits beside the timestamps option): first
// the block holding the segment that triggered it (or its D-SACK), then the other out-of-order blocks, highest
// first (Linux sends the most recently changed first; arrivals in the model come in send order, so the highest
// blocks are the most recent ones, bar a repair). So the next ACK repeats what a lost ACK said.
//
// Receive window (autotuning; tcp_rcv_space_adjust, tcp_grow_window):
//
// - the round trip (rcv_rtt_est) comes from the timestamps: each full segment with a new echo gives a sample, now
//   less the echoed ACK's send time, in whole milliseconds as the timestamp clock counts; a smaller sample replaces
//   the estimate, a larger one moves it by an eighth. The first flight echoes the request, one base round trip back;
// - once per estimated round trip, when the application got more bytes than in any round before (at first 10 MSS),
//   the space becomes rcvwin = 2 · copied + 16 · MSS plus twice rcvwin times the growth over that record, in
//   buffer terms: rcvwin / MSS segments of `segmentBuffer` bytes each, half of which counts as window
//   (tcp_adv_win_scale 1), up to 3 MiB (tcp_rmem's 6 MiB);
// - the advertised window (rcv_ssthresh) opens at 64 KiB and follows the space by twice each arriving segment, and
//   every segment that grows it is ACKed at once. While autotuning keeps raising the space (slow start on a long
//   path) nearly every segment is ACKed alone; where the link caps what a round trip delivers, the space stops and
//   ACKs go back to every second segment.

/// Reassembles one direction's segments in order, says how many bytes the application may read, and ACKs.
///
/// Pure and deterministic; lives on the event loop thread of its link.
public struct TCPReceiver {
    /// The window a Linux receiver opens with (tcp_rmem[1] / 2, the largest unscaled window).
    public static let initialWindow = 64 * 1024
    /// The largest window autotuning reaches (tcp_rmem[2] = 6 MiB at tcp_adv_win_scale = 1).
    public static let maximumWindow = 3 * 1024 * 1024
    /// TCP_ATO_MIN: how long a lone in-order segment waits for company before its ACK goes out.
    public static let delayedAckTimeout = Duration.milliseconds(40)
    /// TCP_MAX_QUICKACKS.
    public static let quickAcks = 16
    /// The SACK blocks an ACK carries beside the timestamps option.
    public static let maximumSACKBlocks = 3
    /// rcvmem: the buffer one full segment takes (SKB_TRUESIZE(MSS + MAX_TCP_HEADER) on x86-64, raised in 128-byte
    /// steps until half of it holds the segment).
    static let segmentBuffer = 3_008
    /// rcvq_space.space at the start: TCP_INIT_CWND segments.
    static let initialSpaceRecord = 10 * TCPSender.mss

    /// The next byte expected (rcv_nxt); everything before it was released.
    public private(set) var rcvNxt: Int64 = 0
    /// What autotuning lets the window reach (window_clamp), in bytes.
    public private(set) var space = TCPReceiver.initialWindow
    /// The advertised window (rcv_ssthresh), in bytes: grows toward `space` as segments arrive.
    public private(set) var window = TCPReceiver.initialWindow
    /// Out-of-order ranges waiting for a hole to fill, in order and disjoint.
    private var outOfOrder: [Range<Int64>] = []
    /// Bytes released in order and not yet taken by `takeReleased`.
    public private(set) var releasedBytes = 0
    private var unackedBytes = 0
    private var quickAcksLeft = 0
    private var lastArrival: Instant?
    /// When the delayed ACK goes out, if one is pending.
    public private(set) var delayedAckDeadline: Instant?
    /// rcv_rtt_est: the receiver's round-trip estimate; nil before the first sample.
    public private(set) var roundTripEstimate: Duration?
    private var lastEcho: Instant?
    /// tcp_rcv_space_adjust's measurement: its start, the bytes released before it, and the most bytes released in
    /// one round trip so far (rcvq_space).
    private var measureStart: Instant?
    private var measureStartBytes: Int64 = 0
    private var spaceRecord = TCPReceiver.initialSpaceRecord

    public init() {}

    /// True while bytes wait behind a hole (a lost segment): the application gets nothing until it is repaired.
    public var isHeadOfLineBlocked: Bool { !outOfOrder.isEmpty }

    /// Takes a segment arriving at `now` with its timestamp echo; returns the ACK to send at once, if any.
    /// `idleRestart` is the pause after which ACKs turn quick again (the path's RTO); `roundTrip`, the path's base
    /// round trip, stands for the first flight's sample, which echoes the request.
    public mutating func receive(
        _ segment: TCPSegment, now: Instant, echo: Instant?, idleRestart: Duration, roundTrip: Duration
    ) -> TCPAck? {
        if lastArrival == nil || now - lastArrival! > idleRestart { quickAcksLeft = Self.quickAcks }
        lastArrival = now
        if segment.end <= rcvNxt || outOfOrder.contains(where: { $0.contains(segment.seq) }) {
            return ack(sacked: segment.seq..<segment.end, duplicate: true, now: now)
        }
        measureRoundTrip(segment, now: now, echo: echo, roundTrip: roundTrip)
        let grew = growWindow(length: segment.length)
        if segment.seq > rcvNxt {
            insertOutOfOrder(segment.seq..<segment.end)
            let block = outOfOrder.first { $0.contains(segment.seq) } ?? segment.seq..<segment.end
            return ack(sacked: block, duplicate: false, now: now)
        }
        let hadHole = !outOfOrder.isEmpty
        var end = segment.end
        while let first = outOfOrder.first, first.lowerBound <= end {
            end = max(end, first.upperBound)
            outOfOrder.removeFirst()
        }
        let released = Int(end - rcvNxt)
        rcvNxt = end
        releasedBytes += released
        unackedBytes += released
        adjustSpace(now: now)
        if hadHole || grew || quickAcksLeft > 0 || unackedBytes > TCPSender.mss {
            if quickAcksLeft > 0 { quickAcksLeft -= 1 }
            return ack(sacked: nil, duplicate: false, now: now)
        }
        if delayedAckDeadline == nil { delayedAckDeadline = now + Self.delayedAckTimeout }
        return nil
    }

    /// The delayed ACK, when its timer fires at `now`.
    public mutating func delayedAckFired(now: Instant) -> TCPAck? {
        guard let deadline = delayedAckDeadline, deadline <= now else { return nil }
        return ack(sacked: nil, duplicate: false, now: now)
    }

    /// Hands the application the bytes released since the last call.
    public mutating func takeReleased() -> Int {
        defer { releasedBytes = 0 }
        return releasedBytes
    }

    /// The ACK now: `sacked` first (the triggering segment's block, or its D-SACK), then the other out-of-order
    /// blocks, highest first, up to `maximumSACKBlocks` in all.
    private mutating func ack(sacked: Range<Int64>?, duplicate: Bool, now: Instant) -> TCPAck {
        unackedBytes = 0
        delayedAckDeadline = nil
        var more: [Range<Int64>] = []
        let room = Self.maximumSACKBlocks - (sacked == nil ? 0 : 1)
        for block in outOfOrder.reversed() where more.count < room && (duplicate || block != sacked) {
            more.append(block)
        }
        return TCPAck(
            cumulative: rcvNxt, sacked: sacked, moreSacked: more, duplicate: duplicate, window: window, timestamp: now)
    }

    private mutating func insertOutOfOrder(_ range: Range<Int64>) {
        let index = outOfOrder.firstIndex { $0.lowerBound > range.lowerBound } ?? outOfOrder.endIndex
        outOfOrder.insert(range, at: index)
        var merged: [Range<Int64>] = []
        for block in outOfOrder {
            if let last = merged.last, block.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, block.upperBound)
            } else {
                merged.append(block)
            }
        }
        outOfOrder = merged
    }

    /// tcp_grow_window: a segment of 128 bytes or more raises the advertised window by twice its length (at least
    /// two MSS) while it is below the space; true if it grew, which asks for a quick ACK.
    private mutating func growWindow(length: Int) -> Bool {
        let room = space - window
        guard room > 0, length >= 128 else { return false }
        window += min(room, max(2 * TCPSender.mss, 2 * length))
        return true
    }

    /// tcp_rcv_rtt_measure_ts and tcp_rcv_rtt_update: a full segment with a new echo is a round-trip sample, in
    /// the timestamp clock's whole milliseconds (at least 1).
    private mutating func measureRoundTrip(_ segment: TCPSegment, now: Instant, echo: Instant?, roundTrip: Duration) {
        let sample: Duration
        if let echo {
            guard echo != lastEcho, segment.length >= TCPSender.mss else { return }
            lastEcho = echo
            let milliseconds = now.nanoseconds / 1_000_000 - echo.nanoseconds / 1_000_000
            sample = .milliseconds(max(milliseconds, 1))
        } else {
            guard roundTripEstimate == nil else { return }
            sample = max(roundTrip, .milliseconds(1))
        }
        if let estimate = roundTripEstimate, sample >= estimate {
            roundTripEstimate = estimate - estimate / 8 + sample / 8
        } else {
            roundTripEstimate = sample
        }
    }

    /// tcp_rcv_space_adjust: once per estimated round trip, raises the space when the application got more than in
    /// any round trip before.
    private mutating func adjustSpace(now: Instant) {
        guard let estimate = roundTripEstimate else { return }
        guard let start = measureStart else {
            measureStart = now
            measureStartBytes = rcvNxt
            return
        }
        guard now - start >= estimate else { return }
        let copied = Int(rcvNxt - measureStartBytes)
        if copied > spaceRecord {
            var rcvwin = 2 * copied + 16 * TCPSender.mss
            rcvwin += 2 * (rcvwin * (copied - spaceRecord) / spaceRecord)
            let buffer = min(rcvwin / TCPSender.mss * Self.segmentBuffer, 2 * Self.maximumWindow)
            space = max(space, buffer / 2)
            spaceRecord = copied
        }
        measureStart = now
        measureStartBytes = rcvNxt
    }
}
