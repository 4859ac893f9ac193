import LinkModel
import LinkProfiles
import Testing

/// Datagram duplication.
@Suite(.timeLimit(.minutes(5)))
struct DuplicationTests {
    @Test func duplicationRateLiesWithinTheBinomialInterval() {
        let profile = DirectionProfile(delay: .milliseconds(5), duplicate: Percentage(5))
        let link = DatagramLink(profile: profile, seed: 11)
        let flow = link.makeFlow()

        let run = link.offerDatagrams(20_000, size: 64, every: .microseconds(100), on: flow)
        link.serveAll()
        let outcomes = run.outcomes + flow.drainDatagrams()
        let doubled = outcomes.filter { $0.copies == 2 }.count

        #expect(outcomes.allSatisfy { $0.copies == 1 || $0.copies == 2 })
        #expect(link.counters.duplicates == doubled)
        #expect(link.counters.datagramsDelivered == 20_000 + doubled)
        #expect(withinBinomial99(doubled, trials: 20_000, probability: 0.05))
    }

    @Test func bothCopiesArriveTogetherAndTheCopyCostsNoSerialisation() {
        let profile = DirectionProfile(bandwidth: .kbps(800), burst: ByteCount(bytes: 1000), duplicate: Percentage(100))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        link.enqueue(1000, on: flow, at: .zero)
        link.enqueue(1000, on: flow, at: .zero)
        link.serveAll()
        var outcomes: [(Instant, Int)] = []
        while let next = flow.nextDeliveryTime {
            outcomes += flow.takeDeliverableDatagrams(at: next).map { (next, $0.copies) }
        }

        // Each datagram takes 10 ms at 800 kbit/s; the first rides the burst credit, the second follows it.
        #expect(outcomes.map(\.0) == [.ms(0), .ms(10)])
        #expect(outcomes.map(\.1) == [2, 2])
    }
}
