import LinkConditioner
import Testing

/// The link model given values far outside what the profile format accepts (a profile built in code): it
/// saturates at the end of time instead of trapping.
struct ExtremeValueTests {
    @Test func aTenthOfAMicrobitPerSecondHoldsOneHundredKilobytesWithoutTrapping() {
        let link = StreamLink(side: .acceptor, profile: DirectionProfile(bandwidth: BitRate(bitsPerSecond: 0.0000001)),
                              reverse: DirectionProfile(), settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        link.enqueue(100_000, on: flow, at: .zero)
        _ = link.advance(to: .s(1))
        _ = link.advance(to: .s(2))

        // Only the automatic burst's one segment gets through; the next would take longer than time lasts.
        #expect(flow.takeDeliverable(at: .s(3600)) == TCPSender.mss)
        #expect(link.counters.bytesEnqueued == 100_000)
    }

    @Test func aDelayOfAlmostForeverDeliversNothingInsteadOfWrappingIntoThePast() {
        let link = StreamLink(side: .acceptor, profile: DirectionProfile(delay: .seconds(Int64.max / 1_000_000_000)),
                              reverse: DirectionProfile(), settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .s(10), emulatingHandshake: false)

        link.enqueue(1000, on: flow, at: .s(10))
        _ = link.advance(to: .s(3600))

        // The sender times out and retransmits meanwhile, as TCP would; nothing arrives before the end of time.
        #expect(flow.takeDeliverable(at: .s(3600)) == 0)
        #expect(link.counters.bytesDelivered == 0)
    }

    @Test func addingADurationToAnInstantSaturatesAtBothEnds() {
        #expect(Instant(nanoseconds: .max - 5) + .seconds(1) == Instant(nanoseconds: .max))
        #expect(Instant(nanoseconds: .min + 5) - .seconds(1) == Instant(nanoseconds: .min))
        #expect(Duration.seconds(Int64.max / 1_000_000_000) + .milliseconds(999) > .zero)
        #expect((Duration.seconds(Int64.max / 1_000_000_000) + .milliseconds(999)).nanoseconds == .max)
    }

    @Test func transmissionTimeAtATinyRateSaturates() {
        #expect(BitRate(bitsPerSecond: 1e-9).transmissionTime(bytes: 1_000_000).nanoseconds == .max)
    }
}
