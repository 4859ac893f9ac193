/// Datagram reordering: with probability `probability` a datagram is held back by `holdBack(delay:)` after its
/// propagation delay, so datagrams sent during that time overtake it.
///
/// netem instead sends a reordered packet early, which needs a delay to jump; holding back reorders on a link
/// without delay too. The hold is the one-way delay, at least `minimumHoldBack`.
public struct Reordering: DepartureImpairment {
    /// The smallest extra delay of a held-back datagram.
    public static let minimumHoldBack = Duration.milliseconds(10)

    /// How long a reordered datagram waits after its propagation delay on a link with one-way `delay`.
    public static func holdBack(delay: Duration) -> Duration {
        max(delay, minimumHoldBack)
    }

    public var probability: Double
    public var holdBack: Duration

    public init(probability: Double, holdBack: Duration) {
        self.probability = probability
        self.holdBack = holdBack
    }

    public init?(profile: DirectionShape) {
        guard profile.reorder.probability > 0 else { return nil }
        self.init(probability: profile.reorder.probability, holdBack: Self.holdBack(delay: profile.delay))
    }

    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        guard random.chance(probability) else { return }
        segment.deliverAt = segment.deliverAt.addingSaturating(nanoseconds: holdBack.nanoseconds)
    }
}
