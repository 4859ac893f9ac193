import LinkProfiles
import Testing

@testable import LinkModel

/// Slow start from the initial window, as a Linux sender does it: the window doubles every round trip.
@Suite(.timeLimit(.minutes(5)))
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

    @Test func anAckThatOnlySACKsLeavesTheWindowAndTheNextCumulativeAckGrowsItByItsOwnDeliveries() {
        var sender = TCPSender()
        sender.write(segments(20), now: .zero)
        let flight = (0..<10).map { _ in sender.nextSegment(now: .zero)! }

        // Segment 9 is SACKed: segments 0-8 are still within RACK's reordering window, so the sender stays open.
        sender.receive(TCPAck(cumulative: 0, sacked: flight[9].seq..<flight[9].end, window: 1 << 20), now: .ms(100))
        #expect(sender.state == .open)
        #expect(sender.cwnd == 10)

        // Segment 0 is acknowledged: new data, so the window grows, by that ACK's one segment only.
        sender.receive(
            TCPAck(cumulative: flight[0].end, sacked: flight[9].seq..<flight[9].end, window: 1 << 20), now: .ms(101))
        #expect(sender.cwnd == 11)
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
/// The path holds 86 segments (10 Mbit/s × 100 ms) plus a 600 kB queue (414 segments): slow start alone doubles
/// past 500 and overflows it. Once flights merge (cwnd 160 and more), a round's first ACKs see the standing
/// queue, and HyStart stops there.
@Suite(.timeLimit(.minutes(5)))
struct HyStartTests {
    @Test func cubicLeavesSlowStartWhenTheQueueDelayGrowsAndLosesNothing() {
        let link = modelLink(oneWay: .milliseconds(50), bandwidth: .mbps(10), queue: ByteCount(bytes: 600_000))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(3_000_000, over: link, flow: flow, from: .zero)

        #expect(result.lastByteAt != nil)
        #expect(flow.transport.ssthresh < CongestionWindow.infinite)
        #expect(link.counters.segmentsLost == 0)
        #expect(flow.transport.recoveries == 0)
    }

    /// Linux counts HyStart's rounds from the first ACK, below the low window too (upstream 25c1a9ca53db, in 6.1
    /// stable since 6.1.129), so each round opens at a flight's first ACK. The flights here stay apart (a 200 ms
    /// round trip holds 166 segments at 1.2 ms each), each ACK covers two segments, as a receiver's delayed ACK
    /// does, 2.4 ms apart (too far apart for an ACK train), and slow start sends four for it, so the queue grows by
    /// one segment per two sent: a flight's last ACKs see up to 48 ms of it, its first none.
    @Test func aRoundOpensAtAFlightsFirstAckSoTheSlowStartBurstDoesNotEndSlowStart() {
        let (cubic, window) = slowStartFlights(segmentsPerAck: 2, queueing: true) { _, window in window.cwnd >= 170 }

        #expect(window.ssthresh == CongestionWindow.infinite, "HyStart ended slow start at cwnd \(window.ssthresh)")
        #expect(cubic.slowStartExit == nil)
    }

    /// Flights of the same sizes with each segment ACKed alone, 1.2 ms apart, and no queue: once a round's ACKs have
    /// run back to back for half the minimum round trip (plus half the 1 ms ack delay), slow start ends. The round of
    /// 80 segments spans 94.8 ms of the 100.5 needed; the round of 160 gets there.
    @Test func anAckTrainOfHalfTheMinimumRoundTripEndsSlowStart() {
        let (cubic, window) = slowStartFlights(segmentsPerAck: 1, queueing: false) { cubic, _ in
            cubic.slowStartExit != nil
        }

        // The round of 160 opens at cwnd 160; its train passes 100.5 ms at its 85th ACK (84 gaps of 1.2 ms).
        #expect(cubic.slowStartExit == .ackTrain(cwnd: 244))
        #expect(window.ssthresh == 244)
    }

    /// CUBIC through slow start's flights from the initial window at a 200 ms round trip, each flight sent back to
    /// back and apart from the next: each ACK covers `segmentsPerAck` segments, 1.2 ms of bottleneck each, and
    /// sends twice as many; with `queueing` each segment's round trip grows by half a segment's time per segment
    /// ahead of it in its flight. Stops once `done`, checked after each ACK, says so, or after eight flights.
    private func slowStartFlights(
        segmentsPerAck: Int, queueing: Bool, until done: (CubicWindow, CongestionWindow) -> Bool
    ) -> (CubicWindow, CongestionWindow) {
        var cubic = CubicWindow()
        var window = CongestionWindow(cwnd: 10)
        let base = Duration.milliseconds(200)
        let perSegment = Duration.microseconds(1_200)
        // Sequence numbers in segments; the first flight is the initial window.
        var flight: Range<Int64> = 0..<10
        var sndNxt: Int64 = 10
        var flightStart = Instant.zero
        for _ in 0..<8 {
            for position in stride(from: segmentsPerAck - 1, to: flight.count, by: segmentsPerAck) {
                let rtt = queueing ? base + perSegment * position / 2 : base
                let now = flightStart + perSegment * position + rtt
                let sndUna = flight.lowerBound + Int64(position) + 1
                let sample = AckSample(rtt: rtt, now: now, sndUna: sndUna, sndNxt: sndNxt, pacingRate: 1_000_000)
                cubic.acked(sample, window: &window)
                cubic.increase(acked: segmentsPerAck, now: now, window: &window)
                sndNxt += Int64(2 * segmentsPerAck)
                if done(cubic, window) { return (cubic, window) }
            }
            flight = flight.upperBound..<sndNxt
            flightStart = flightStart + base + perSegment * Int(flight.count / 2)
        }
        return (cubic, window)
    }

    /// At 10 Mbit/s and 10 ms a round trip delivers about ten segments, so the receiver's window never grows, its
    /// ACKs cover two segments 2.3 ms apart, and no ACK train forms: HyStart ends slow start by delay, as the
    /// guest's Linux does (26 of its 30 exits at 10 ms, at 48–55 segments; `hystart-exits/`).
    @Test func atTenMillisecondsTheReceiverAcksPairsAndHyStartExitsByDelay() {
        #expect(slowStartExitOfAMegabyte(oneWay: .milliseconds(5)) == .delay(cwnd: 53))
    }

    /// At 50 ms slow start outgrows each round trip, the receiver's window grows with it and it ACKs each segment
    /// alone, 1.16 ms apart: a round's ACK train passes half the round trip at about 64 segments, where the
    /// guest's Linux exits most often (16 of its 23 exits at 50 ms, at 63–65 segments).
    @Test func atFiftyMillisecondsEachSegmentIsAckedAndAnAckTrainEndsSlowStart() {
        #expect(slowStartExitOfAMegabyte(oneWay: .milliseconds(25)) == .ackTrain(cwnd: 64))
    }

    /// How HyStart ended slow start in a 1 MB transfer at 10 Mbit/s.
    private func slowStartExitOfAMegabyte(oneWay: Duration) -> HyStartExit? {
        let link = modelLink(oneWay: oneWay, bandwidth: .mbps(10))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        _ = transfer(1_000_000, over: link, flow: flow, from: .zero)
        return flow.transport.slowStartExit
    }

    @Test func renoWithoutHyStartFillsTheSameQueueUntilItDrops() {
        let link = modelLink(
            oneWay: .milliseconds(50), bandwidth: .mbps(10), queue: ByteCount(bytes: 600_000),
            settings: TCPSettings(congestion: .reno))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(3_000_000, over: link, flow: flow, from: .zero)

        #expect(result.lastByteAt != nil)
        #expect(link.counters.segmentsLost > 0)
    }
}
