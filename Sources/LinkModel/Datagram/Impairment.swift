/// What happens to one datagram, as the impairments decide.
///
/// `deliverAt` starts when the datagram left the bottleneck (for the loss drawn as it enters: when it entered);
/// each impairment may push it later, add copies, or mark the datagram `lost` (never delivered).
public struct SegmentFate: Hashable, Sendable {
    /// When the receiver may read the datagram; never earlier than it left the bottleneck.
    public var deliverAt: Instant
    /// The datagram never reaches the receiver.
    public var lost: Bool
    /// Which loss model dropped a datagram, for the link's counters; nil for a segment that was not dropped.
    public var lossCause: LossCause?
    /// How many copies of the datagram the receiver gets (2 when the link duplicated it).
    public var copies: Int
    /// The datagram's payload bytes, for effects on its content (0 where only its timing matters).
    public var payloadBytes = 0
    /// The payload bit the link flips, counted from the first byte's most significant bit; nil leaves it intact.
    public var flippedBit: Int?

    /// The fate of a datagram whose last byte left the bottleneck at `departure`: delivered then, once.
    public init(departure: Instant) {
        self.deliverAt = departure
        self.lost = false
        self.lossCause = nil
        self.copies = 1
    }

    /// The fate of a datagram of `payloadBytes` bytes whose last byte left the bottleneck at `departure`.
    public init(departure: Instant, payloadBytes: Int) {
        self.init(departure: departure)
        self.payloadBytes = payloadBytes
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

/// Where on a datagram's way through a link an impairment acts.
public enum ImpairmentStage: Sendable {
    /// As the datagram enters the link, before its queue and rate, where netem draws its loss
    /// (`netem_enqueue`): a datagram dropped here takes no room in the queue and no time at the rate. Only loss
    /// acts here: the link keeps nothing of this stage's decision but whether the datagram was lost.
    case entry
    /// Once the bottleneck has serialised the datagram.
    case departure
}

/// One per-datagram effect of a link (delay, loss, and so on), applied in a pipeline at its `stage`.
///
/// A new impairment is one type conforming to this protocol, one entry in `ImpairmentPipeline.datagramKinds`, and
/// one test. (TCP streams take their loss and delay in `StreamLink`'s transport model instead.) It draws every
/// random number from `random`, so a seed reproduces its decisions.
public protocol Impairment: Sendable {
    /// Where the impairment acts; after the bottleneck unless it says otherwise.
    static var stage: ImpairmentStage { get }

    /// The impairment `profile` asks for, or nil when the profile leaves this effect off.
    init?(profile: DirectionShape)

    /// Decides this impairment's share of `segment`'s fate.
    mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom)
}

extension Impairment {
    public static var stage: ImpairmentStage { .departure }
}

/// The impairments a direction profile asks for, applied in order to every datagram at one stage.
public struct ImpairmentPipeline: Sendable {
    /// Every impairment kind a datagram link knows, in the order they apply: a datagram is lost or not (as it
    /// enters), then duplicated, delayed, and perhaps held back behind later ones.
    public static let datagramKinds: [any Impairment.Type] = [
        DatagramLoss.self, GilbertElliottLoss.self, Duplication.self, PropagationDelay.self, Reordering.self,
        Corruption.self,
    ]

    private var impairments: [any Impairment]

    /// The impairments of `datagramKinds` acting at `stage` that `profile` turns on, in their registered order.
    public init(profile: DirectionShape, stage: ImpairmentStage) {
        impairments = Self.datagramKinds.filter { $0.stage == stage }.compactMap { $0.init(profile: profile) }
    }

    /// True when the profile turns none of the stage's kinds on, so the pipeline leaves every datagram as it is.
    public var isEmpty: Bool { impairments.isEmpty }

    /// Runs every impairment on `segment`, in order.
    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        for index in impairments.indices {
            impairments[index].apply(to: &segment, random: &random)
        }
    }
}
