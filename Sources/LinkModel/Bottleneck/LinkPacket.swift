/// One packet as a bottleneck sees it: a TCP segment or a datagram, charged `bytes` by the serialiser.
///
/// linkcond's rates count payload bytes (see `BitRate`), so owners charge a segment's or a datagram's payload;
/// a trace serialiser's 1500-byte delivery opportunities carry that many payload bytes. The bottleneck never
/// touches the bytes themselves: the owner keeps them and finds them again by `flow` and `tag`.
public struct LinkPacket: Sendable, Equatable {
    /// The owner's flow number; fq_codel keeps one queue per flow (modulo its flow count).
    public var flow: Int
    /// Bytes the serialiser charges for the packet.
    public var bytes: Int
    /// The owner's number for the packet: a segment's sequence number, a datagram's index on its flow.
    public var tag: UInt64
    /// When the packet entered the queue, stamped by the bottleneck (CoDel's sojourn time starts here).
    public var enqueuedAt: Instant

    public init(flow: Int, bytes: Int, tag: UInt64, enqueuedAt: Instant = .zero) {
        self.flow = flow
        self.bytes = bytes
        self.tag = tag
        self.enqueuedAt = enqueuedAt
    }
}
