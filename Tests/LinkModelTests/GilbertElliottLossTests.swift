import LinkModel
import LinkProfiles
import Testing

/// Bursty loss by the Gilbert-Elliott model.
@Suite(.timeLimit(.minutes(5)))
struct GilbertElliottLossTests {
    private func outcomes(_ parameters: GilbertElliottParameters, count: Int, seed: UInt64) -> (
        DatagramLink, [DatagramDelivery]
    ) {
        let profile = DirectionProfile(lossModel: .gilbertElliott, gilbertElliott: parameters)
        let link = DatagramLink(profile: profile, seed: seed)
        let flow = link.makeFlow()
        let run = link.offerDatagrams(count, size: 100, every: .microseconds(50), on: flow)
        link.serveAll()
        return (link, run.outcomes + flow.drainDatagrams())
    }

    @Test(arguments: [(1.0, 25.0), (2.0, 50.0), (0.5, 10.0)])
    func meanBurstLengthIsOneOverR(p: Double, r: Double) {
        let parameters = GilbertElliottParameters(goodToBad: Percentage(p), badToGood: Percentage(r))
        let (link, all) = outcomes(parameters, count: 100_000, seed: 7)
        let bursts = lossBursts(all)
        let mean = Double(bursts.reduce(0, +)) / Double(bursts.count)
        let expected = 100 / r
        // A burst's length is geometric: standard deviation sqrt(1 − r) / r; allow 3 standard errors.
        let tolerance = 3 * (1 - r / 100).squareRoot() / (r / 100) / Double(bursts.count).squareRoot()

        #expect(abs(mean - expected) <= tolerance, "mean burst \(mean), expected \(expected) ± \(tolerance)")
        #expect(link.counters.burstLosses == bursts.reduce(0, +))
        #expect(link.counters.randomLosses == 0)
    }

    @Test func longRunLossRateIsTheStationaryMix() {
        let parameters = GilbertElliottParameters(goodToBad: Percentage(2), badToGood: Percentage(20))
        let (_, all) = outcomes(parameters, count: 100_000, seed: 3)
        let rate = Double(all.filter { $0.copies == 0 }.count) / Double(all.count)

        #expect(abs(parameters.meanLossRate - 2.0 / 22.0) < 1e-12)
        #expect(abs(rate - parameters.meanLossRate) < 0.01)
    }

    @Test func theGoodStateLosesNothingByDefault() {
        var model = GilbertElliottLoss(parameters: GilbertElliottParameters(goodToBad: .zero))
        var random = SeededRandom(seed: 1)

        for _ in 0..<1000 {
            #expect(model.drawLoss(random: &random) == nil)
        }
        #expect(!model.isBad)
    }

    @Test func randomLossIsOffUnderTheGilbertElliottModel() {
        let profile = DirectionProfile(loss: Percentage(50), lossModel: .gilbertElliott)
        let entry = EntryImpairments(profile: profile)

        #expect(DatagramLoss(profile: profile) == nil)
        #expect(GilbertElliottLoss(profile: profile) != nil)
        #expect(!entry.isEmpty)
    }
}
