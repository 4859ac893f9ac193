import Testing
import LinkConditioner

@Test func removeFreesTheFlowsAccounting() {
    let link = LinkDirection(profile: DirectionProfile(bandwidth: .mbps(1), delay: .milliseconds(50)),
                             roundTrip: .zero, seed: 1)
    let closing = link.makeFlow()
    let staying = link.makeFlow()
    link.enqueue(100_000, on: closing, at: .zero)
    link.enqueue(1000, on: staying, at: .zero)
    _ = link.advance(to: .ms(5))

    link.remove(closing)

    let counters = link.counters
    #expect(counters.flows == 1)
    #expect(counters.queuedBytes == staying.queuedBytes)
    #expect(counters.inFlightBytes == staying.inFlightBytes)
    #expect(link.canAccept(staying))
    link.serveAll()
    #expect(total(staying.drainSchedule()) == 1000)
    #expect(link.nextServiceTime == nil)
}

@Test func removedFlowIsNotReportedAsChanged() {
    let link = LinkDirection(profile: DirectionProfile(), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()
    link.enqueue(10, on: flow, at: .zero)

    link.remove(flow)

    #expect(link.advance(to: .zero).isEmpty)
    #expect(link.counters.inFlightBytes == 0)
}

@Test func everyEnqueuedByteIsDeliveredExactlyOnce() {
    let profile = DirectionProfile(
        bandwidth: .mbps(3), delay: .milliseconds(25), jitter: .milliseconds(15), loss: Percentage(1))
    let link = LinkDirection(profile: profile, roundTrip: .milliseconds(50), seed: 2024)
    let flows = (0..<5).map { _ in link.makeFlow() }
    var random = SeededRandom(seed: 77)
    var enqueued = Array(repeating: 0, count: flows.count)
    var delivered = Array(repeating: 0, count: flows.count)
    var now = Instant.zero

    for _ in 0..<2000 {
        now = now + .microseconds(Int64.random(in: 0...3000, using: &random))
        let index = Int.random(in: 0..<flows.count, using: &random)
        let bytes = Int.random(in: 1...20_000, using: &random)
        if link.canAccept(flows[index]) {
            link.enqueue(bytes, on: flows[index], at: now)
            enqueued[index] += bytes
        }
        for flow in link.advance(to: now) {
            delivered[flows.firstIndex { $0 === flow }!] += flow.takeDeliverable(at: now)
        }
    }
    link.serveAll()
    for index in flows.indices {
        delivered[index] += total(flows[index].drainSchedule())
    }

    #expect(delivered == enqueued)
    #expect(link.counters.bytesEnqueued == enqueued.reduce(0, +))
    #expect(link.counters.bytesDelivered == enqueued.reduce(0, +))
    #expect(link.counters.queuedBytes == 0)
    #expect(link.counters.inFlightBytes == 0)
}

@Test func changedFlowsAreReportedOncePerAdvance() {
    let link = LinkDirection(profile: DirectionProfile(), roundTrip: .zero, seed: 1)
    let flow = link.makeFlow()

    link.enqueue(10, on: flow, at: .zero)
    link.enqueue(20, on: flow, at: .zero)
    let first = link.advance(to: .zero)
    let second = link.advance(to: .zero)

    #expect(first.count == 1)
    #expect(second.isEmpty)
    #expect(flow.takeDeliverable(at: .zero) == 30)
}
