import Testing
import LinkConditioner

@Test func unlimitedLinkWithoutDelayDeliversImmediately() {
    let link = LinkDirection(profile: DirectionProfile(), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(1000, on: flow, at: .ms(5))
    let changed = link.advance(to: .ms(5))

    #expect(changed.map(ObjectIdentifier.init) == [ObjectIdentifier(flow)])
    #expect(flow.takeDeliverable(at: .ms(5)) == 1000)
    #expect(link.nextServiceTime == nil)
}

@Test(arguments: [1.0, 10.0, 100.0])
func megabyteTakesItsSerialisationTime(megabitsPerSecond: Double) {
    let rate = BitRate.mbps(megabitsPerSecond)
    let link = LinkDirection(profile: DirectionProfile(bandwidth: rate), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(1_000_000, on: flow, at: .zero)
    let deliveries = link.schedule(of: [flow])[0]

    let expected = 8 / megabitsPerSecond
    let oneSlice = rate.transmissionTime(bytes: max(1448, Int(rate.bitsPerSecond / 8000))).seconds
    #expect(total(deliveries) == 1_000_000)
    #expect(abs(deliveries.last!.at.seconds - expected) <= oneSlice + 1e-6)
}

@Test func lateAdvanceGivesTheSameScheduleAsTimelyOnes() {
    let profile = DirectionProfile(bandwidth: .mbps(2), delay: .milliseconds(30))
    let timely = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let late = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let onceAtEnd = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let flows = [timely.makeFlow(), late.makeFlow(), onceAtEnd.makeFlow()]

    timely.enqueue(300_000, on: flows[0], at: .zero)
    late.enqueue(300_000, on: flows[1], at: .zero)
    onceAtEnd.enqueue(300_000, on: flows[2], at: .zero)
    let expected = timely.schedule(of: [flows[0]])[0]
    let lateSchedule = late.schedule(of: [flows[1]], lateness: .milliseconds(7))[0]
    _ = onceAtEnd.advance(to: .s(60))
    let caughtUp = flows[2].drainSchedule()

    #expect(lateSchedule == expected)
    #expect(caughtUp == expected)
}

@Test func burstPassesAtOnceAfterIdleThenRateApplies() {
    let profile = DirectionProfile(bandwidth: .mbps(1), burst: .kib(100))
    let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(100 * 1024, on: flow, at: .s(10))
    _ = link.advance(to: .s(10))
    let burst = flow.takeDeliverable(at: .s(10))
    link.enqueue(100 * 1024, on: flow, at: .s(10))
    let rest = link.schedule(of: [flow])[0]

    #expect(burst == 100 * 1024)
    let restTime = rest.last!.at - .s(10)
    #expect(abs(restTime.seconds - 0.8192) < 0.012)
}

@Test func defaultBurstIsOneMillisecondOfRate() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .mbps(100)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(12_500, on: flow, at: .s(1))
    _ = link.advance(to: .s(1))

    #expect(flow.takeDeliverable(at: .s(1)) == 12_500)
}

@Test func queuedBytesAddLatency() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .mbps(1)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(100_000, on: flow, at: .zero)
    link.enqueue(1, on: flow, at: .zero)
    let deliveries = link.schedule(of: [flow])[0]

    #expect(abs(deliveries.last!.at.seconds - 0.8) < 0.012)
}

@Test func nextServiceTimeIsWhenTheSerialiserFreesUp() {
    let rate = BitRate.mbps(1)
    let link = LinkDirection(profile: DirectionProfile(bandwidth: rate), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    let segment = rate.transmissionTime(bytes: 1448)

    link.enqueue(3000, on: flow, at: .zero)
    _ = link.advance(to: .zero)

    #expect(link.nextServiceTime == Instant.zero + segment)
    #expect(flow.nextDeliveryTime == .zero)
    #expect(flow.takeDeliverable(at: .zero) == 1448)
    #expect(flow.nextDeliveryTime == Instant.zero + segment)
    #expect(flow.queuedBytes == 3000 - 2 * 1448)
    #expect(flow.inFlightBytes == 1448)
}

@Test func idleLinkHasNoServiceOrDeliveryTime() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .mbps(1)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(5000, on: flow, at: .zero)
    link.serveAll()
    _ = flow.drainSchedule()

    #expect(link.nextServiceTime == nil)
    #expect(flow.nextDeliveryTime == nil)
    #expect(link.advance(to: .s(100)).isEmpty)
}

@Test func zeroBandwidthSendsNothingAndDoesNotSpin() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .mbps(0)), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(1000, on: flow, at: .zero)
    let changed = link.advance(to: .s(100))

    #expect(changed.isEmpty)
    #expect(link.nextServiceTime == nil)
    #expect(flow.queuedBytes == 1000)
}
