/// One UDP client's direction on a `DatagramLink`: numbers its datagrams and holds their outcomes until due.
///
/// Only counts and times live here; the relay keeps the bytes. Lives on the event loop thread of its link.
public final class DatagramFlow {
    /// The flow's number on its link: the bottleneck's `LinkPacket.flow`, which fq_codel queues by.
    let id: Int
    var line = DatagramLine()
    var isRemoved = false
    /// Whether the flow is already in its link's list of flows with new outcomes.
    var isMarkedChanged = false
    private let tally: LinkTally

    /// The number `DatagramLink.enqueue` gives this flow's next datagram if it accepts it.
    public internal(set) var nextDatagramIndex: UInt64 = 0

    init(id: Int, tally: LinkTally) {
        self.id = id
        self.tally = tally
    }

    /// Removes and returns the outcomes due by `now`, in delivery order (lost datagrams with zero copies). The
    /// earliest due delivery among them records how long after its instant it was taken (`DatagramLink.lateness`).
    public func takeDeliverableDatagrams(at now: Instant) -> [DatagramDelivery] {
        var earliest: Instant?
        let due = line.takeDue(at: now, earliestDelivery: &earliest)
        if let earliest { tally.lateness.record(now - earliest) }
        for delivery in due where delivery.copies > 0 {
            tally.counters.bytesDelivered += delivery.size * delivery.copies
            tally.counters.inFlightBytes -= delivery.size
            tally.counters.datagramsDelivered += delivery.copies
        }
        return due
    }

    /// When the next outcome is due, or nil if none is scheduled.
    public var nextDeliveryTime: Instant? { line.nextAt }

    /// Bytes of datagrams past the bottleneck and not yet delivered.
    public var inFlightBytes: Int { line.bytes }
}
