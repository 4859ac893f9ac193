/// A FIFO managed by CoDel (`queue.discipline = codel`): the kernel's `codel` qdisc, tail-dropping only when
/// its hard limit is reached.
///
/// Lives on its bottleneck's thread.
public struct CoDelQueue: NamedQueueDiscipline {
    public static let name = "codel"

    public var parameters: CoDelParameters
    /// The hard limit; CoDel keeps the queue far below it under load.
    public var limit: QueueLimit
    private var packets = PacketFIFO()
    private var state = CoDelState()

    public init(limit: QueueLimit, parameters: CoDelParameters = CoDelParameters()) {
        self.limit = limit
        self.parameters = parameters
    }

    public init(limit: QueueLimit, management: QueueManagement) {
        self.init(limit: limit, parameters: management.codel)
    }

    public var byteCount: Int { packets.byteCount }
    public var packetCount: Int { packets.count }

    public mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket] {
        if limit.isExceeded(bytes: packets.byteCount + packet.chargedBytes, packets: packets.count + 1) {
            return [packet]
        }
        packets.append(packet)
        return []
    }

    public mutating func dequeue(now: Instant) -> (packet: LinkPacket?, dropped: [LinkPacket]) {
        state.dequeue(from: &packets, now: now, parameters: parameters)
    }

    public mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] {
        packets.removeAll(ofFlow: flow)
    }
}
