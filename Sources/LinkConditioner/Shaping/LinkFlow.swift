import DequeModule

/// One connection's share of a `LinkDirection`: its bytes waiting for the serialiser and its delay line.
///
/// Only counts and times live here; the proxy keeps the bytes themselves, in the same FIFO order. Lives on the
/// event loop thread of its direction.
public final class LinkFlow {
    /// Bytes read from the sender and not yet serialised, stamped with their arrival.
    var arrivals = Deque<ByteBatch>()
    var delayLine = DelayLine()
    /// The sender may not hand the serialiser more bytes before this (a retransmission timeout).
    var stalledUntil = Instant(nanoseconds: .min)
    /// Deficit round robin credit, in bytes of link time.
    var deficit = 0
    /// Whether the flow is in its direction's service ring (it has queued bytes).
    var isActive = false
    /// Whether the flow is already in its direction's list of changed delivery schedules.
    var isMarkedChanged = false
    var isRemoved = false
    /// A datagram flow keeps one arrival per datagram and delivers per-datagram outcomes, in any order.
    let isDatagram: Bool
    var datagramLine = DatagramLine()
    /// The number `enqueueDatagram` gives this flow's next datagram if it accepts it.
    var nextDatagramIndex: UInt64 = 0
    /// The number of the oldest datagram not yet serialised.
    var nextServedIndex: UInt64 = 0
    private let tally: LinkTally

    /// Bytes waiting for the serialiser.
    public private(set) var queuedBytes = 0

    /// Bytes serialised and waiting for their delivery time.
    public var inFlightBytes: Int { isDatagram ? datagramLine.bytes : delayLine.bytes }

    init(tally: LinkTally, isDatagram: Bool = false) {
        self.tally = tally
        self.isDatagram = isDatagram
    }

    /// Removes and returns how many bytes may be delivered to the receiver by `now`.
    public func takeDeliverable(at now: Instant) -> Int {
        let count = delayLine.takeDue(at: now)
        if count > 0 {
            tally.counters.bytesDelivered += count
            tally.counters.inFlightBytes -= count
        }
        return count
    }

    /// Removes and returns the outcomes of a datagram flow's datagrams due by `now`, in delivery order.
    public func takeDeliverableDatagrams(at now: Instant) -> [DatagramDelivery] {
        let due = datagramLine.takeDue(at: now)
        for delivery in due where delivery.copies > 0 {
            tally.counters.bytesDelivered += delivery.size * delivery.copies
            tally.counters.inFlightBytes -= delivery.size
            tally.counters.datagramsDelivered += delivery.copies
        }
        return due
    }

    /// When the next bytes (or datagram outcomes) become deliverable, or nil if none are scheduled yet.
    public var nextDeliveryTime: Instant? { isDatagram ? datagramLine.nextAt : delayLine.nextDeliverAt }

    /// When the serialiser may take this flow's oldest queued bytes: their arrival, or the end of a stall.
    var readyAt: Instant {
        guard let first = arrivals.first else { return .never }
        return max(first.at, stalledUntil)
    }

    /// Records `count` bytes that arrived at `now`, after every earlier arrival; a datagram stays its own batch.
    func recordArrival(_ count: Int, at now: Instant) {
        queuedBytes += count
        if !isDatagram, let last = arrivals.last, last.at >= now {
            arrivals[arrivals.index(before: arrivals.endIndex)].bytes += count
        } else {
            arrivals.append(ByteBatch(bytes: count, at: now))
        }
    }

    /// Takes up to `limit` queued bytes that had arrived by `cutoff`; returns the count and the last one's arrival.
    func takeQueued(upTo limit: Int, arrivedBy cutoff: Instant) -> (bytes: Int, lastArrival: Instant) {
        var taken = 0
        var lastArrival = Instant(nanoseconds: .min)
        while taken < limit, let first = arrivals.first, first.at <= cutoff {
            let take = min(first.bytes, limit - taken)
            taken += take
            lastArrival = first.at
            if take == first.bytes {
                arrivals.removeFirst()
            } else {
                arrivals[arrivals.startIndex].bytes -= take
            }
        }
        queuedBytes -= taken
        return (taken, lastArrival)
    }

    /// Takes the oldest queued datagram; returns its size and arrival.
    func takeQueuedDatagram() -> (bytes: Int, lastArrival: Instant) {
        let first = arrivals.removeFirst()
        queuedBytes -= first.bytes
        return (first.bytes, first.at)
    }

    /// Drops every count the flow holds, for a flow leaving its direction.
    func forgetAll() {
        arrivals.removeAll()
        delayLine.removeAll()
        datagramLine.removeAll()
        queuedBytes = 0
    }
}
