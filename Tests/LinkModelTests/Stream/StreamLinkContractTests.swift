import LinkProfiles
import Testing

@testable import LinkModel

/// What the relay relies on from a stream link, whatever TCP does inside it: every byte exactly once and in
/// order, across live profile switches and with other flows coming and going.
@Suite(.timeLimit(.minutes(5)))
struct StreamLinkContractTests {
    private func link(_ profile: DirectionProfile, seed: UInt64 = 1) -> StreamLink {
        StreamLink(
            side: .acceptor, profile: profile, reverse: DirectionProfile(delay: profile.delay),
            settings: TCPSettings(), seed: seed)
    }

    /// Runs `link` event by event until nothing is left or `limit`, adding each flow's releases to `delivered`.
    private func drain(
        _ link: StreamLink, _ flows: [StreamFlow], into delivered: inout [Int],
        until limit: Instant = .ms(600_000)
    ) {
        for _ in 0..<1_000_000 {
            guard let next = link.nextServiceTime, next <= limit else { return }
            for flow in link.advance(to: next) {
                if let index = flows.firstIndex(where: { $0 === flow }) {
                    delivered[index] += flow.takeDeliverable(at: next)
                }
            }
        }
    }

    @Test func aRateSwitchMidTransferLosesNoBytesAndFinishesSooner() {
        let slow = DirectionProfile(bandwidth: .mbps(1), delay: .milliseconds(50))
        let switched = link(slow)
        let unchanged = link(slow)
        let flow = switched.makeFlow(at: .zero, emulatingHandshake: false)
        let reference = unchanged.makeFlow(at: .zero, emulatingHandshake: false)
        let size = 200_000
        let fast = transferAfterSwitch(
            size, over: switched, flow: flow, to: DirectionProfile(bandwidth: .mbps(20), delay: .milliseconds(10)))
        let steady = transfer(size, over: unchanged, flow: reference, from: .zero)

        #expect(fast.bytes == size)
        #expect(switched.counters.bytesDelivered == size)
        #expect(fast.lastByteAt! < steady.lastByteAt!)
    }

    /// Writes `size` bytes, switches the profile to `profile` at 500 ms, and runs to the end.
    private func transferAfterSwitch(
        _ size: Int, over link: StreamLink, flow: StreamFlow,
        to profile: DirectionProfile
    ) -> (bytes: Int, lastByteAt: Instant?) {
        var written = 0
        var delivered = [0]
        var now = Instant.zero
        var switched = false
        var last: Instant?
        for _ in 0..<1_000_000 {
            if !switched && now >= .ms(500) {
                link.update(
                    profile: profile, reverse: DirectionProfile(delay: profile.delay), settings: TCPSettings(), now: now
                )
                switched = true
            }
            for changed in link.advance(to: now) where changed === flow {
                let count = changed.takeDeliverable(at: now)
                if count > 0 {
                    delivered[0] += count
                    last = now
                }
            }
            while written < size && link.canAccept(flow) {
                link.enqueue(min(segments(45), size - written), on: flow, at: now)
                written += min(segments(45), size - written)
            }
            let next = [link.nextServiceTime, switched ? nil : .ms(500)].compactMap { $0 }.min()
            guard let next, delivered[0] < size else { break }
            now = max(now, next)
        }
        return (delivered[0], last)
    }

    @Test func aDelayOnlyLinkReleasesEachWriteExactlyOneDelayAfterIt() {
        let link = link(DirectionProfile(delay: .milliseconds(40)))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(700, on: flow, at: .ms(3))
        link.enqueue(300, on: flow, at: .ms(10))
        var releases: [(Instant, Int)] = []

        for _ in 0..<100 {
            guard let next = link.nextServiceTime else { break }
            for changed in link.advance(to: next) where changed === flow {
                releases.append((next, changed.takeDeliverable(at: next)))
            }
        }

        #expect(releases.map(\.0) == [.ms(43), .ms(50)])
        #expect(releases.map(\.1) == [700, 300])
    }

    @Test func aShorterDelayNeverLetsNewBytesOvertakeBytesAlreadyInFlight() {
        let link = link(DirectionProfile(delay: .milliseconds(200)))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(1000, on: flow, at: .zero)

        link.update(profile: DirectionProfile(), reverse: DirectionProfile(), settings: TCPSettings(), now: .ms(10))
        link.enqueue(500, on: flow, at: .ms(10))
        var delivered = [0]
        drain(link, [flow], into: &delivered, until: .ms(199))
        let early = delivered[0]
        drain(link, [flow], into: &delivered, until: .ms(200))

        #expect(early == 0)
        #expect(delivered[0] == 1500)
    }

    @Test func everyEnqueuedByteOfManyJitteryLossyFlowsIsDeliveredExactlyOnce() {
        let profile = DirectionProfile(
            bandwidth: .mbps(3), delay: .milliseconds(25), jitter: .milliseconds(15), loss: Percentage(1))
        let link = link(profile, seed: 2024)
        let flows = (0..<5).map { _ in link.makeFlow(at: .zero, emulatingHandshake: false) }
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
        drain(link, flows, into: &delivered)

        #expect(delivered == enqueued)
        #expect(link.counters.bytesDelivered == enqueued.reduce(0, +))
        #expect(link.counters.queuedBytes == 0)
        #expect(link.counters.inFlightBytes == 0)
    }

    @Test func removingAFlowFreesItsShareAndTheOtherFlowStillGetsEveryByte() {
        let link = link(DirectionProfile(bandwidth: .mbps(1), delay: .milliseconds(50)))
        let closing = link.makeFlow(at: .zero, emulatingHandshake: false)
        let staying = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(100_000, on: closing, at: .zero)
        link.enqueue(1000, on: staying, at: .zero)
        _ = link.advance(to: .ms(5))

        link.remove(closing)
        var delivered = [0]
        drain(link, [staying], into: &delivered)

        #expect(link.counters.flows == 1)
        #expect(delivered[0] == 1000)
        #expect(link.counters.queuedBytes == 0)
        #expect(link.nextServiceTime == nil)
    }

    @Test func aChurnOfConnectionsClosedWithDataInFlightLeavesTheScheduleBounded() {
        let link = link(DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(50)))
        let staying = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(50_000_000, on: staying, at: .zero)
        var now = Instant.zero

        for _ in 0..<2000 {
            let flow = link.makeFlow(at: now, emulatingHandshake: false)
            link.enqueue(10_000, on: flow, at: now)
            _ = link.advance(to: now)
            link.remove(flow)
            now = now + .microseconds(100)
        }

        // Each closed flow left an entry due up to a retransmission timeout ahead, behind the staying flow's
        // earlier events; without compaction there would be about 2000.
        #expect(link.scheduleEntries <= 2 * 1 + 64)
        #expect(link.counters.flows == 1)
    }

    @Test func aRemovedFlowIsNotReportedAsChanged() {
        let link = link(DirectionProfile())
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(10, on: flow, at: .zero)

        link.remove(flow)

        #expect(link.advance(to: .zero).isEmpty)
        #expect(link.counters.inFlightBytes == 0)
    }

    @Test func changedFlowsAreReportedOncePerAdvance() {
        let link = link(DirectionProfile())
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        link.enqueue(10, on: flow, at: .zero)
        link.enqueue(20, on: flow, at: .zero)
        let first = link.advance(to: .zero)
        let second = link.advance(to: .zero)

        #expect(first.count == 1)
        #expect(second.isEmpty)
        #expect(flow.takeDeliverable(at: .zero) == 30)
    }
}
