import LinkProfiles
import Testing

@testable import LinkModel

/// ACKs cross the reverse direction and take its loss, as on a real link: a lost ACK is covered by the next one,
/// which is cumulative and repeats the receiver's SACK blocks.
@Suite(.timeLimit(.minutes(5)))
struct AckLossTests {
    @Test func aDownlinkFlowsAcksAreLostAtTheUplinksLossRateWithoutAnyRepairOrTimeout() {
        let link = StreamLink(
            side: .acceptor, profile: DirectionProfile(delay: .milliseconds(50)),
            reverse: DirectionProfile(delay: .milliseconds(50), loss: Percentage(10)),
            settings: TCPSettings(), seed: 5)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(1_000_000, over: link, flow: flow, from: .zero)

        #expect(result.releases.reduce(0) { $0 + $1.bytes } == 1_000_000)
        #expect(link.counters.acksLost > 0)
        #expect(link.counters.segmentsLost == 0)
        #expect(flow.transport.recoveries == 0)
        #expect(flow.transport.timeouts == 0)
    }

    @Test func aSACKBlockWhoseLastReportWasLostIsRepeatedSoNothingIsResentSpuriously() {
        let link = modelLink(oneWay: .milliseconds(50))
        let firstHole = dropping(segmentAt: segments(30), times: 1)
        let secondHole = dropping(segmentAt: segments(35), times: 1)
        link.lossDecision = { firstHole($0) || secondHole($0) }
        // The ACK for segment 34 is the last to report the block 31-34; segment 35 is lost, so the next ACK (for
        // segment 36) reports 34 only among its other blocks.
        var dropped = false
        link.ackLossDecision = { ack in
            guard !dropped, ack.sacked?.upperBound == Int64(segments(35)) else { return false }
            dropped = true
            return true
        }
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(segments(200), over: link, flow: flow, from: .zero)

        #expect(dropped)
        #expect(result.lastByteAt != nil)
        #expect(flow.transport.retransmissions == 2)
        #expect(flow.transport.timeouts == 0)
    }
}
