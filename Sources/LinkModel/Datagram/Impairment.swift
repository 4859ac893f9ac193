/// What happens to one datagram after the bottleneck, as the departure impairments decide.
///
/// `deliverAt` starts when the datagram left the bottleneck; each impairment may push it later, add copies, or flip
/// a payload bit. Loss is no part of it: the entry stage has drawn it already.
public struct SegmentFate: Hashable, Sendable {
    /// When the receiver may read the datagram; never earlier than it left the bottleneck.
    public var deliverAt: Instant
    /// How many copies of the datagram the receiver gets (2 when the link duplicated it).
    public var copies: Int
    /// The datagram's payload bytes, for effects on its content (0 where only its timing matters).
    public var payloadBytes = 0
    /// The payload bit the link flips, counted from the first byte's most significant bit; nil leaves it intact.
    public var flippedBit: Int?

    /// The fate of a datagram whose last byte left the bottleneck at `departure`: delivered then, once.
    public init(departure: Instant) {
        self.deliverAt = departure
        self.copies = 1
    }

    /// The fate of a datagram of `payloadBytes` bytes whose last byte left the bottleneck at `departure`.
    public init(departure: Instant, payloadBytes: Int) {
        self.init(departure: departure)
        self.payloadBytes = payloadBytes
    }
}

/// The loss model that dropped a datagram.
public enum LossCause: Hashable, Sendable {
    /// Independent random loss (`loss`).
    case random
    /// The Gilbert-Elliott model's bursty loss (`loss.model = gilbert-elliott`).
    case burst
}

/// One per-datagram effect of a link (loss, delay, and so on) that a direction profile turns on.
///
/// The protocol an impairment conforms to says where it acts: `EntryImpairment` as the datagram enters the link,
/// `DepartureImpairment` once it leaves the bottleneck. A new impairment is one type conforming to either, one entry in
/// `ImpairmentKind.all`, and one test. (TCP streams take their loss and delay in `StreamLink`'s transport model
/// instead.) It draws every random number from the `random` it is given, so a seed reproduces its decisions.
public protocol Impairment: Sendable {
    /// The impairment `profile` asks for, or nil when the profile leaves this effect off.
    init?(profile: DirectionShape)
}

/// An impairment drawn as a datagram enters the link, before its queue and rate, where netem draws its loss
/// (`netem_enqueue`). It decides only whether the datagram is lost, so a datagram lost here takes no room in the
/// queue and no time at the rate, and no other effect can be drawn before the bottleneck.
public protocol EntryImpairment: Impairment {
    /// Draws whether the datagram entering the link now is lost, and by which loss model; nil lets it in.
    mutating func drawLoss(random: inout SeededRandom) -> LossCause?
}

/// An impairment applied once the bottleneck has serialised the datagram.
public protocol DepartureImpairment: Impairment {
    /// Decides this impairment's share of `segment`'s fate.
    mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom)
}

/// An impairment type a datagram link runs, registered with the stage it acts at.
public enum ImpairmentKind: Sendable {
    /// Drawn as the datagram enters the link.
    case entry(any EntryImpairment.Type)
    /// Applied once the bottleneck has serialised the datagram.
    case departure(any DepartureImpairment.Type)

    /// Every impairment kind a datagram link knows, in the order they apply: a datagram is lost or not as it enters,
    /// then, once it leaves the bottleneck, duplicated, delayed, perhaps held back behind later ones, and corrupted.
    public static let all: [ImpairmentKind] = [
        .entry(DatagramLoss.self), .entry(GilbertElliottLoss.self), .departure(Duplication.self),
        .departure(PropagationDelay.self), .departure(Reordering.self), .departure(Corruption.self),
    ]

    /// The impairment type, whatever its stage.
    public var type: any Impairment.Type {
        switch self {
        case .entry(let type): type
        case .departure(let type): type
        }
    }

    /// The type of an entry impairment; nil for a departure one.
    var entryType: (any EntryImpairment.Type)? {
        if case .entry(let type) = self { type } else { nil }
    }

    /// The type of a departure impairment; nil for an entry one.
    var departureType: (any DepartureImpairment.Type)? {
        if case .departure(let type) = self { type } else { nil }
    }
}

/// The entry impairments a direction profile turns on, drawn in their order in `ImpairmentKind.all` for every
/// datagram that enters the link.
public struct EntryImpairments: Sendable {
    private var impairments: [any EntryImpairment]

    /// The entry impairments `profile` turns on.
    public init(profile: DirectionShape) {
        impairments = ImpairmentKind.all.compactMap(\.entryType).compactMap { $0.init(profile: profile) }
    }

    /// True when the profile turns no loss on, so every datagram enters without a draw.
    public var isEmpty: Bool { impairments.isEmpty }

    /// Draws whether a datagram entering the link now is lost, and why. Every impairment draws, so a loss model's
    /// state moves on with each datagram; the first that loses it names the cause.
    public mutating func drawLoss(random: inout SeededRandom) -> LossCause? {
        var cause: LossCause?
        for index in impairments.indices {
            let drawn = impairments[index].drawLoss(random: &random)
            if cause == nil { cause = drawn }
        }
        return cause
    }
}

/// The departure impairments a direction profile turns on, applied in their order in `ImpairmentKind.all` to every
/// datagram that leaves the bottleneck.
public struct DepartureImpairments: Sendable {
    private var impairments: [any DepartureImpairment]

    /// The departure impairments `profile` turns on.
    public init(profile: DirectionShape) {
        impairments = ImpairmentKind.all.compactMap(\.departureType).compactMap { $0.init(profile: profile) }
    }

    /// True when the profile turns none on, so a datagram is delivered, once and intact, as it leaves the bottleneck.
    public var isEmpty: Bool { impairments.isEmpty }

    /// Runs every impairment on `segment`, in order.
    public mutating func apply(to segment: inout SegmentFate, random: inout SeededRandom) {
        for index in impairments.indices {
            impairments[index].apply(to: &segment, random: &random)
        }
    }
}
