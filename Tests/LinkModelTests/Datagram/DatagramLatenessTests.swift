import LinkModel
import LinkProfiles
import Testing

/// A datagram link records how long after their due instants its flows' outcomes were taken for delivery: the
/// relay takes them when its timer fires, so a late wake-up shows in the link's `lateness`.
struct DatagramLatenessTests {
    private func delayedLink(_ delay: Duration, loss: Percentage = .zero) -> (DatagramLink, DatagramFlow) {
        let link = DatagramLink(profile: DirectionProfile(delay: delay, loss: loss), seed: 1)
        return (link, link.makeFlow())
    }

    @Test func outcomesTakenLateRecordTheEarliestDeliveryOnce() {
        let (link, flow) = delayedLink(.milliseconds(10))
        link.enqueue(100, on: flow, at: .ms(0))
        link.enqueue(100, on: flow, at: .ms(1))
        _ = link.advance(to: .ms(1))

        let taken = flow.takeDeliverableDatagrams(at: .ms(13))

        #expect(taken.count == 2)
        #expect(link.lateness.samples == 1)
        #expect(link.lateness.maximum == .milliseconds(3))
    }

    @Test func outcomesTakenAtTheirInstantAreOnTime() {
        let (link, flow) = delayedLink(.milliseconds(10))
        link.enqueue(100, on: flow, at: .ms(0))
        _ = link.advance(to: .ms(0))

        _ = flow.takeDeliverableDatagrams(at: .ms(10))

        #expect(link.lateness.samples == 1)
        #expect(link.lateness.maximum == .zero)
    }

    @Test func lostDatagramsAreNoDelivery() {
        let (link, flow) = delayedLink(.milliseconds(10), loss: Percentage(100))
        link.enqueue(100, on: flow, at: .ms(0))
        _ = link.advance(to: .ms(0))

        let taken = flow.takeDeliverableDatagrams(at: .ms(20))

        #expect(taken.map(\.copies) == [0])
        #expect(link.lateness.samples == 0)
    }

    @Test func aDatagramStampedBeforeTheLinksLatestInstantCountsFromThatInstant() {
        let (link, flow) = delayedLink(.milliseconds(10))
        _ = link.advance(to: .ms(5))

        link.enqueue(100, on: flow, at: .ms(2))
        _ = link.advance(to: .ms(5))

        #expect(flow.nextDeliveryTime == .ms(15))
    }

    @Test func aDatagramStampedWhileTheLinkWaitedCountsItsDelayFromTheStamp() {
        let (link, flow) = delayedLink(.milliseconds(10))
        _ = link.advance(to: .ms(1))

        link.enqueue(100, on: flow, at: .ms(2))
        _ = link.advance(to: .ms(7))

        #expect(flow.nextDeliveryTime == .ms(12))
    }

    @Test func aDatagramDeliveredAtOnceIsNoSample() {
        let link = DatagramLink(profile: DirectionProfile(), seed: 1)
        let flow = link.makeFlow()

        #expect(link.deliversAtOnce(100, on: flow))
        #expect(link.lateness.samples == 0)
    }
}
