import LinkModel
import LinkProfiles
import Testing

private func packet(_ tag: UInt64, bytes: Int = 1000, flow: Int = 0) -> LinkPacket {
    LinkPacket(flow: flow, bytes: bytes, tag: tag)
}

struct FIFOQueueTests {
    @Test func fifoHandsOutPacketsInArrivalOrder() {
        var queue = FIFOQueue(limit: .packets(10))
        for tag in 0..<3 { _ = queue.enqueue(packet(UInt64(tag)), now: .zero) }

        let tags = (0..<3).compactMap { _ in queue.dequeue(now: .zero).packet?.tag }

        #expect(tags == [0, 1, 2])
        #expect(queue.dequeue(now: .zero).packet == nil)
    }

    @Test func dropTailByBytesRefusesThePacketThatWouldOverflow() {
        var queue = FIFOQueue(limit: .bytes(2500))

        let first = queue.enqueue(packet(0), now: .zero)
        let second = queue.enqueue(packet(1), now: .zero)
        let third = queue.enqueue(packet(2), now: .zero)
        let small = queue.enqueue(packet(3, bytes: 500), now: .zero)

        #expect(first.isEmpty && second.isEmpty)
        #expect(third.map(\.tag) == [2])
        #expect(small.isEmpty)
        #expect(queue.byteCount == 2500)
        #expect(queue.packetCount == 3)
    }

    @Test func dropTailByPacketsCountsPacketsWhateverTheirSize() {
        var queue = FIFOQueue(limit: .packets(2))

        _ = queue.enqueue(packet(0, bytes: 64_000), now: .zero)
        _ = queue.enqueue(packet(1, bytes: 64_000), now: .zero)
        let dropped = queue.enqueue(packet(2, bytes: 10), now: .zero)

        #expect(dropped.map(\.tag) == [2])
        #expect(queue.packetCount == 2)
    }

    @Test func dropHeadShedsTheOldestPacketsToMakeRoom() {
        var queue = FIFOQueue(limit: .bytes(2000), overflow: .dropHead)
        _ = queue.enqueue(packet(0), now: .zero)
        _ = queue.enqueue(packet(1), now: .zero)

        let dropped = queue.enqueue(packet(2), now: .zero)

        #expect(dropped.map(\.tag) == [0])
        #expect(queue.dequeue(now: .zero).packet?.tag == 1)
    }

    @Test func removingAFlowTakesOnlyItsPackets() {
        var queue = FIFOQueue(limit: .packets(10))
        _ = queue.enqueue(packet(0, flow: 1), now: .zero)
        _ = queue.enqueue(packet(1, flow: 2), now: .zero)
        _ = queue.enqueue(packet(2, flow: 1), now: .zero)

        let removed = queue.removeAll(ofFlow: 1)

        #expect(removed.map(\.tag) == [0, 2])
        #expect(queue.byteCount == 1000)
        #expect(queue.dequeue(now: .zero).packet?.tag == 1)
    }
}
