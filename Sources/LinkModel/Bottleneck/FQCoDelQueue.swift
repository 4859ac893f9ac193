import DequeModule

// FQ-CoDel (RFC 8290; the kernel's net/sched/sch_fq_codel.c).
//
// Packets are sorted into `flows` queues by their flow number (modulo `flows`; the kernel hashes the 5-tuple).
// Each queue is a FIFO under its own CoDel state, so a flow's packets are never reordered and CoDel drops only
// from the flow that builds a standing queue. The scheduler is deficit round robin over two lists: a queue that
// becomes active joins the *new* list with a deficit of one `quantum`, and new queues are served before *old*
// ones, so a sparse flow (a ping, a DNS query, a game's updates) is sent ahead of bulk backlog. A queue whose
// deficit is spent gets another quantum at the tail of the old list; a new queue that runs dry moves to the old
// list once (so it cannot keep its priority by staying barely active), an old one that runs dry leaves.
// Over the limit, fq_codel drops from the head of the fattest queue: up to 64 packets, or half its backlog.

/// Flow-queuing CoDel (`queue.discipline = fq_codel`): per-flow FIFOs under CoDel, served by deficit round robin
/// with new flows first.
///
/// Lives on its bottleneck's thread.
public struct FQCoDelQueue: NamedQueueDiscipline {
    public static let name = "fq_codel"
    /// The kernel's default number of flow queues.
    public static let defaultFlows = 1024
    /// The kernel's default quantum: one Ethernet frame.
    public static let defaultQuantum = 1514
    /// The most packets one overflow drops from the fattest queue at once (the kernel's `drop_batch_size`).
    static let dropBatch = 64

    private struct FlowQueue {
        enum List { case new, old }

        var packets = PacketFIFO()
        var codel = CoDelState()
        var deficit = 0
        var list: List?

        mutating func dequeue(now: Instant, parameters: CoDelParameters) -> (packet: LinkPacket?, dropped: [LinkPacket])
        {
            codel.dequeue(from: &packets, now: now, parameters: parameters)
        }
    }

    public let parameters: CoDelParameters
    public let limit: QueueLimit
    public let quantum: Int
    private var queues: [FlowQueue]
    private var newFlows = Deque<Int>()
    private var oldFlows = Deque<Int>()
    public private(set) var byteCount = 0
    public private(set) var packetCount = 0

    /// fq_codel with `flows` queues (at least 1), a DRR `quantum` in bytes (at least 1), and a hard `limit` over
    /// all queues.
    public init(
        limit: QueueLimit, flows: Int = FQCoDelQueue.defaultFlows, quantum: Int = FQCoDelQueue.defaultQuantum,
        parameters: CoDelParameters = CoDelParameters()
    ) {
        self.limit = limit
        self.quantum = max(quantum, 1)
        self.parameters = parameters
        queues = Array(repeating: FlowQueue(), count: max(flows, 1))
    }

    public init(limit: QueueLimit, management: QueueManagement) {
        self.init(limit: limit, flows: management.flows, quantum: management.quantum, parameters: management.codel)
    }

    /// The number of flow queues.
    public var flows: Int { queues.count }

    public mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket] {
        let index = queueIndex(of: packet.flow)
        queues[index].packets.append(packet)
        byteCount += packet.chargedBytes
        packetCount += 1
        if queues[index].list == nil {
            queues[index].list = .new
            queues[index].deficit = quantum
            newFlows.append(index)
        }
        var dropped: [LinkPacket] = []
        while limit.isExceeded(bytes: byteCount, packets: packetCount) {
            let batch = dropFromFattestQueue()
            if batch.isEmpty { break }
            dropped += batch
        }
        return dropped
    }

    public mutating func dequeue(now: Instant) -> (packet: LinkPacket?, dropped: [LinkPacket]) {
        var dropped: [LinkPacket] = []
        while true {
            let fromNew = !newFlows.isEmpty
            guard let index = fromNew ? newFlows.first : oldFlows.first else { return (nil, dropped) }
            if queues[index].deficit <= 0 {
                queues[index].deficit += quantum
                moveToOld(index, fromNew: fromNew)
                continue
            }
            let (packet, codelDrops) = queues[index].dequeue(now: now, parameters: parameters)
            account(removed: codelDrops)
            dropped += codelDrops
            guard let packet else {
                if fromNew && !oldFlows.isEmpty {
                    moveToOld(index, fromNew: true)
                } else {
                    _ = fromNew ? newFlows.removeFirst() : oldFlows.removeFirst()
                    queues[index].list = nil
                }
                continue
            }
            account(removed: [packet])
            queues[index].deficit -= packet.chargedBytes
            return (packet, dropped)
        }
    }

    public mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] {
        let removed = queues[queueIndex(of: flow)].packets.removeAll(ofFlow: flow)
        account(removed: removed)
        return removed
    }

    private func queueIndex(of flow: Int) -> Int {
        let remainder = flow % queues.count
        return remainder < 0 ? remainder + queues.count : remainder
    }

    private mutating func moveToOld(_ index: Int, fromNew: Bool) {
        _ = fromNew ? newFlows.removeFirst() : oldFlows.removeFirst()
        queues[index].list = .old
        oldFlows.append(index)
    }

    /// Drops from the head of the queue with the largest backlog: up to `dropBatch` packets, stopping once half
    /// of its backlog is gone.
    private mutating func dropFromFattestQueue() -> [LinkPacket] {
        guard let fattest = queues.indices.max(by: { queues[$0].packets.byteCount < queues[$1].packets.byteCount })
        else { return [] }
        let threshold = queues[fattest].packets.byteCount / 2
        var dropped: [LinkPacket] = []
        var droppedBytes = 0
        while dropped.count < Self.dropBatch, droppedBytes < threshold || dropped.isEmpty,
            let packet = queues[fattest].packets.popFirst()
        {
            dropped.append(packet)
            droppedBytes += packet.chargedBytes
        }
        account(removed: dropped)
        return dropped
    }

    private mutating func account(removed packets: [LinkPacket]) {
        for packet in packets {
            byteCount -= packet.chargedBytes
            packetCount -= 1
        }
    }
}
