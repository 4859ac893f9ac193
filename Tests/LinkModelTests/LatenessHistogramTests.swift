import LinkProfiles
import Testing

@testable import LinkModel

/// The lateness histogram's quantiles: never below the true figure, at most a quarter above it.
@Suite(.timeLimit(.minutes(5)))
struct LatenessHistogramTests {
    @Test func anEmptyHistogramHasNoQuantile() {
        #expect(LatenessHistogram().quantile(0.99) == nil)
    }

    @Test func aQuantileIsTheUpperEdgeOfItsBucketNeverBelowTheTruth() {
        var histogram = LatenessHistogram()
        for microseconds in 1...100 { histogram.record(.microseconds(microseconds)) }

        let p50 = histogram.quantile(0.5)!
        let p99 = histogram.quantile(0.99)!

        #expect(p50 >= .microseconds(50) && p50 <= .microseconds(50) * 1.25)
        #expect(p99 >= .microseconds(99) && p99 <= .microseconds(100))
    }

    @Test func theTopQuantileIsTheMaximumSeen() {
        var histogram = LatenessHistogram()
        histogram.record(.microseconds(3))
        histogram.record(.milliseconds(7))

        #expect(histogram.quantile(1) == .milliseconds(7))
        #expect(histogram.maximum == .milliseconds(7))
        #expect(histogram.samples == 2)
    }

    @Test func everyBucketEdgeSitsWithinAQuarterAboveWhatItHolds() {
        var nanoseconds: Int64 = 1024
        while nanoseconds < Int64(1) << 36 {
            let edge = LatenessHistogram.upperEdge(ofBucket: LatenessHistogram.bucket(ofNanoseconds: nanoseconds))

            #expect(edge > .nanoseconds(nanoseconds), "\(nanoseconds) ns")
            #expect(edge <= .nanoseconds(nanoseconds + nanoseconds / 4 + 1), "\(nanoseconds) ns")
            nanoseconds = nanoseconds + nanoseconds / 7 + 1
        }
    }

    @Test func latenessBeyondAMinuteLandsInTheLastBucketAndNegativeCountsAsOnTime() {
        var histogram = LatenessHistogram()
        histogram.record(.seconds(600))
        histogram.record(.microseconds(-5))

        #expect(histogram.quantile(0.5) == .nanoseconds(1024))
        #expect(histogram.quantile(1) == .seconds(600))
    }
}
