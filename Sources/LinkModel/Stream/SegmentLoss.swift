/// Whether the link loses a TCP packet (a segment, an ACK or a SYN): each one independently with the profile's
/// `loss`, or as one step of a Gilbert-Elliott chain when the profile asks for bursts.
///
/// A stream link keeps one per kind of packet, each drawing from its own generator, and lives on the thread of the
/// `StreamLink` that owns it.
struct SegmentLoss: Sendable {
    private enum Model: Sendable {
        /// Each packet is lost with this probability; zero draws nothing.
        case independent(Percentage)
        /// Packets are lost in bursts; the chain's state carries from one packet to the next.
        case burst(GilbertElliottLoss)
    }

    private var model: Model

    /// The loss `shape` asks for, with the chain in its good state.
    init(shape: DirectionShape) {
        model = GilbertElliottLoss(profile: shape).map(Model.burst) ?? .independent(shape.loss)
    }

    /// Follows a profile switch to `shape`; a chain whose parameters did not change keeps its state.
    mutating func update(shape: DirectionShape) {
        if case .burst(let chain) = model, shape.lossModel == .gilbertElliott,
            chain.parameters == shape.gilbertElliott
        {
            return
        }
        self = SegmentLoss(shape: shape)
    }

    /// Whether any packet can be lost: a lossless link draws nothing.
    var canLose: Bool {
        switch model {
        case .independent(let loss): loss.probability > 0
        case .burst: true
        }
    }

    /// Whether the next packet is lost, drawn from `random`: one draw under independent loss (none at 0 %), two
    /// for a step of the chain.
    mutating func isLost(random: inout SeededRandom) -> Bool {
        switch model {
        case .independent(let loss):
            let probability = loss.probability
            return probability > 0 && random.chance(probability)
        case .burst(var chain):
            let lost = chain.step(random: &random)
            model = .burst(chain)
            return lost
        }
    }
}

extension DirectionShape {
    /// Whether this direction can lose a TCP packet (a segment, an ACK, a SYN or SYN-ACK): random loss above zero
    /// or Gilbert-Elliott bursts. A stream link that cannot draws no loss at all.
    public var losesTCPPackets: Bool { SegmentLoss(shape: self).canLose }
}
