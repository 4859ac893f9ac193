import LinkProfiles
import Testing

@testable import LinkModel

/// Where a segment's loss is drawn: as it enters the bottleneck, before the queue and the rate, as netem draws it
/// (`netem_enqueue`). A lost segment takes no time at the rate; the segments after it move up.
@Suite(.timeLimit(.minutes(5)))
struct LossDrawTests {
    /// Where each segment still on its way is due at the receiver, by its first byte.
    private func scheduledArrivals(of flow: StreamFlow) -> [Int64: Instant] {
        Dictionary(uniqueKeysWithValues: flow.model.arrivals.map { ($0.segment.seq, $0.at) })
    }

    @Test func theSegmentAfterALostOneArrivesOneSlotAfterTheSegmentBeforeIt() {
        let link = modelLink(oneWay: .milliseconds(50), bandwidth: .mbps(10))
        link.lossDecision = dropping(segmentAt: segments(5), times: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        let slot = Duration.nanoseconds(Int64(TCPSender.mss) * 8 * 100)

        link.enqueue(segments(10), on: flow, at: .zero)
        _ = link.advance(to: .ms(30))

        let arrivals = scheduledArrivals(of: flow)
        #expect(arrivals[Int64(segments(5))] == nil)
        #expect(arrivals[Int64(segments(4))] == .ms(50) + slot * 5)
        #expect(arrivals[Int64(segments(6))] == .ms(50) + slot * 6)
        #expect(link.counters.segmentsLost == 1)
    }

    @Test func theSegmentsOfAUnitAroundALostOneArriveAsTwoRuns() {
        // At a 2 ms round trip the second flight (segments 10 to 29) leaves as one unit once the first is ACKed.
        let link = modelLink(oneWay: .milliseconds(1))
        link.lossDecision = dropping(segmentAt: segments(15), times: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        link.enqueue(segments(40), on: flow, at: .zero)
        _ = link.advance(to: .ms(2))

        let runs = flow.model.arrivals.map { $0.segment.seq..<$0.segment.seq + Int64($0.segment.length) }
        #expect(runs == [Int64(segments(10))..<Int64(segments(15)), Int64(segments(16))..<Int64(segments(30))])
        #expect(link.counters.segmentsLost == 1)
    }
}
