import LinkModel
import LinkProfiles
import Testing

/// The link model given values far outside what the profile format accepts (a profile built in code): it
/// saturates at the end of time instead of trapping.
@Suite(.timeLimit(.minutes(5)))
struct ExtremeValueTests {
    @Test func aTenthOfAMicrobitPerSecondHoldsOneHundredKilobytesWithoutTrapping() {
        let link = StreamLink(
            side: .acceptor, profile: DirectionProfile(bandwidth: BitRate(bitsPerSecond: 0.0000001)),
            reverse: DirectionProfile(), settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        link.enqueue(100_000, on: flow, at: .zero)
        _ = link.advance(to: .s(1))
        _ = link.advance(to: .s(2))

        // Not even the first segment gets through: its serialisation would take longer than time lasts.
        #expect(flow.takeDeliverable(at: .s(3600)) == 0)
        #expect(link.counters.bytesEnqueued == 100_000)
    }

    @Test func aDelayOfAlmostForeverDeliversNothingInsteadOfWrappingIntoThePast() {
        let link = StreamLink(
            side: .acceptor, profile: DirectionProfile(delay: .seconds(Int64.max / 1_000_000_000)),
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

    @Test func aDurationsNanosecondsTruncateTowardZeroAndSaturateAsItsComponentsSay() {
        let durations: [Duration] = [
            .zero, .nanoseconds(1), .nanoseconds(-1), .nanoseconds(1) / 3, .nanoseconds(-1) / 3, .nanoseconds(7) / 2,
            .nanoseconds(-7) / 2, .milliseconds(200) / 8 * 7, .seconds(1) + .nanoseconds(1) / 2, .seconds(-3) / 7,
            .nanoseconds(Int64.max), .nanoseconds(Int64.min), .nanoseconds(Int64.max) + .nanoseconds(1),
            .nanoseconds(Int64.min) - .nanoseconds(1), .seconds(Int64.max), .seconds(Int64.min),
            .seconds(Int64.max / 1_000_000_000) + .milliseconds(999),
            .seconds(Int64.max / 1_000_000_000) + .nanoseconds(1) / 2,
        ]
        for duration in durations {
            let (seconds, attoseconds) = duration.components
            let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            let part = attoseconds / 1_000_000_000
            let (sum, sumOverflow) = scaled.addingReportingOverflow(part)
            let expected =
                overflow ? (seconds < 0 ? Int64.min : Int64.max) : sumOverflow ? (part > 0 ? .max : .min) : sum
            #expect(duration.nanoseconds == expected, "\(duration)")
        }
    }

    @Test func transmissionTimeAtATinyRateSaturates() {
        #expect(BitRate(bitsPerSecond: 1e-9).transmissionTime(bytes: 1_000_000).nanoseconds == .max)
    }
}
