import LinkConditioner
import Testing

/// The link model given values far outside what the profile format accepts (a profile built in code): it
/// saturates at the end of time instead of trapping.
struct ExtremeValueTests {
    @Test func aTenthOfAMicrobitPerSecondHoldsOneHundredKilobytesWithoutTrapping() {
        let link = LinkDirection(profile: DirectionProfile(bandwidth: BitRate(bitsPerSecond: 0.0000001)), roundTrip: .zero, seed: 1)
        let flow = link.makeFlow()

        link.enqueue(100_000, on: flow, at: .zero)
        _ = link.advance(to: .s(1))
        _ = link.advance(to: .s(2))

        #expect(flow.takeDeliverable(at: .s(3600)) == 0)
        #expect(link.counters.bytesEnqueued == 100_000)
    }

    @Test func aDelayOfAlmostForeverDeliversAtTheEndOfTimeInsteadOfWrappingIntoThePast() {
        let link = LinkDirection(profile: DirectionProfile(delay: .seconds(Int64.max / 1_000_000_000)), roundTrip: .zero, seed: 1)
        let flow = link.makeFlow()

        link.enqueue(1000, on: flow, at: .s(10))
        _ = link.advance(to: .s(10))

        #expect(flow.takeDeliverable(at: .s(3600)) == 0)
        #expect(flow.nextDeliveryTime.map { $0 > .s(3600) } ?? true, "due at \(String(describing: flow.nextDeliveryTime))")
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
