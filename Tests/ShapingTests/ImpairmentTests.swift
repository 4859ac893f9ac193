import Testing
import LinkConditioner

@Test func defaultProfileBuildsAnEmptyPipeline() {
    let pipeline = ImpairmentPipeline(profile: DirectionProfile(), roundTrip: .zero)

    #expect(pipeline.isEmpty)
    #expect(pipeline.segmentSize == nil)
}

@Test func lossPipelineDecidesPerTCPSegment() {
    let pipeline = ImpairmentPipeline(profile: DirectionProfile(loss: Percentage(1)), roundTrip: .zero)

    #expect(!pipeline.isEmpty)
    #expect(pipeline.segmentSize == RetransmissionLoss.segmentBytes)
}

@Test func propagationDelayAddsDelayAfterSerialisation() {
    var delay = PropagationDelay(delay: .milliseconds(30), jitter: .zero)
    var random = SeededRandom(seed: 1)
    var segment = SegmentFate(size: 100, serializationEnd: .ms(5))

    delay.apply(to: &segment, random: &random)

    #expect(segment.deliverAt == .ms(35))
    #expect(segment.retransmissions == 0 && !segment.lost)
}

@Test func retransmissionLossWithoutLossChangesNothing() {
    var loss = RetransmissionLoss(probability: 0, roundTrip: .zero)
    var random = SeededRandom(seed: 1)
    var segment = SegmentFate(size: 1448, serializationEnd: .ms(5))

    loss.apply(to: &segment, random: &random)

    #expect(segment == SegmentFate(size: 1448, serializationEnd: .ms(5)))
}

@Test func retransmissionLossBacksOffPerConsecutiveLoss() {
    var loss = RetransmissionLoss(probability: 0.5, roundTrip: .zero)
    var random = SeededRandom(seed: 1)
    var waits: Set<Duration> = []

    for _ in 0..<200 {
        var segment = SegmentFate(size: 1448, serializationEnd: .zero)
        loss.apply(to: &segment, random: &random)
        waits.insert(segment.deliverAt - .zero)
        #expect(segment.senderStallUntil == (segment.retransmissions > 0 ? segment.deliverAt : nil))
    }

    #expect(waits.isSuperset(of: [.zero, .milliseconds(200), .milliseconds(600), .milliseconds(1400)]))
}

@Test func certainLossGivesUpAfterLinuxRetries() {
    var loss = RetransmissionLoss(probability: 1, roundTrip: .zero)
    var random = SeededRandom(seed: 1)
    var segment = SegmentFate(size: 1448, serializationEnd: .zero)

    loss.apply(to: &segment, random: &random)

    #expect(segment.lost)
    #expect(segment.retransmissions == RetransmissionLoss.maximumRetransmissions)
}
