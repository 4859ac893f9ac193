import LinkModel
import LinkProfiles
import Testing

/// Datagram flows on a link direction: tail drop, outcomes in delivery order.
@Suite(.timeLimit(.minutes(5)))
struct DatagramLinkTests {
    @Test func anUnimpairedLinkDeliversEachDatagramAtOnceAndInOrder() {
        let link = DatagramLink(profile: DirectionProfile(), seed: 1)
        let flow = link.makeFlow()

        let admissions = [300, 20, 1200].map { link.enqueue($0, on: flow, at: .ms(1)) }
        _ = link.advance(to: .ms(1))
        let outcomes = flow.takeDeliverableDatagrams(at: .ms(1))

        #expect(admissions == [.accepted(index: 0), .accepted(index: 1), .accepted(index: 2)])
        #expect(
            outcomes == [
                DatagramDelivery(index: 0, size: 300, copies: 1), DatagramDelivery(index: 1, size: 20, copies: 1),
                DatagramDelivery(index: 2, size: 1200, copies: 1),
            ])
        #expect(link.counters.datagramsDelivered == 3)
    }

    @Test func eachDatagramIsOneSliceSerialisedAtTheRate() {
        let profile = DirectionProfile(bandwidth: .kbps(800), delay: .milliseconds(10), burst: ByteCount(bytes: 1000))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        link.enqueue(1000, on: flow, at: .zero)
        link.enqueue(1000, on: flow, at: .zero)
        link.serveAll()
        var times: [Instant] = []
        while let next = flow.nextDeliveryTime {
            times.append(next)
            _ = flow.takeDeliverableDatagrams(at: next)
        }

        // 1000 bytes at 800 kbit/s take 10 ms; the first rides the idle link's one-datagram burst credit.
        #expect(times == [.ms(10), .ms(20)])
    }

    @Test func aFullQueueDropsDatagramsAtTheTailAndCountsThem() {
        let profile = DirectionProfile(bandwidth: .mbps(1), queue: ByteCount(bytes: 12_000))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        // 1000 datagrams of 1200 bytes offered at 10 Mbit/s into a 1 Mbit/s link with a 10-datagram queue.
        let run = link.offerDatagrams(1000, size: 1200, every: .microseconds(960), on: flow)
        link.serveAll()
        let delivered = run.outcomes + flow.drainDatagrams()
        let accepted = run.accepted

        #expect(link.counters.tailDrops == 1000 - accepted)
        #expect(accepted >= 95 && accepted <= 115)
        #expect(delivered.count == accepted)
        #expect(link.counters.datagramsEnqueued == 1000)
    }

    @Test func aDelayOnlyLinkCountsDatagramsInFlightAgainstItsQueue() {
        let profile = DirectionProfile(delay: .seconds(20), queue: ByteCount(bytes: 250_000))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        // A flood of 60 KB datagrams for one second: all of them would still be in flight for 19 more seconds.
        let run = link.offerDatagrams(1000, size: 60_000, every: .milliseconds(1), on: flow)

        #expect(run.accepted == 4)
        #expect(link.counters.tailDrops == 996)
        #expect(link.counters.inFlightBytes == 240_000)
        #expect(link.counters.queuedBytes == 0)
    }

    @Test func datagramsDeliveredFromADelayLineFreeTheQueueForNewOnes() {
        let profile = DirectionProfile(delay: .seconds(20), queue: ByteCount(bytes: 250_000))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()
        link.offerDatagrams(10, size: 60_000, every: .milliseconds(1), on: flow)

        let later = link.offerDatagrams(
            10, size: 60_000, every: .milliseconds(1), from: .ms(20_010),
            on: flow)

        #expect(later.outcomes.count == 4)
        #expect(later.accepted == 4)
        #expect(link.counters.tailDrops == 12)
    }

    @Test func theSameSeedDropsTheSameDatagrams() {
        func lostIndexes(seed: UInt64) -> [UInt64] {
            let profile = DirectionProfile(loss: Percentage(10), lossModel: .random)
            let link = DatagramLink(profile: profile, seed: seed)
            let flow = link.makeFlow()
            let run = link.offerDatagrams(2000, size: 100, every: .milliseconds(1), on: flow)
            link.serveAll()
            return (run.outcomes + flow.drainDatagrams()).filter { $0.copies == 0 }.map(\.index)
        }

        #expect(lostIndexes(seed: 9) == lostIndexes(seed: 9))
        #expect(lostIndexes(seed: 9) != lostIndexes(seed: 10))
    }
}
