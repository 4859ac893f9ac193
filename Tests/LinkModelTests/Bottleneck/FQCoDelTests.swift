import LinkModel
import LinkProfiles
import Testing

struct FQCoDelTests {
    /// A 12 Mbit/s bottleneck (one 1500-byte packet per millisecond) fed, for two seconds, two bulk packets per
    /// millisecond on flow 1 and one 100-byte ping every 20 ms on flow 2; returns each ping's wait at the
    /// bottleneck (departure − arrival) and the events.
    private func pingWaitsBehindBulk(_ discipline: any QueueDiscipline) -> (
        waits: [Duration], events: [BottleneckEvent]
    ) {
        var bottleneck = Bottleneck(discipline: discipline, serializer: ConstantRateSerializer(rate: .mbps(12)))
        var events: [BottleneckEvent] = []
        var tag: UInt64 = 0
        for ms in 0..<2_000 {
            let now = Instant.ms(Double(ms))
            events += bottleneck.advance(to: now)
            for _ in 0..<2 {
                _ = bottleneck.enqueue(LinkPacket(flow: 1, bytes: 1500, tag: tag), now: now)
                tag += 1
            }
            if ms % 20 == 0 { _ = bottleneck.enqueue(LinkPacket(flow: 2, bytes: 100, tag: UInt64(ms)), now: now) }
        }
        events += bottleneck.advance(to: .s(60))
        let waits = events.compactMap { event -> Duration? in
            guard case .departed(let packet, let at) = event, packet.flow == 2 else { return nil }
            return at - packet.enqueuedAt
        }
        return (waits, events)
    }

    @Test func sparseFlowIsNotDelayedByABulkFlow() {
        let (waits, _) = pingWaitsBehindBulk(FQCoDelQueue(limit: .packets(10_240)))

        // A ping waits at most for the bulk packet already on the wire (1 ms) plus its own 100 bytes (67 µs). The
        // first one also waits for one bulk packet more: at the start the bulk flow is itself new, with a quantum.
        #expect(waits.count == 100)
        #expect(waits.first! <= .microseconds(2067))
        #expect(waits.dropFirst().allSatisfy { $0 <= .microseconds(1067) })
    }

    @Test func underFIFOTheSameSparseFlowWaitsBehindTheWholeQueue() {
        let (waits, _) = pingWaitsBehindBulk(FIFOQueue(limit: .bytes(256 * 1024)))

        #expect(waits.last! > .milliseconds(150))
    }

    @Test func codelDropsOnlyTheFlowThatBuildsAQueue() {
        let (waits, events) = pingWaitsBehindBulk(FQCoDelQueue(limit: .packets(10_240)))
        let drops = events.filter { if case .dropped = $0 { true } else { false } }

        #expect(waits.count == 100)
        #expect(!drops.isEmpty)
        #expect(drops.allSatisfy { $0.packet.flow == 1 })
    }

    @Test func twoBulkFlowsShareTheLinkByQuantum() {
        var queue = FQCoDelQueue(limit: .packets(1000))
        for tag in 0..<10 {
            _ = queue.enqueue(LinkPacket(flow: 1, bytes: 1514, tag: UInt64(tag)), now: .zero)
            _ = queue.enqueue(LinkPacket(flow: 2, bytes: 757, tag: UInt64(tag)), now: .zero)
        }

        let order = (0..<9).compactMap { _ in queue.dequeue(now: .zero).packet?.flow }

        // Flow 1 spends its quantum on one packet, flow 2 on two: equal bytes per round.
        #expect(order == [1, 2, 2, 1, 2, 2, 1, 2, 2])
    }

    @Test func eachFlowKeepsItsOrder() {
        var queue = FQCoDelQueue(limit: .packets(1000))
        for tag in 0..<20 { _ = queue.enqueue(LinkPacket(flow: tag % 3, bytes: 500, tag: UInt64(tag)), now: .zero) }

        let packets = (0..<20).compactMap { _ in queue.dequeue(now: .zero).packet }

        for flow in 0..<3 {
            let tags = packets.filter { $0.flow == flow }.map(\.tag)
            #expect(tags == tags.sorted())
        }
        #expect(packets.count == 20)
    }

    @Test func overTheLimitTheFattestFlowLosesFromItsHead() {
        var queue = FQCoDelQueue(limit: .packets(10))
        for tag in 0..<9 { _ = queue.enqueue(LinkPacket(flow: 1, bytes: 1500, tag: UInt64(tag)), now: .zero) }
        _ = queue.enqueue(LinkPacket(flow: 2, bytes: 100, tag: 100), now: .zero)

        let dropped = queue.enqueue(LinkPacket(flow: 2, bytes: 100, tag: 101), now: .zero)

        // Half of flow 1's 13 500 bytes: its five oldest packets.
        #expect(dropped.map(\.tag) == [0, 1, 2, 3, 4])
        #expect(queue.packetCount == 6)
    }

    @Test func flowNumbersBeyondTheFlowCountShareQueues() {
        var queue = FQCoDelQueue(limit: .packets(100), flows: 2)
        _ = queue.enqueue(LinkPacket(flow: 1, bytes: 100, tag: 0), now: .zero)
        _ = queue.enqueue(LinkPacket(flow: 3, bytes: 100, tag: 1), now: .zero)
        _ = queue.enqueue(LinkPacket(flow: -2, bytes: 100, tag: 2), now: .zero)

        let tags = (0..<3).compactMap { _ in queue.dequeue(now: .zero).packet?.tag }

        #expect(tags == [0, 1, 2])
    }
}
