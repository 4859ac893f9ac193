import DequeModule

/// First in, first out, with a byte or packet limit: drop-tail (a full router buffer refuses the newcomer) or
/// drop-head (it sheds its oldest packets instead, as mahimahi's `drophead`).
///
/// Lives on its bottleneck's thread.
public struct FIFOQueue: NamedQueueDiscipline {
    public static let name = "fifo"

    /// Which end of a full queue loses a packet.
    public enum Overflow: Hashable, Sendable {
        case dropTail, dropHead
    }

    public var limit: QueueLimit
    public var overflow: Overflow
    private var packets = PacketFIFO()

    public init(limit: QueueLimit, overflow: Overflow = .dropTail) {
        self.limit = limit
        self.overflow = overflow
    }

    public init(limit: QueueLimit, management: QueueManagement) {
        self.init(limit: limit)
    }

    public var byteCount: Int { packets.byteCount }
    public var packetCount: Int { packets.count }

    public mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket] {
        switch overflow {
        case .dropTail:
            if limit.isExceeded(bytes: packets.byteCount + packet.chargedBytes, packets: packets.count + 1) {
                return [packet]
            }
            packets.append(packet)
            return []
        case .dropHead:
            packets.append(packet)
            var dropped: [LinkPacket] = []
            while limit.isExceeded(bytes: packets.byteCount, packets: packets.count), let head = packets.popFirst() {
                dropped.append(head)
            }
            return dropped
        }
    }

    public mutating func dequeue(now: Instant) -> (packet: LinkPacket?, dropped: [LinkPacket]) {
        (packets.popFirst(), [])
    }

    public mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] {
        packets.removeAll(ofFlow: flow)
    }
}

/// Packets in arrival order with their byte total: the storage under every discipline.
struct PacketFIFO {
    private var packets = Deque<LinkPacket>()
    private(set) var byteCount = 0

    var count: Int { packets.count }
    var isEmpty: Bool { packets.isEmpty }
    var first: LinkPacket? { packets.first }

    mutating func append(_ packet: LinkPacket) {
        packets.append(packet)
        byteCount += packet.chargedBytes
    }

    mutating func popFirst() -> LinkPacket? {
        guard let packet = packets.popFirst() else { return nil }
        byteCount -= packet.chargedBytes
        return packet
    }

    mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] {
        let removed = Array(packets.filter { $0.flow == flow })
        guard !removed.isEmpty else { return [] }
        packets.removeAll { $0.flow == flow }
        byteCount -= removed.reduce(0) { $0 + $1.chargedBytes }
        return removed
    }
}
