// The receiving half of an emulated TCP connection direction, as Linux's receiver ACKs (net/ipv4/tcp_input.c,
// __tcp_ack_snd_check, tcp_event_data_recv; tcp_timer.c's delayed ACK):
//
// - in order: the bytes are released to the application at once; an ACK goes out when more than one full
//   segment is unacknowledged (every second segment), else after the delayed-ACK timeout (40 ms, TCP_ATO_MIN);
// - quick ACKs: the first 16 segments (TCP_MAX_QUICKACKS), and the first after a pause longer than an RTO, are
//   ACKed at once, as Linux does to get slow start going;
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
// Receive window (autotuning, approximate; tcp_rcv_space_adjust): it opens at 64 KiB; once per round trip, when
// the application got more bytes than in the round before, window = 2 · copied + 16 · MSS, plus twice that times
// the growth ratio, up to 3 MiB (tcp_rmem's 6 MiB at tcp_adv_win_scale 1). Its round trip is the path's base
// RTT, given by the link, where Linux measures it from timestamps.

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

    /// The next byte expected (rcv_nxt); everything before it was released.
    public private(set) var rcvNxt: Int64 = 0
    /// The advertised window, in bytes.
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
    private var roundStart: Instant?
    private var roundCopied = 0
    private var lastRoundCopied = 0

    public init() {}

    /// True while bytes wait behind a hole (a lost segment): the application gets nothing until it is repaired.
    public var isHeadOfLineBlocked: Bool { !outOfOrder.isEmpty }

    /// Takes a segment arriving at `now`; returns the ACK to send at once, if any. `idleRestart` is the pause
    /// after which ACKs turn quick again (the path's RTO); `roundTrip` paces window autotuning.
    public mutating func receive(_ segment: TCPSegment, now: Instant, idleRestart: Duration, roundTrip: Duration)
        -> TCPAck?
    {
        if lastArrival == nil || now - lastArrival! > idleRestart { quickAcksLeft = Self.quickAcks }
        lastArrival = now
        if segment.end <= rcvNxt || outOfOrder.contains(where: { $0.contains(segment.seq) }) {
            return ack(sacked: segment.seq..<segment.end, duplicate: true)
        }
        if segment.seq > rcvNxt {
            insertOutOfOrder(segment.seq..<segment.end)
            let block = outOfOrder.first { $0.contains(segment.seq) } ?? segment.seq..<segment.end
            return ack(sacked: block, duplicate: false)
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
        autotune(copied: released, now: now, roundTrip: roundTrip)
        if hadHole || quickAcksLeft > 0 || unackedBytes > TCPSender.mss {
            if quickAcksLeft > 0 { quickAcksLeft -= 1 }
            return ack(sacked: nil, duplicate: false)
        }
        if delayedAckDeadline == nil { delayedAckDeadline = now + Self.delayedAckTimeout }
        return nil
    }

    /// The delayed ACK, when its timer fires at `now`.
    public mutating func delayedAckFired(now: Instant) -> TCPAck? {
        guard let deadline = delayedAckDeadline, deadline <= now else { return nil }
        return ack(sacked: nil, duplicate: false)
    }

    /// Hands the application the bytes released since the last call.
    public mutating func takeReleased() -> Int {
        defer { releasedBytes = 0 }
        return releasedBytes
    }

    /// The ACK now: `sacked` first (the triggering segment's block, or its D-SACK), then the other out-of-order
    /// blocks, highest first, up to `maximumSACKBlocks` in all.
    private mutating func ack(sacked: Range<Int64>?, duplicate: Bool) -> TCPAck {
        unackedBytes = 0
        delayedAckDeadline = nil
        var more: [Range<Int64>] = []
        let room = Self.maximumSACKBlocks - (sacked == nil ? 0 : 1)
        for block in outOfOrder.reversed() where more.count < room && (duplicate || block != sacked) {
            more.append(block)
        }
        return TCPAck(cumulative: rcvNxt, sacked: sacked, moreSacked: more, duplicate: duplicate, window: window)
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

    /// tcp_rcv_space_adjust, approximately: once per round trip, grow the window to what the sender showed.
    private mutating func autotune(copied: Int, now: Instant, roundTrip: Duration) {
        roundCopied += copied
        guard let start = roundStart else {
            roundStart = now
            return
        }
        guard now - start >= max(roundTrip, .milliseconds(1)) else { return }
        if roundCopied > lastRoundCopied {
            let base = 2 * roundCopied + 16 * TCPSender.mss
            let grow = lastRoundCopied > 0 ? base * (roundCopied - lastRoundCopied) / lastRoundCopied : base
            window = min(Self.maximumWindow, max(window, base + 2 * min(grow, base)))
        }
        lastRoundCopied = roundCopied
        roundCopied = 0
        roundStart = now
    }
}
