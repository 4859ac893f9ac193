import LinkConditioner
import Testing

/// Datagram corruption (`corrupt`).
@Suite(.timeLimit(.minutes(5)))
struct CorruptionTests {
    static func corrupting(_ percent: Double, delay: Duration = .milliseconds(5)) -> DirectionProfile {
        var profile = DirectionProfile(delay: delay)
        profile.declaredImpairments[Corruption.self] = Percentage(percent)
        return profile
    }

    @Test func corruptionRateLiesWithinTheBinomialIntervalAndNamesABitOfThePayload() {
        let link = DatagramLink(profile: Self.corrupting(10), seed: 23)
        let flow = link.makeFlow()

        let run = link.offerDatagrams(20_000, size: 48, every: .microseconds(100), on: flow)
        link.serveAll()
        let outcomes = run.outcomes + flow.drainDatagrams()
        let flipped = outcomes.compactMap(\.flippedBit)

        #expect(outcomes.count == 20_000 && outcomes.allSatisfy { $0.copies == 1 })
        #expect(flipped.allSatisfy { (0..<48 * 8).contains($0) })
        #expect(Set(flipped.map { $0 % 8 }).count == 8 && Set(flipped.map { $0 / 8 }).count == 48)
        #expect(link.counters.datagramsCorrupted == flipped.count)
        #expect(withinBinomial99(flipped.count, trials: 20_000, probability: 0.1))
    }

    @Test func aFixedSeedFlipsTheSameBitsOfTheSameDatagrams() {
        func flips() -> [UInt64: Int] {
            let link = DatagramLink(profile: Self.corrupting(10), seed: 5)
            let flow = link.makeFlow()
            let run = link.offerDatagrams(1000, size: 100, every: .microseconds(100), on: flow)
            link.serveAll()
            let outcomes = run.outcomes + flow.drainDatagrams()
            return Dictionary(
                uniqueKeysWithValues: outcomes.compactMap { outcome in outcome.flippedBit.map { (outcome.index, $0) } })
        }

        #expect(flips() == flips())
        // How many datagrams seed 5 corrupts, pinned so a change in the draws shows.
        #expect(flips().count == 100)
    }

    @Test func emptyDatagramsAreNotCorrupted() {
        var corruption = Corruption(probability: 1)
        var random = SeededRandom(seed: 1)
        var empty = SegmentFate(departure: .zero, payloadBytes: 0)

        corruption.apply(to: &empty, random: &random)

        #expect(empty.flippedBit == nil)
    }
}
