import Testing
import LinkConditioner

private func lossyLink(_ percent: Double, seed: UInt64 = 1) -> LinkDirection {
    let profile = DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(20), loss: Percentage(percent))
    return LinkDirection(profile: profile, roundTrip: .milliseconds(40), seed: seed)
}

@Test func lossCountMatchesTheLossProbability() {
    let link = lossyLink(2)
    let flow = link.makeFlow()

    link.enqueue(2_000_000, on: flow, at: .zero)
    let deliveries = link.schedule(of: [flow])[0]

    let counters = link.counters
    let trials = Double(counters.transmissions)
    let mean = trials * 0.02
    let spread = 2.576 * (trials * 0.02 * 0.98).squareRoot()
    #expect(total(deliveries) == 2_000_000)
    #expect(abs(Double(counters.segmentsLost) - mean) <= spread)
}

@Test func throughputFallsAsLossRises() {
    var durations: [Double] = []

    for percent in [0.0, 1, 3, 10] {
        let link = lossyLink(percent)
        let flow = link.makeFlow()
        link.enqueue(1_000_000, on: flow, at: .zero)
        durations.append(link.schedule(of: [flow])[0].last!.at.seconds)
    }

    #expect(zip(durations, durations.dropFirst()).allSatisfy { $0 < $1 })
    #expect(durations[3] > 4 * durations[0])
}

@Test func lostSegmentArrivesOneRetransmissionTimeoutLate() {
    let profile = DirectionProfile(loss: Percentage(50))
    let link = LinkDirection(profile: profile, roundTrip: .milliseconds(300), seed: 1)
    let flow = link.makeFlow()
    var arrivals: [Delivery] = []

    for index in 0..<200 {
        let now = Instant.s(Double(index))
        link.enqueue(1448, on: flow, at: now)
        _ = link.advance(to: now)
        arrivals.append(Delivery(at: now, bytes: 1448))
    }
    link.serveAll()
    let observed = latencies(arrivals: arrivals, deliveries: flow.drainSchedule())

    let timeout = RetransmissionLoss.retransmissionTimeout(roundTrip: .milliseconds(300))
    #expect(timeout == .milliseconds(300))
    #expect(observed.contains(.zero))
    #expect(observed.contains(timeout))
    #expect(observed.contains(timeout * 3))
}

@Test func retransmissionTimeoutIsAtLeastLinuxMinimum() {
    #expect(RetransmissionLoss.retransmissionTimeout(roundTrip: .milliseconds(10)) == .milliseconds(200))
    #expect(RetransmissionLoss.retransmissionTimeout(roundTrip: .milliseconds(450)) == .milliseconds(450))
}

@Test func totalLossDeliversNothingAndDoesNotSpin() {
    let link = lossyLink(100)
    let flow = link.makeFlow()

    link.enqueue(100_000, on: flow, at: .zero)
    let changed = link.advance(to: .s(1))
    let later = link.advance(to: .s(1_000_000))

    #expect(changed.isEmpty)
    #expect(later.isEmpty)
    #expect(link.nextServiceTime == nil)
    #expect(flow.nextDeliveryTime == nil)
    #expect(flow.takeDeliverable(at: .s(1_000_000)) == 0)
    #expect(link.counters.bytesDelivered == 0)
    #expect(link.counters.segmentsLost == RetransmissionLoss.maximumRetransmissions)
}

@Test func deadFlowRecoversWhenLossIsLifted() {
    let link = lossyLink(100)
    let flow = link.makeFlow()
    link.enqueue(10_000, on: flow, at: .zero)
    _ = link.advance(to: .zero)

    link.update(profile: DirectionProfile(delay: .milliseconds(20)), roundTrip: .milliseconds(40))
    let changed = link.advance(to: .s(5))
    link.serveAll()
    let deliveries = flow.drainSchedule()

    #expect(changed.count == 1)
    #expect(total(deliveries) == 10_000)
    #expect(isNonDecreasing(deliveries))
    #expect(deliveries.first!.at == .s(5) + RetransmissionLoss.minimumTimeout + .milliseconds(20))
}

@Test func oneFlowsStallLeavesTheLinkToOthers() {
    let single = lossyLink(5)
    let shared = lossyLink(5)
    let alone = single.makeFlow()
    let pair = [shared.makeFlow(), shared.makeFlow()]

    single.enqueue(400_000, on: alone, at: .zero)
    shared.enqueue(200_000, on: pair[0], at: .zero)
    shared.enqueue(200_000, on: pair[1], at: .zero)
    let aloneFinish = single.schedule(of: [alone])[0].last!.at
    let pairFinish = shared.schedule(of: pair).map { $0.last!.at }.max()!

    #expect(pairFinish.seconds < 0.75 * aloneFinish.seconds)
}
