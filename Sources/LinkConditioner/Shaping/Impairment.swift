/// What happens to one segment after the bottleneck has serialised it, as the impairments decide.
///
/// The link fills in `size` and `serializationEnd` and starts `deliverAt` there; each impairment may push
/// `deliverAt` later, charge the link `retransmissions` extra serialisations of the segment, stall the sender,
/// or mark the segment `lost` (never delivered).
public struct SegmentFate: Hashable, Sendable {
    /// Payload bytes in the segment.
    public var size: Int
    /// When the segment's last byte left the bottleneck.
    public var serializationEnd: Instant
    /// When the receiver may read the segment; never earlier than `serializationEnd`.
    public var deliverAt: Instant
    /// How many extra times the bottleneck must serialise the segment (TCP retransmissions).
    public var retransmissions: Int
    /// The flow may not hand the serialiser more bytes before this instant (a TCP sender waiting on a timeout).
    public var senderStallUntil: Instant?
    /// The segment never reaches the receiver: a dropped datagram, or a TCP connection that gave up retrying.
    public var lost: Bool
    /// Which loss model dropped a datagram, for the link's counters; nil for a segment that was not dropped.
    public var lossCause: LossCause?
    /// How many copies of a datagram the receiver gets (2 when the link duplicated it); 1 for TCP.
    public var copies: Int

    public init(size: Int, serializationEnd: Instant) {
        self.size = size
        self.serializationEnd = serializationEnd
        self.deliverAt = serializationEnd
        self.retransmissions = 0
        self.senderStallUntil = nil
        self.lost = false
        self.lossCause = nil
        self.copies = 1
    }

    /// Marks a datagram dropped by `cause`: it is never delivered.
    public mutating func drop(_ cause: LossCause) {
        lost = true
        lossCause = cause
        deliverAt = .never
    }
}

/// The loss model that dropped a datagram.
public enum LossCause: Hashable, Sendable {
    /// Independent random loss (`loss`).
    case random
    /// The Gilbert-Elliott model's bursty loss (`loss.model = gilbert-elliott`).
    case burst
}

/// One per-segment effect of a link (delay, loss, and so on), applied in a pipeline after serialisation.
///
/// A new impairment is one type conforming to this protocol, one entry in `ImpairmentPipeline.streamKinds` or
/// `datagramKinds`, and one test. It draws every random number from `random`, so a seed reproduces its
/// decisions.
public protocol Impairment: Sendable {
    /// The impairment `profile` asks for, or nil when the profile leaves this effect off.
    init?(profile: DirectionProfile, roundTrip: Duration)

    /// Decides this impairment's share of `segment`'s fate.
    mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom)

    /// The largest segment this impairment can decide on, in bytes; nil when any size will do.
    var segmentSize: Int? { get }
}

extension Impairment {
    public var segmentSize: Int? { nil }
}

/// The impairments a direction profile asks for, applied in order to every serialised segment.
public struct ImpairmentPipeline: Sendable {
    /// Every impairment kind a TCP stream link knows, in the order they apply.
    public static let streamKinds: [any Impairment.Type] = [RetransmissionLoss.self, PropagationDelay.self]
    /// Every impairment kind a datagram link knows, in the order they apply: a datagram is lost or not, then
    /// duplicated, delayed, and perhaps held back behind later ones.
    public static let datagramKinds: [any Impairment.Type] = [
        DatagramLoss.self, GilbertElliottLoss.self, Duplication.self, PropagationDelay.self, Reordering.self,
    ]

    private var stages: [any Impairment]

    /// The largest segment every stage can decide on, or nil when segments may be any size.
    public let segmentSize: Int?

    /// The stages of `kinds` that `profile` turns on, in the order of `kinds`.
    public init(profile: DirectionProfile, roundTrip: Duration, kinds: [any Impairment.Type] = streamKinds) {
        stages = kinds.compactMap { $0.init(profile: profile, roundTrip: roundTrip) }
        segmentSize = stages.compactMap(\.segmentSize).min()
    }

    /// True when no stage is configured, so a segment is delivered as soon as it is serialised.
    public var isEmpty: Bool { stages.isEmpty }

    /// Runs every stage on `segment`, in order.
    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        for index in stages.indices {
            stages[index].apply(to: &segment, random: &random)
        }
    }
}
