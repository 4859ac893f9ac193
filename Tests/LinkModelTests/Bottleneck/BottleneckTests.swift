import LinkModel
import LinkProfiles
import Testing

private func packet(_ tag: UInt64, bytes: Int = 1500, flow: Int = 0) -> LinkPacket {
    LinkPacket(flow: flow, bytes: bytes, tag: tag)
}

/// A bottleneck at 12 Mbit/s: one 1500-byte packet per millisecond.
private func twelveMegabit(limit: QueueLimit = .packets(100)) -> Bottleneck {
    Bottleneck(discipline: FIFOQueue(limit: limit), serializer: ConstantRateSerializer(rate: .mbps(12)))
}

struct BottleneckTests {
    @Test func packetsDepartOneSerialisationApart() {
        var bottleneck = twelveMegabit()
        for tag in 0..<3 { _ = bottleneck.enqueue(packet(UInt64(tag)), now: .ms(10)) }

        let events = bottleneck.advance(to: .s(1))

        #expect(
            events == [
                .departed(LinkPacket(flow: 0, bytes: 1500, tag: 0, enqueuedAt: .ms(10)), at: .ms(11)),
                .departed(LinkPacket(flow: 0, bytes: 1500, tag: 1, enqueuedAt: .ms(10)), at: .ms(12)),
                .departed(LinkPacket(flow: 0, bytes: 1500, tag: 2, enqueuedAt: .ms(10)), at: .ms(13)),
            ])
        #expect(bottleneck.nextEventTime == nil)
    }

    @Test func advanceReportsOnlyWhatHappenedByNow() {
        var bottleneck = twelveMegabit()
        for tag in 0..<3 { _ = bottleneck.enqueue(packet(UInt64(tag)), now: .zero) }

        let early = bottleneck.advance(to: .ms(1.5))

        #expect(early.map(\.packet.tag) == [0])
        #expect(bottleneck.nextEventTime == .ms(2))
        #expect(bottleneck.packetCount == 2)
    }

    @Test func lateAdvanceGivesTheSameDeparturesAsTimelyOnes() {
        var timely = twelveMegabit()
        var late = twelveMegabit()
        for tag in 0..<20 {
            _ = timely.enqueue(packet(UInt64(tag)), now: .zero)
            _ = late.enqueue(packet(UInt64(tag)), now: .zero)
        }

        var timelyEvents: [BottleneckEvent] = []
        while let next = timely.nextEventTime { timelyEvents += timely.advance(to: next) }
        let lateEvents = late.advance(to: .s(60))

        #expect(lateEvents == timelyEvents)
        #expect(lateEvents.last?.at == .ms(20))
    }

    @Test func fullQueueDropsTheNewcomerAtEnqueue() {
        var bottleneck = twelveMegabit(limit: .packets(2))

        let drops = (0..<4).map { bottleneck.enqueue(packet(UInt64($0)), now: .zero) }

        #expect(drops.map { $0.map(\.tag) } == [[], [], [], [3]])
        #expect(bottleneck.packetCount == 3)
    }

    @Test func packetArrivingAtAnIdleLinkStartsAtItsArrival() {
        var bottleneck = twelveMegabit()
        _ = bottleneck.enqueue(packet(0), now: .zero)
        _ = bottleneck.advance(to: .s(1))

        _ = bottleneck.enqueue(packet(1), now: .s(2))

        #expect(bottleneck.advance(to: .s(3)).map(\.at) == [.s(2) + .milliseconds(1)])
    }

    @Test func unlimitedBottleneckPassesPacketsThroughAtOnce() {
        var bottleneck = Bottleneck(discipline: FIFOQueue(limit: .packets(1)), serializer: UnlimitedSerializer())
        _ = bottleneck.enqueue(packet(0), now: .ms(7))
        _ = bottleneck.enqueue(packet(1), now: .ms(7))

        #expect(bottleneck.nextEventTime == .ms(7))
        #expect(bottleneck.advance(to: .ms(7)).map(\.at) == [.ms(7), .ms(7)])
    }

    @Test func stoppedLinkHoldsItsPacketUntilANewSerializer() {
        var bottleneck = Bottleneck(
            discipline: FIFOQueue(limit: .packets(10)),
            serializer: ConstantRateSerializer(rate: BitRate(bitsPerSecond: 0)))
        _ = bottleneck.enqueue(packet(0), now: .zero)
        #expect(bottleneck.advance(to: .s(10)).isEmpty)
        #expect(bottleneck.nextEventTime == nil)

        bottleneck.update(serializer: ConstantRateSerializer(rate: .mbps(12)), now: .s(10))

        #expect(bottleneck.advance(to: .s(11)).map(\.at) == [.s(10) + .milliseconds(1)])
    }

    @Test func switchingDisciplineKeepsOrderAndReportsWhatNoLongerFits() {
        var bottleneck = twelveMegabit()
        for tag in 0..<5 { _ = bottleneck.enqueue(packet(UInt64(tag)), now: .zero) }

        let refused = bottleneck.update(discipline: FIFOQueue(limit: .packets(2)), now: .zero)
        let events = bottleneck.advance(to: .s(1))

        #expect(refused.map(\.tag) == [3, 4])
        #expect(events.map(\.packet.tag) == [0, 1, 2])
    }

    @Test func removingAFlowLeavesThePacketOnTheWire() {
        var bottleneck = twelveMegabit()
        _ = bottleneck.enqueue(packet(0, flow: 1), now: .zero)
        _ = bottleneck.enqueue(packet(1, flow: 1), now: .zero)
        _ = bottleneck.enqueue(packet(2, flow: 2), now: .zero)

        let removed = bottleneck.removeAll(ofFlow: 1)

        #expect(removed.map(\.tag) == [1])
        #expect(bottleneck.advance(to: .s(1)).map(\.packet.tag) == [0, 2])
    }
}
