@testable import LinkConditioner
import Testing

/// Slow start from the initial window, as a Linux sender does it: the window doubles every round trip.
struct SlowStartTests {
    @Test func theWindowDoublesEachRoundTripFromTenSegments() {
        let link = modelLink(oneWay: .milliseconds(50))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(segments(200), over: link, flow: flow, from: .zero)

        #expect(result.released(at: .ms(50)) == segments(10))
        #expect(result.released(at: .ms(150)) == segments(20))
        #expect(result.released(at: .ms(250)) == segments(40))
        #expect(result.released(at: .ms(350)) == segments(80))
    }

    @Test func aSmallerInitialWindowFromTheProfileStartsSmaller() {
        let link = modelLink(oneWay: .milliseconds(50), settings: TCPSettings(initialWindow: 4))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(segments(30), over: link, flow: flow, from: .zero)

        #expect(result.released(at: .ms(50)) == segments(4))
        #expect(result.released(at: .ms(150)) == segments(8))
        #expect(result.released(at: .ms(250)) == segments(16))
    }

    @Test func aTransferTakesTheRoundTripsSlowStartNeedsNotSizeOverRate() {
        let link = modelLink(oneWay: .milliseconds(25), bandwidth: .mbps(10))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(100_000, over: link, flow: flow, from: .zero)

        let lastByteAt = result.lastByteAt ?? .never
        // 70 segments go out as 10 + 20 + 40: two round trips before the last flight leaves, then its serialisation
        // at 10 Mbit/s (1.158 ms a segment, less the one segment an idle bucket lets through at once) and the
        // one-way delay. Without slow start it would take 100 KB / 10 Mbit/s + 25 ms = 105 ms.
        let earliest = Instant.ms(2 * 50 + 25) + BitRate.mbps(10).transmissionTime(bytes: segments(38))
        #expect(lastByteAt >= earliest)
        #expect(lastByteAt < earliest + .milliseconds(5))
    }

    @Test func aFullQueueInSlowStartIsALossAndTheFlowRecoversWithoutATimeout() {
        let link = modelLink(oneWay: .milliseconds(10), bandwidth: .mbps(10), queue: ByteCount(bytes: 30_000))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(2_000_000, over: link, flow: flow, from: .zero)

        #expect(result.lastByteAt != nil)
        #expect(link.counters.segmentsLost > 0)
        #expect(flow.transport.recoveries > 0)
        #expect(flow.transport.ssthresh < CongestionWindow.infinite)
    }
}

/// HyStart's delay detection: CUBIC leaves slow start when the round trip grows, before a deep queue overflows.
/// The path holds 86 segments (10 Mbit/s × 100 ms) plus a 300 kB queue (207 segments): slow start alone doubles
/// past 293 and overflows it; HyStart stops once a round trip's first samples see ~12 ms of standing queue.
struct HyStartTests {
    @Test func cubicLeavesSlowStartWhenTheQueueDelayGrowsAndLosesNothing() {
        let link = modelLink(oneWay: .milliseconds(50), bandwidth: .mbps(10), queue: ByteCount(bytes: 300_000))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(3_000_000, over: link, flow: flow, from: .zero)

        #expect(result.lastByteAt != nil)
        #expect(flow.transport.ssthresh < CongestionWindow.infinite)
        #expect(link.counters.segmentsLost == 0)
        #expect(flow.transport.recoveries == 0)
    }

    @Test func renoWithoutHyStartFillsTheSameQueueUntilItDrops() {
        let link = modelLink(oneWay: .milliseconds(50), bandwidth: .mbps(10), queue: ByteCount(bytes: 300_000),
                             settings: TCPSettings(congestion: .reno))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(3_000_000, over: link, flow: flow, from: .zero)

        #expect(result.lastByteAt != nil)
        #expect(link.counters.segmentsLost > 0)
    }
}
