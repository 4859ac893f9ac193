/// TCP's view of packet loss: a lost segment is resent after a retransmission timeout, and the sender stalls.
///
/// A byte stream cannot lose bytes, so this reproduces loss's effect. Each transmission of a segment is lost
/// with probability p. Every loss charges the link one more serialisation of the segment and delays its delivery
/// by one retransmission timeout, doubling per consecutive loss of the same segment (Linux's exponential
/// backoff, capped at `maximumTimeout`); the sender may not send more until the retransmission got through, so
/// throughput falls steeply as p rises, much as Mathis et al. (1997) predict. After `maximumRetransmissions`
/// consecutive losses the connection has given up (Linux's tcp_retries2): the segment is `lost` and the flow
/// stalls for good, which is what 100 % loss does.
public struct RetransmissionLoss: Impairment {
    /// TCP's segment: losses are drawn per segment of this many payload bytes.
    public static let segmentBytes = 1448
    /// Linux's smallest retransmission timeout (TCP_RTO_MIN).
    public static let minimumTimeout = Duration.milliseconds(200)
    /// Linux's largest retransmission timeout (TCP_RTO_MAX).
    public static let maximumTimeout = Duration.seconds(120)
    /// How many consecutive retransmissions of one segment Linux tries before it gives up (tcp_retries2).
    public static let maximumRetransmissions = 15

    /// The wait before the first retransmission on a path with `roundTrip`: max(roundTrip, 200 ms).
    public static func retransmissionTimeout(roundTrip: Duration) -> Duration {
        max(roundTrip, minimumTimeout)
    }

    public var probability: Double
    public var timeout: Duration

    public init(probability: Double, roundTrip: Duration) {
        self.probability = probability
        self.timeout = Self.retransmissionTimeout(roundTrip: roundTrip)
    }

    public init?(profile: DirectionProfile, roundTrip: Duration) {
        guard profile.loss.probability > 0 else { return nil }
        self.init(probability: profile.loss.probability, roundTrip: roundTrip)
    }

    public var segmentSize: Int? { Self.segmentBytes }

    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        var losses = 0
        while random.chance(probability) {
            losses += 1
            if losses > Self.maximumRetransmissions {
                segment.retransmissions += Self.maximumRetransmissions
                segment.lost = true
                segment.deliverAt = .never
                segment.senderStallUntil = .never
                return
            }
        }
        guard losses > 0 else { return }
        var wait: Int64 = 0
        var current = timeout.nanoseconds
        let ceiling = Self.maximumTimeout.nanoseconds
        for _ in 0..<losses {
            wait = wait.addingSaturating(current)
            current = min(ceiling, current.addingSaturating(current))
        }
        segment.retransmissions += losses
        segment.deliverAt = segment.deliverAt.addingSaturating(nanoseconds: wait)
        let stall = segment.serializationEnd.addingSaturating(nanoseconds: wait)
        segment.senderStallUntil = max(segment.senderStallUntil ?? stall, stall)
    }
}
