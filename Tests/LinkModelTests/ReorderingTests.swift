import LinkModel
import LinkProfiles
import Testing

/// Datagram reordering by holding some datagrams back.
@Suite(.timeLimit(.minutes(5)))
struct ReorderingTests {
    @Test func reorderRateLiesWithinTheBinomialInterval() {
        let profile = DirectionProfile(delay: .milliseconds(20), reorder: Percentage(5))
        let link = DatagramLink(profile: profile, seed: 5)
        let flow = link.makeFlow()

        // One datagram a millisecond: a datagram held back 20 ms is overtaken by the next ones.
        let run = link.offerDatagrams(10_000, size: 100, every: .milliseconds(1), on: flow)
        link.serveAll()
        let order = (run.outcomes + flow.drainDatagrams()).map(\.index)
        var overtaken = 0
        var highest: UInt64 = 0
        for (position, index) in order.enumerated() {
            if position > 0 && index < highest { overtaken += 1 }
            highest = max(highest, index)
        }

        #expect(order.count == 10_000)
        #expect(withinBinomial99(overtaken, trials: 10_000, probability: 0.05))
    }

    @Test func aReorderedDatagramArrivesOneHoldBackLate() {
        var reordering = Reordering(probability: 1, holdBack: Reordering.holdBack(delay: .milliseconds(30)))
        var random = SeededRandom(seed: 1)
        var segment = SegmentFate(departure: .ms(2))
        segment.deliverAt = .ms(32)

        reordering.apply(to: &segment, random: &random)

        #expect(segment.deliverAt == .ms(62))
    }

    @Test func theHoldBackIsAtLeastTenMilliseconds() {
        #expect(Reordering.holdBack(delay: .zero) == .milliseconds(10))
        #expect(Reordering.holdBack(delay: .milliseconds(100)) == .milliseconds(100))
    }
}
