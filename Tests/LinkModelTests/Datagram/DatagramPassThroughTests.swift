import LinkModel
import LinkProfiles
import Testing

/// `deliversAtOnce`: a link that could not decide anything but "deliver now" takes a datagram without holding it,
/// and accounts for it exactly as the queued path does.
struct DatagramPassThroughTests {
    @Test func anUnimpairedLinkDeliversAtOnceAndCountsAsTheQueuedPathDoes() {
        let direct = DatagramLink(profile: DirectionProfile(), seed: 1)
        let queued = DatagramLink(profile: DirectionProfile(), seed: 1)
        let (directFlow, queuedFlow) = (direct.makeFlow(), queued.makeFlow())

        let taken = [300, 20, 1200].map { direct.deliversAtOnce($0, on: directFlow) }
        for size in [300, 20, 1200] { queued.enqueue(size, on: queuedFlow, at: .ms(1)) }
        _ = queued.advance(to: .ms(1))
        _ = queuedFlow.takeDeliverableDatagrams(at: .ms(1))

        #expect(taken == [true, true, true])
        #expect(direct.counters == queued.counters)
        #expect(directFlow.nextDatagramIndex == queuedFlow.nextDatagramIndex)
        #expect(directFlow.nextDeliveryTime == nil)
    }

    static let profilesThatDecide: [DirectionProfile] = {
        var codel = DirectionProfile()
        codel.queueManagement = QueueManagement(CoDelQueue.self)
        return [
            DirectionProfile(delay: .milliseconds(1)), DirectionProfile(bandwidth: .mbps(10)),
            DirectionProfile(loss: Percentage(1)), codel,
        ]
    }()

    @Test(arguments: profilesThatDecide)
    func aLinkThatMayDecideOtherwiseTakesNothingAtOnce(profile: DirectionProfile) {
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()
        let before = link.counters

        let taken = link.deliversAtOnce(100, on: flow)

        #expect(!taken)
        #expect(link.counters == before)
        #expect(flow.nextDatagramIndex == 0)
    }

    @Test func aFlowWithAnOutcomePendingIsNotOvertaken() {
        var profile = DirectionProfile(delay: .milliseconds(5))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()
        link.enqueue(100, on: flow, at: .ms(0))
        _ = link.advance(to: .ms(0))
        profile.delay = .zero
        link.update(profile: profile, now: .ms(1))

        let whilePending = link.deliversAtOnce(100, on: flow)
        _ = flow.takeDeliverableDatagrams(at: .ms(5))
        let afterward = link.deliversAtOnce(100, on: flow)

        #expect(!whilePending)
        #expect(afterward)
    }

    @Test func aDatagramLargerThanTheQueueIsLeftToTheTailDrop() {
        let profile = DirectionProfile(queue: ByteCount(bytes: 1000))
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()

        let taken = link.deliversAtOnce(1001, on: flow)
        let admission = link.enqueue(1001, on: flow, at: .ms(1))

        #expect(!taken)
        #expect(admission == .tailDropped)
    }
}
