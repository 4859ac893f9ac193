import LinkModel
import LinkProfiles
import Testing

/// The datagram path on the bottleneck: queue disciplines and traces drop and pace real datagrams.
struct DatagramLinkBottleneckTests {
    /// Offers `perMillisecond` datagrams of `size` bytes each millisecond for `milliseconds` on `flow`, then runs
    /// the link to the end; returns every outcome with its time.
    private func flood(
        _ link: DatagramLink, flows: [DatagramFlow], perMillisecond: Int, size: Int = 1500, milliseconds: Int
    ) -> [(flow: Int, delivery: DatagramDelivery, at: Instant)] {
        var outcomes: [(flow: Int, delivery: DatagramDelivery, at: Instant)] = []
        func collect(_ now: Instant) {
            _ = link.advance(to: now)
            for (number, flow) in flows.enumerated() {
                outcomes += flow.takeDeliverableDatagrams(at: now).map { (number, $0, now) }
            }
        }
        for ms in 0..<milliseconds {
            let now = Instant.ms(Double(ms))
            collect(now)
            for flow in flows { for _ in 0..<perMillisecond { link.enqueue(size, on: flow, at: now) } }
        }
        var now = Instant.ms(Double(milliseconds))
        while let next = [link.nextServiceTime, flows.compactMap(\.nextDeliveryTime).min()].compactMap({ $0 }).min() {
            now = max(now, next)
            collect(now)
        }
        return outcomes
    }

    @Test func codelDropsDatagramsThatStandInTheQueueAndCountsThem() {
        var profile = DirectionProfile(bandwidth: .mbps(12), queue: .mib(4))
        profile.queueManagement = QueueManagement(CoDelQueue.self)
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        let outcomes = flood(link, flows: [flow], perMillisecond: 2, milliseconds: 3_000)
        let delivered = outcomes.filter { $0.delivery.copies > 0 }

        #expect(link.counters.codelDrops > 100)
        #expect(link.counters.codelDrops == outcomes.count - delivered.count)
        #expect(delivered.count + link.counters.codelDrops + link.counters.tailDrops == 6_000)
    }

    @Test func fifoOfTheSameSizeDropsOnlyAtTheTailAndLetsDelayGrow() {
        let link = DatagramLink(profile: DirectionProfile(bandwidth: .mbps(12), queue: .mib(4)), seed: 1)
        let flow = link.makeFlow()

        let outcomes = flood(link, flows: [flow], perMillisecond: 2, milliseconds: 3_000)

        #expect(link.counters.codelDrops == 0)
        #expect(link.counters.tailDrops > 0)
        // 4 MiB at 12 Mbit/s is 2.8 s of queue: the last datagrams delivered waited seconds.
        let last = outcomes.filter { $0.delivery.copies > 0 }.last!
        #expect(last.at > .s(5))
    }

    @Test func fqCodelDropForAnotherFlowFreesThatFlowsDatagram() {
        var profile = DirectionProfile(
            bandwidth: .mbps(12), queue: ByteCount(bytes: 15_000), burst: ByteCount(bytes: 1500))
        profile.queueManagement = QueueManagement(FQCoDelQueue.self)
        let link = DatagramLink(profile: profile, seed: 1)
        let bulk = link.makeFlow()
        let sparse = link.makeFlow()
        // The burst (one datagram) sends one at once and one is on the wire; ten fill the queue.
        for _ in 0..<12 { link.enqueue(1500, on: bulk, at: .zero) }

        let admission = link.enqueue(100, on: sparse, at: .zero)
        _ = link.advance(to: .zero)
        let freed = bulk.takeDeliverableDatagrams(at: .zero)

        #expect(admission.isAccepted)
        let dropped = freed.filter { $0.copies == 0 }
        #expect(freed.filter { $0.copies > 0 }.map(\.index) == [0])
        #expect(!dropped.isEmpty)
        #expect(link.counters.tailDrops == dropped.count)
    }

    @Test func traceSetsTheDatagramRate() throws {
        var profile = DirectionProfile(queue: .mib(64))
        profile.trace = try DeliveryTrace(parsing: Array("1\n2\n2\n4\n".utf8), name: "t")
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()
        for _ in 0..<40 { link.enqueue(1500, on: flow, at: .zero) }

        _ = link.advance(to: .ms(40))
        let delivered = flow.takeDeliverableDatagrams(at: .ms(40))

        // Four opportunities every 4 ms: 40 datagrams by 40 ms, the first at 1 ms.
        #expect(delivered.count == 40)
        #expect(link.counters.queuedBytes == 0)
    }

