// CoDel, the controlled-delay drop decision (RFC 8289; the kernel's include/net/codel_impl.h).
//
// CoDel watches each packet's sojourn time s = now − enqueuedAt as it leaves the queue. While s stays at or above
// `target` for a whole `interval` (and more than one MTU is queued), it enters the dropping state: it drops the
// head packet, then keeps dropping one packet at
//
//     drop_next = t + interval / √count,      count = 1, 2, 3, ...
//
// (the control law), so the drop rate rises as the square root of the time spent above target, until a
// packet's sojourn falls below target. A new dropping episode that starts soon after the last one (within
// 16 intervals) resumes from count − lastcount rather than 1. Time is whole nanoseconds; the kernel replaces
// 1/√count with a Newton step in fixed point, which this keeps exact.

/// CoDel's settings: the kernel's and RFC 8289's defaults.
public struct CoDelParameters: Hashable, Sendable {
    /// The sojourn time CoDel tolerates standing in the queue.
    public var target: Duration = .milliseconds(5)
    /// How long sojourn must stay above `target` before the first drop, and the control law's base spacing.
    public var interval: Duration = .milliseconds(100)
    /// A queue holding at most this many bytes is never dropped from: one full-size frame.
    public var mtu: Int = 1514

    public init(target: Duration = .milliseconds(5), interval: Duration = .milliseconds(100), mtu: Int = 1514) {
        self.target = target
        self.interval = interval
        self.mtu = mtu
    }
}

/// CoDel's state for one queue (RFC 8289 section 5's variables), and its drop decisions at dequeue.
struct CoDelState: Hashable, Sendable {
    /// Drops in the current dropping episode.
    private(set) var count = 0
    /// `count` when the last episode started.
    private(set) var lastCount = 0
    /// Whether CoDel is in its dropping state.
    private(set) var dropping = false
    /// When sojourn, above target since then, will have been above for an interval; nil while below target.
    private(set) var firstAboveTime: Instant?
    /// When the next drop is due in the dropping state.
    private(set) var dropNext = Instant.zero

    /// The control law: the next drop, `interval / √count` after `time`.
    static func controlLaw(_ time: Instant, interval: Duration, count: Int) -> Instant {
        let spacing = Double(interval.nanoseconds) / Double(max(count, 1)).squareRoot()
        return time.addingSaturating(nanoseconds: Int64(spacing.rounded()))
    }

    /// Takes the head of `queue` at `now`, dropping what the state machine decides; returns the packet to send
    /// (nil when the queue ran dry) and the drops, oldest first.
    mutating func dequeue(
        from queue: inout PacketFIFO, now: Instant, parameters: CoDelParameters
    ) -> (packet: LinkPacket?, dropped: [LinkPacket]) {
        var (packet, okToDrop) = takeHead(of: &queue, now: now, parameters: parameters)
        guard var current = packet else {
            dropping = false
            return (nil, [])
        }
        var dropped: [LinkPacket] = []
        if dropping {
            if !okToDrop { dropping = false }
            while dropping && now >= dropNext {
                dropped.append(current)
                count += 1
                (packet, okToDrop) = takeHead(of: &queue, now: now, parameters: parameters)
                guard let next = packet, okToDrop else {
                    dropping = false
                    return (packet, dropped)
                }
                current = next
                dropNext = Self.controlLaw(dropNext, interval: parameters.interval, count: count)
            }
        } else if okToDrop {
            dropped.append(current)
            (packet, _) = takeHead(of: &queue, now: now, parameters: parameters)
            dropping = true
            let delta = count - lastCount
            count = delta > 1 && now - dropNext < parameters.interval * 16 ? delta : 1
            dropNext = Self.controlLaw(now, interval: parameters.interval, count: count)
            lastCount = count
            return (packet, dropped)
        }
        return (current, dropped)
    }

    /// RFC 8289's `dodequeue`: the head packet and whether its sojourn has stayed above target for an interval.
    private mutating func takeHead(
        of queue: inout PacketFIFO, now: Instant, parameters: CoDelParameters
    ) -> (packet: LinkPacket?, okToDrop: Bool) {
        guard let packet = queue.popFirst() else {
            firstAboveTime = nil
            return (nil, false)
        }
        let sojourn = now - packet.enqueuedAt
        if sojourn < parameters.target || queue.byteCount <= parameters.mtu {
            firstAboveTime = nil
            return (packet, false)
        }
        guard let firstAbove = firstAboveTime else {
            firstAboveTime = now + parameters.interval
            return (packet, false)
        }
        return (packet, now >= firstAbove)
    }
}
