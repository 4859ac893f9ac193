/// Datagram duplication: with probability `probability` the receiver gets a datagram twice, as netem's `duplicate`.
///
/// Both copies arrive at the same instant. The copy is made after the bottleneck, so it costs no serialisation
/// (netem, which re-enqueues its copy at the root qdisc, charges it one).
public struct Duplication: DepartureImpairment {
    public var probability: Double

    public init(probability: Double) {
        self.probability = probability
    }

    public init?(profile: DirectionShape) {
        guard profile.duplicate.probability > 0 else { return nil }
        self.init(probability: profile.duplicate.probability)
    }

    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        guard random.chance(probability) else { return }
        segment.copies += 1
    }
}