    @Test func datagramsInPropagationCountAgainstTheQueue() {
        let link = DatagramLink(
            profile: DirectionProfile(delay: .seconds(10), queue: ByteCount(bytes: 250_000)), seed: 1)
        let flow = link.makeFlow()

        let admissions = (0..<10).map { _ in link.enqueue(60_000, on: flow, at: .zero) }
        _ = link.advance(to: .zero)

        #expect(admissions.filter(\.isAccepted).count == 4)
        #expect(link.counters.tailDrops == 6)
        #expect(link.counters.inFlightBytes == 240_000)
    }

    @Test func impairmentsApplyAfterTheBottleneck() {
        let link = DatagramLink(profile: DirectionProfile(bandwidth: .mbps(12), delay: .milliseconds(50)), seed: 1)
        let flow = link.makeFlow()
        link.enqueue(1500, on: flow, at: .zero)
        link.enqueue(1500, on: flow, at: .zero)

        _ = link.advance(to: .ms(2))

        // Each takes 1 ms to serialise: the first has left at 1 ms, the second at 2 ms; 50 ms of delay follow.
        #expect(flow.nextDeliveryTime == .ms(51))
        #expect(flow.takeDeliverableDatagrams(at: .ms(51)).map(\.index) == [0])
        #expect(flow.takeDeliverableDatagrams(at: .ms(52)).map(\.index) == [1])
    }

    @Test func aDatagramLostOnItsWayInTakesNoTimeAtTheRate() {
        // 1500-byte datagrams at 12 Mbit/s take 1 ms each. Their loss is drawn as they enter, as netem draws it.
        let profile = DirectionProfile(bandwidth: .mbps(12), delay: .milliseconds(50), loss: Percentage(50))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        for _ in 0..<20 { link.enqueue(1500, on: flow, at: .zero) }
        let lost = flow.takeDeliverableDatagrams(at: .zero)
        link.serveAll()
        var delivered: [Instant] = []
        while let next = flow.nextDeliveryTime {
            delivered += flow.takeDeliverableDatagrams(at: next).map { _ in next }
        }

        // The lost ones are settled at once; those that got in leave back to back, one each millisecond.
        #expect(!lost.isEmpty && lost.allSatisfy { $0.copies == 0 })
        #expect(lost.count + delivered.count == 20)
        #expect(delivered == (0..<delivered.count).map { .ms(51 + Double($0)) })
        #expect(link.counters.randomLosses == lost.count)
        #expect(link.counters.transmissions == delivered.count)
    }

    @Test func removingAFlowForgetsItsQueuedAndInFlightBytes() {
        let link = DatagramLink(profile: DirectionProfile(bandwidth: .mbps(1), delay: .seconds(1)), seed: 1)
        let flow = link.makeFlow()
        for _ in 0..<5 { link.enqueue(1000, on: flow, at: .zero) }
        _ = link.advance(to: .ms(20))

        link.remove(flow)

        #expect(link.counters.queuedBytes == 1000)
        #expect(link.counters.inFlightBytes == 0)
        #expect(link.counters.flows == 0)
    }
}

extension DatagramLinkBottleneckTests {
    @Test func aSmallerQueueFromALiveUpdateDropsWhatNoLongerFitsAsTailDrops() {
        let burst = ByteCount(bytes: 1500)
        let link = DatagramLink(profile: DirectionProfile(bandwidth: .mbps(12), queue: .mib(1), burst: burst), seed: 1)
        let flow = link.makeFlow()
        for _ in 0..<10 { link.enqueue(1500, on: flow, at: .zero) }

        link.update(
            profile: DirectionProfile(bandwidth: .mbps(12), queue: ByteCount(bytes: 4500), burst: burst), now: .zero)
        _ = link.advance(to: .s(1))
        let outcomes = flow.takeDeliverableDatagrams(at: .s(1))

        // One left at once on the burst and one is on the wire; the new 4500-byte queue keeps three of
        // the eight waiting.
        #expect(outcomes.filter { $0.copies > 0 }.map(\.index) == [0, 1, 2, 3, 4])
        #expect(link.counters.tailDrops == 5)
        #expect(link.counters.queuedBytes == 0)
    }
}
