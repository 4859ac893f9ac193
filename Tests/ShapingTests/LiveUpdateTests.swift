import Testing
import LinkConditioner

@Test func rateUpdateKeepsOrderAndLosesNoBytes() {
    let slow = DirectionProfile(bandwidth: .mbps(1), delay: .milliseconds(50))
    let fast = DirectionProfile(bandwidth: .mbps(20), delay: .milliseconds(10))
    let link = LinkDirection(profile: slow, roundTrip: .zero, seed: 1)
    let unchanged = LinkDirection(profile: slow, roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    let reference = unchanged.makeFlow()
    link.enqueue(200_000, on: flow, at: .zero)
    unchanged.enqueue(200_000, on: reference, at: .zero)

    link.serveAll(until: .s(0.5))
    let before = flow.takeDeliverable(at: .s(0.5))
    link.update(profile: fast, roundTrip: .zero)
    link.enqueue(50_000, on: flow, at: .s(0.5))
    let after = link.schedule(of: [flow])[0]
    let slowFinish = unchanged.schedule(of: [reference])[0].last!.at

    #expect(before + total(after) == 250_000)
    #expect(isNonDecreasing(after))
    #expect(after.first!.at >= .s(0.5))
    #expect(after.last!.at < slowFinish)
    #expect(link.counters.bytesDelivered == 250_000)
}

@Test func delayDecreaseDoesNotOvertakeBytesAlreadyInFlight() {
    let link = LinkDirection(profile: DirectionProfile(delay: .milliseconds(200)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    link.enqueue(1000, on: flow, at: .zero)
    _ = link.advance(to: .zero)

    link.update(profile: DirectionProfile(), roundTrip: .zero)
    link.enqueue(500, on: flow, at: .ms(10))
    _ = link.advance(to: .ms(10))

    #expect(flow.takeDeliverable(at: .ms(10)) == 0)
    #expect(flow.drainSchedule() == [Delivery(at: .ms(200), bytes: 1500)])
}

@Test func unlimitedUpdateReleasesTheQueueWithoutReordering() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .kbps(100)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    link.enqueue(50_000, on: flow, at: .zero)
    _ = link.advance(to: .zero)

    link.update(profile: DirectionProfile(), roundTrip: .zero)
    link.enqueue(100, on: flow, at: .ms(1))
    _ = link.advance(to: .ms(1))
    let deliveries = link.schedule(of: [flow])[0]

    #expect(total(deliveries) == 50_100)
    #expect(isNonDecreasing(deliveries))
    #expect(deliveries.last!.at <= .ms(120))
}
