import LinkModel
import LinkProfiles
import Testing

@Test func aDefaultProfileTurnsNoImpairmentOn() {
    let profile = DirectionProfile()

    #expect(EntryImpairments(profile: profile).isEmpty)
    #expect(DepartureImpairments(profile: profile).isEmpty)
}

@Test func aLossyProfileTurnsOnOnlyAnEntryImpairment() {
    let profile = DirectionProfile(loss: Percentage(1))

    #expect(!EntryImpairments(profile: profile).isEmpty)
    #expect(DepartureImpairments(profile: profile).isEmpty)
}

@Test func propagationDelayAddsDelayAfterSerialisation() {
    var delay = PropagationDelay(delay: .milliseconds(30), jitter: .zero)
    var random = SeededRandom(seed: 1)
    var segment = SegmentFate(departure: .ms(5))

    delay.apply(to: &segment, random: &random)

    #expect(segment.deliverAt == .ms(35))
    #expect(segment.copies == 1)
}

@Test func jitterSpreadsDatagramsEvenlyOnBothSidesOfTheDelay() throws {
    var delay = PropagationDelay(delay: .milliseconds(30), jitter: .milliseconds(10))
    var random = SeededRandom(seed: 7)
    var offsets: [Int64] = []

    for _ in 0..<10_000 {
        var segment = SegmentFate(departure: .ms(5))
        delay.apply(to: &segment, random: &random)
        offsets.append(segment.deliverAt.nanoseconds - Instant.ms(5).nanoseconds)
    }

    // Uniform on 30 ± 10 ms: both ends are reached, and the mean is the delay (its standard error is 0.06 ms).
    #expect(offsets.allSatisfy { (20_000_000...40_000_000).contains($0) })
    #expect(try #require(offsets.min()) < 21_000_000)
    #expect(try #require(offsets.max()) > 39_000_000)
    let mean = Double(offsets.reduce(0, +)) / Double(offsets.count)
    #expect(abs(mean - 30_000_000) < 300_000, "mean offset \(mean / 1e6) ms for 30 ± 10 ms")
}
