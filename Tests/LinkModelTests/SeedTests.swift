import LinkModel
import LinkProfiles
import Testing

private func jitteryLossySchedule(seed: UInt64) -> [DatagramDelivery] {
    let profile = DirectionProfile(
        bandwidth: .mbps(5), delay: .milliseconds(30), jitter: .milliseconds(10), loss: Percentage(3))
    let link = DatagramLink(profile: profile, seed: seed)
    let flow = link.makeFlow()
    let run = link.offerDatagrams(200, size: 1200, every: .milliseconds(1), on: flow)
    _ = link.advance(to: .s(10))
    return run.outcomes + flow.drainDatagrams()
}

@Test func sameSeedGivesTheSameSchedule() {
    #expect(jitteryLossySchedule(seed: 42) == jitteryLossySchedule(seed: 42))
}

@Test func differentSeedsGiveDifferentSchedules() {
    #expect(jitteryLossySchedule(seed: 42) != jitteryLossySchedule(seed: 43))
}

@Test func seededRandomRepeatsItsSequence() {
    var first = SeededRandom(seed: 9)
    var second = SeededRandom(seed: 9)

    let drawsA = (0..<8).map { _ in first.next() }
    let drawsB = (0..<8).map { _ in second.next() }

    #expect(drawsA == drawsB)
    #expect(Set(drawsA).count == 8)
}

@Test func seededRandomUnitDrawsAreInTheUnitInterval() {
    var random = SeededRandom(seed: 0)

    let draws = (0..<10_000).map { _ in random.nextUnit() }

    #expect(draws.allSatisfy { $0 >= 0 && $0 < 1 })
    #expect(abs(draws.reduce(0, +) / 10_000 - 0.5) < 0.02)
}
