/// Propagation delay with uniform jitter: a datagram arrives `delay ± jitter` after it leaves the bottleneck.
///
/// The offset is clamped at zero, so nothing arrives before it was sent; datagrams may overtake each other.
/// (`StreamLink` draws a TCP segment's delay itself and keeps a stream's arrivals in order.)
public struct PropagationDelay: DepartureImpairment {
    public var delay: Duration
    public var jitter: Duration

    public init(delay: Duration, jitter: Duration) {
        self.delay = delay
        self.jitter = jitter
    }

    public init?(profile: DirectionShape) {
        guard profile.delay > .zero || profile.jitter > .zero else { return nil }
        self.init(delay: profile.delay, jitter: profile.jitter)
    }

    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        var offset = delay.nanoseconds
        let spread = jitter.nanoseconds
        if spread > 0 {
            offset = offset.addingSaturating(Int64.random(in: -spread...spread, using: &random))
        }
        segment.deliverAt = segment.deliverAt.addingSaturating(nanoseconds: max(0, offset))
    }
}
