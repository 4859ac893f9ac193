import DequeModule

/// First in, first out, with a byte or packet limit: drop-tail (a full router buffer refuses the newcomer) or
/// drop-head (it sheds its oldest packets instead, as mahimahi's `drophead`).
///
/// Lives on its bottleneck's thread.
public struct FIFOQueue: QueueDiscipline {
    /// Which end of a full queue loses a packet.
    public enum Overflow: Hashable, Sendable {
        case dropTail, dropHead
    }

    public var limit: QueueLimit
    public var overflow: Overflow
    private var packets = Deque<LinkPacket>()
    public private(set) var byteCount = 0

    public init(limit: QueueLimit, overflow: Overflow = .dropTail) {
        self.limit = limit
        self.overflow = overflow
    }

    public var packetCount: Int { packets.count }

    public mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket] {
        switch overflow {
        case .dropTail:
            if limit.isExceeded(bytes: byteCount + packet.bytes, packets: packets.count + 1) { return [packet] }
            append(packet)
            return []
        case .dropHead:
            append(packet)
            var dropped: [LinkPacket] = []
            while limit.isExceeded(bytes: byteCount, packets: packets.count), let head = packets.first {
                dropped.append(head)
                removeFirst()
            }
            return dropped
        }
    }

    public mutating func dequeue(now: Instant) -> (packet: LinkPacket?, dropped: [LinkPacket]) {
        guard !packets.isEmpty else { return (nil, []) }
        return (removeFirst(), [])
    }

    public mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] {
        let removed = Array(packets.filter { $0.flow == flow })
        guard !removed.isEmpty else { return [] }
        packets.removeAll { $0.flow == flow }
        byteCount -= removed.reduce(0) { $0 + $1.bytes }
        return removed
    }

    private mutating func append(_ packet: LinkPacket) {
        packets.append(packet)
        byteCount += packet.bytes
    }

    @discardableResult
    private mutating func removeFirst() -> LinkPacket {
        let packet = packets.removeFirst()
        byteCount -= packet.bytes
        return packet
    }
}
