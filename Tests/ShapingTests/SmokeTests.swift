import Testing
@testable import LinkConditioner

@Test func unlimitedLinkDeliversImmediately() {
    let link = LinkDirection(profile: DirectionProfile(), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    link.enqueue(1000, on: flow, at: .zero)
    let changed = link.advance(to: .zero)
    #expect(changed.count == 1)
    #expect(flow.takeDeliverable(at: .zero) == 1000)
}
