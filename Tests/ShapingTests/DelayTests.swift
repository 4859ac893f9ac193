import Testing
import LinkConditioner

@Test func delayOnlyDeliversExactlyAtArrivalPlusDelay() {
    let link = LinkDirection(profile: DirectionProfile(delay: .milliseconds(40)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(700, on: flow, at: .ms(3))
    _ = link.advance(to: .ms(3))
    link.enqueue(300, on: flow, at: .ms(10))
    _ = link.advance(to: .ms(10))

    #expect(flow.takeDeliverable(at: .ms(42.999)) == 0)
    #expect(flow.nextDeliveryTime == .ms(43))
    #expect(flow.drainSchedule() == [Delivery(at: .ms(43), bytes: 700), Delivery(at: .ms(50), bytes: 300)])
}

@Test func delayAddsToSerialisation() {
    let rate = BitRate.mbps(8)
    let profile = DirectionProfile(bandwidth: rate, delay: .milliseconds(100), burst: ByteCount(bytes: 0))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(1000, on: flow, at: .zero)
    let deliveries = link.schedule(of: [flow])[0]

    #expect(deliveries.last!.at == Instant.zero + rate.transmissionTime(bytes: 1000) + .milliseconds(100))
}

@Test func jitterStaysWithinItsRangeAndNeverReorders() {
    let profile = DirectionProfile(delay: .milliseconds(50), jitter: .milliseconds(20))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 7)
    let flow = link.makeFlow()
    var arrivals: [Delivery] = []

    for index in 0..<1000 {
        let now = Instant.ms(Double(index))
        link.enqueue(100, on: flow, at: now)
        _ = link.advance(to: now)
        arrivals.append(Delivery(at: now, bytes: 100))
    }
    let deliveries = flow.drainSchedule()
    let observed = latencies(arrivals: arrivals, deliveries: deliveries)

    #expect(total(deliveries) == 100_000)
    #expect(isNonDecreasing(deliveries))
    #expect(observed.allSatisfy { $0 >= .milliseconds(30) && $0 <= .milliseconds(70) })
    #expect(Set(observed).count > 100)
}

@Test func jitterLargerThanDelayNeverDeliversBeforeSerialisation() {
    let profile = DirectionProfile(delay: .milliseconds(5), jitter: .milliseconds(20))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 3)
    let flow = link.makeFlow()
    var arrivals: [Delivery] = []

    for index in 0..<200 {
        let now = Instant.ms(Double(index))
        link.enqueue(10, on: flow, at: now)
        _ = link.advance(to: now)
        arrivals.append(Delivery(at: now, bytes: 10))
    }
    let observed = latencies(arrivals: arrivals, deliveries: flow.drainSchedule())

    #expect(observed.allSatisfy { $0 >= .zero && $0 <= .milliseconds(25) })
}
