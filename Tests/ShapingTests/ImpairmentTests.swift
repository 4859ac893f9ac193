import Testing
import LinkConditioner

@Test func defaultProfileBuildsAnEmptyPipeline() {
    let pipeline = ImpairmentPipeline(profile: DirectionProfile())

    #expect(pipeline.isEmpty)
}

@Test func aLossyProfileBuildsAPipeline() {
    let pipeline = ImpairmentPipeline(profile: DirectionProfile(loss: Percentage(1)))

    #expect(!pipeline.isEmpty)
}

@Test func propagationDelayAddsDelayAfterSerialisation() {
    var delay = PropagationDelay(delay: .milliseconds(30), jitter: .zero)
    var random = SeededRandom(seed: 1)
    var segment = SegmentFate(departure: .ms(5))

    delay.apply(to: &segment, random: &random)

    #expect(segment.deliverAt == .ms(35))
    #expect(!segment.lost && segment.copies == 1)
}
