/// Independent random loss of datagrams: each one is dropped with probability `loss`, as netem's `loss random`.
///
/// Unlike a lost TCP segment, which the transport model's sender repairs, a dropped datagram is gone.
public struct DatagramLoss: EntryImpairment {
    public var probability: Double

    public init(probability: Double) {
        self.probability = probability
    }

    public init?(profile: DirectionShape) {
        guard profile.lossModel == .random, profile.loss.probability > 0 else { return nil }
        self.init(probability: profile.loss.probability)
    }

    public mutating func drawLoss(random: inout SeededRandom) -> LossCause? {
        random.chance(probability) ? .random : nil
    }
}
