import LinkModel
import LinkProfiles
import Testing

/// Independent random loss of datagrams.
@Suite(.timeLimit(.minutes(5)))
struct DatagramLossTests {
    @Test func randomLossRateLiesWithinTheBinomialInterval() {
        let profile = DirectionProfile(delay: .milliseconds(20), loss: Percentage(3))
        let link = DatagramLink(profile: profile, seed: 42)
        let flow = link.makeFlow()

        let run = link.offerDatagrams(20_000, size: 200, every: .microseconds(100), on: flow)
        link.serveAll()
        let outcomes = run.outcomes + flow.drainDatagrams()
        let lost = outcomes.filter { $0.copies == 0 }.count

        #expect(outcomes.count == 20_000)
        #expect(link.counters.randomLosses == lost)
        #expect(withinBinomial99(lost, trials: 20_000, probability: 0.03))
    }

    @Test func aLostDatagramNamesRandomLossAsItsCause() {
        var loss = DatagramLoss(probability: 1)
        var random = SeededRandom(seed: 1)

        #expect(loss.drawLoss(random: &random) == .random)
    }
}
