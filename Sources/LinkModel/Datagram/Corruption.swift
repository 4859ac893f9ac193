/// Datagram corruption, as netem's `corrupt`: with probability `probability` one random bit of a datagram's payload
/// is flipped on its way.
///
/// netem flips a bit of the packet, so the receiving kernel's checksum usually discards it; linkcond relays the
/// payload, so the receiver gets it with the bit flipped. Both copies of a duplicated datagram carry the flip. TCP
/// streams are never corrupted: their bytes cross the TCP model, which delivers them intact or not at all.
public struct Corruption: ProbabilityImpairment, DepartureImpairment {
    public static let name = "corrupt"
    public static let outcome = "corrupted"
    public static let effect =
        "probability that one random bit of a datagram's payload is flipped (netem "
        + "`corrupt`); both copies of a duplicated datagram carry it; TCP streams are never corrupted, and a run whose "
        + "listeners are all TCP says so"

    public var probability: Double

    public init(probability: Double) {
        self.probability = probability
    }

    /// Draws whether to corrupt a delivered datagram, then, if so, which of its payload bits to flip.
    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        guard random.chance(probability), segment.payloadBytes > 0 else { return }
        segment.flippedBit = Int.random(in: 0..<segment.payloadBytes * 8, using: &random)
    }
}
