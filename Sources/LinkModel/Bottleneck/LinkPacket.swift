/// One packet as a bottleneck sees it: a TCP segment (or a unit of several) or a datagram, of `bytes` payload,
/// charged `chargedBytes` by the serialiser and the queue limit.
///
/// The owner adds the headers its direction's `RateAccounting` charges (none under `payload`). The bottleneck
/// never touches the bytes themselves: the owner keeps them and finds them again by `flow` and `tag`.
public struct LinkPacket: Sendable, Equatable {
    /// The owner's flow number; fq_codel keeps one queue per flow (modulo its flow count).
    public var flow: Int
    /// The payload bytes the packet carries, as its owner counts them.
    public var bytes: Int
    /// What the serialiser, the queue limit and the queue's byte counts charge for the packet: `bytes` plus the
    /// headers its link's `RateAccounting` counts.
    public var chargedBytes: Int
    /// The owner's number for the packet: a segment's sequence number, a datagram's index on its flow.
    public var tag: UInt64
    /// When the packet entered the queue, stamped by the bottleneck (CoDel's sojourn time starts here).
    public var enqueuedAt: Instant
    /// The owner's timestamp on the packet: a segment's timestamp echo (TSecr), by which its receiver measures the
    /// round trip.
    public var echo: Instant?

    /// A packet of `bytes` payload charged `overhead` more.
    public init(
        flow: Int, bytes: Int, tag: UInt64, overhead: Int = 0, enqueuedAt: Instant = .zero, echo: Instant? = nil
    ) {
        self.flow = flow
        self.bytes = bytes
        self.chargedBytes = bytes + overhead
        self.tag = tag
        self.enqueuedAt = enqueuedAt
        self.echo = echo
    }
}
