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
