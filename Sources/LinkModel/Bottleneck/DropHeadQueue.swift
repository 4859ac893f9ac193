/// A FIFO that sheds its oldest packets when full (`queue.discipline = drophead`, mahimahi's `drophead`): fresh
/// data wins over stale data, which suits real-time media.
///
/// Lives on its bottleneck's thread.
public struct DropHeadQueue: NamedQueueDiscipline {
    public static let name = "drophead"
    private var fifo: FIFOQueue

    public init(limit: QueueLimit, management: QueueManagement) {
        fifo = FIFOQueue(limit: limit, overflow: .dropHead)
    }

    public var byteCount: Int { fifo.byteCount }
    public var packetCount: Int { fifo.packetCount }

    public mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket] { fifo.enqueue(packet, now: now) }

    public mutating func dequeue(now: Instant) -> (packet: LinkPacket?, dropped: [LinkPacket]) {
        fifo.dequeue(now: now)
    }

    public mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] { fifo.removeAll(ofFlow: flow) }
}
