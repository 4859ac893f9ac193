// The Gilbert-Elliott model: a two-state Markov chain sampled once per datagram.
//
//     state Good: the datagram is lost with probability k' (loss-good), then  Good → Bad with probability p
//     state Bad:  the datagram is lost with probability h' (loss-bad),  then  Bad → Good with probability r
//
// The chain spends 1/r datagrams in Bad on average (a geometric sojourn) and 1/p in Good, so with loss-bad 100 %
// and loss-good 0 % the mean loss burst is 1/r datagrams and the long-run loss rate is p / (p + r) (Elliott 1963;
// netem's `gemodel p r 1-h 1-k` takes the same four numbers, with h and k the delivery probabilities).

/// Whether datagrams are lost independently or in bursts.
public enum LossModel: String, Hashable, Sendable, CaseIterable {
    /// Each datagram is lost with probability `loss`, independently of the others.
    case random
    /// Losses come in bursts, driven by the Gilbert-Elliott two-state model.
    case gilbertElliott = "gilbert-elliott"
}

/// The four numbers of the Gilbert-Elliott model, named as netem's `gemodel p r 1-h 1-k`.
public struct GilbertElliottParameters: Hashable, Sendable {
    /// Probability of moving from the good to the bad state after a datagram (netem's p).
    public var goodToBad: Percentage
    /// Probability of moving from the bad to the good state after a datagram (netem's r); 1/r is the mean burst.
    public var badToGood: Percentage
    /// Probability that a datagram is lost in the bad state (netem's 1-h).
    public var lossInBad: Percentage
    /// Probability that a datagram is lost in the good state (netem's 1-k).
    public var lossInGood: Percentage

    public init(
        goodToBad: Percentage = Percentage(1), badToGood: Percentage = Percentage(25),
        lossInBad: Percentage = Percentage(100), lossInGood: Percentage = .zero
    ) {
        self.goodToBad = goodToBad
        self.badToGood = badToGood
        self.lossInBad = lossInBad
        self.lossInGood = lossInGood
    }

    /// The fraction of datagrams lost in the long run: the stationary mix of the two states' loss rates.
    public var meanLossRate: Double {
        let p = goodToBad.probability
        let r = badToGood.probability
        guard p + r > 0 else { return lossInGood.probability }
        return (r * lossInGood.probability + p * lossInBad.probability) / (p + r)
    }
}

/// Bursty datagram loss by the Gilbert-Elliott model; the chain starts in the good state.
public struct GilbertElliottLoss: EntryImpairment {
    public var parameters: GilbertElliottParameters
    /// Whether the chain is in the bad state now.
    public private(set) var isBad = false

    public init(parameters: GilbertElliottParameters) {
        self.parameters = parameters
    }

    public init?(profile: DirectionShape) {
        guard profile.lossModel == .gilbertElliott else { return nil }
        self.init(parameters: profile.gilbertElliott)
    }

    public mutating func drawLoss(random: inout SeededRandom) -> LossCause? {
        step(random: &random) ? .burst : nil
    }

    /// One step of the chain for one packet: whether the chain loses it, then the move to the next state. Two
    /// draws from `random` each time, loss first, whatever the packet's fate otherwise.
    public mutating func step(random: inout SeededRandom) -> Bool {
        let lossRate = isBad ? parameters.lossInBad : parameters.lossInGood
        let transition = isBad ? parameters.badToGood : parameters.goodToBad
        let lost = random.chance(lossRate.probability)
        if random.chance(transition.probability) { isBad.toggle() }
        return lost
    }
}
