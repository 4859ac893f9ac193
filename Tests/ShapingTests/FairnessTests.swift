import Testing
import LinkConditioner

@Test func twoGreedyFlowsShareTheLinkEvenly() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .mbps(10)), roundTrip: .zero, seed: 1)
    let first = link.makeFlow()
    let second = link.makeFlow()

    link.enqueue(1_000_000, on: first, at: .zero)
    link.enqueue(1_000_000, on: second, at: .zero)
    link.serveAll(until: .s(0.8))
    let firstShare = first.takeDeliverable(at: .s(0.8))
    let secondShare = second.takeDeliverable(at: .s(0.8))

    #expect(abs(firstShare - 500_000) <= 1448)
    #expect(abs(secondShare - 500_000) <= 1448)
}

@Test func smallFlowIsServedWithinAFewSlicesBehindAGreedyOne() {
    let rate = BitRate.mbps(1)
    let link = LinkDirection(profile: DirectionProfile(bandwidth: rate), roundTrip: .zero, seed: 1)
    let greedy = link.makeFlow()
    let small = link.makeFlow()

    link.enqueue(256 * 1024, on: greedy, at: .zero)
    link.serveAll(until: .s(0.5))
    link.enqueue(500, on: small, at: .s(0.5))
    link.serveAll(until: .s(1))
    let deliveries = small.drainSchedule()

    #expect(total(deliveries) == 500)
    #expect(deliveries.last!.at - .s(0.5) <= rate.transmissionTime(bytes: 3 * 1448))
    #expect(greedy.queuedBytes > 100_000)
}

@Test func fullQueueRefusesAGreedyFlow() {
    let profile = DirectionProfile(bandwidth: .mbps(1), queue: .kib(64))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let greedy = link.makeFlow()

    #expect(link.canAccept(greedy))
    link.enqueue(64 * 1024, on: greedy, at: .zero)

    #expect(!link.canAccept(greedy))
}

@Test func fullQueueStillAdmitsAFlowBelowItsFairShare() {
    let profile = DirectionProfile(bandwidth: .mbps(1), queue: .kib(64))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let greedy = link.makeFlow()
    let small = link.makeFlow()
    link.enqueue(64 * 1024, on: greedy, at: .zero)

    let admittedEmpty = link.canAccept(small)
    link.enqueue(32 * 1024, on: small, at: .zero)
    let admittedAtShare = link.canAccept(small)

    #expect(admittedEmpty)
    #expect(!admittedAtShare)
}

@Test func zeroQueueStillAdmitsTheFairMinimumShare() {
    let profile = DirectionProfile(bandwidth: .mbps(1), queue: ByteCount(bytes: 0))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(LinkDirection.fairMinimumShare - 1, on: flow, at: .zero)
    let belowShare = link.canAccept(flow)
    link.enqueue(1, on: flow, at: .zero)

    #expect(belowShare)
    #expect(!link.canAccept(flow))
}

@Test func queueSpaceReopensAsTheSerialiserDrainsIt() {
    let profile = DirectionProfile(bandwidth: .mbps(1), queue: .kib(16))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    link.enqueue(16 * 1024, on: flow, at: .zero)
    let refused = !link.canAccept(flow)

    _ = link.advance(to: .ms(20))

    #expect(refused)
    #expect(link.canAccept(flow))
}
