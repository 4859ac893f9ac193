import Testing

@testable import LinkConditioner

/// The rate history keeps ten minutes at one point a second whatever happens, and reads an idle gap as zeros.
@Suite struct RateHistoryTests {
    private static func at(_ seconds: Double) -> Instant { Instant(nanoseconds: Int64(seconds * 1e9)) }

    private static func busy(_ bits: Double) -> RateHistory.Point {
        RateHistory.Point(
            uplinkBitsPerSecond: bits / 10, downlinkBitsPerSecond: bits, uplinkCapacityBitsPerSecond: 384_000,
            downlinkCapacityBitsPerSecond: 780_000)
    }

    @Test func anHourOfSecondsKeepsOnlyTheLastTenMinutes() {
        var history = RateHistory()

        for second in 0..<3600 { history.record(Self.busy(Double(second)), at: Self.at(Double(second))) }

        #expect(history.points.count == RateHistory.capacity)
        #expect(history.points.first?.at == Self.at(3000))
        #expect(history.points.first?.point.downlinkBitsPerSecond == 3000)
        #expect(history.points.last?.at == Self.at(3599))
    }

    @Test func secondsTheMeterSleptReadAsZerosOnTheSameLink() {
        var history = RateHistory()
        history.record(Self.busy(700_000), at: Self.at(10))
        history.record(Self.busy(0), at: Self.at(11))

        history.record(Self.busy(650_000), at: Self.at(20.25))

        let seconds = history.points.map { $0.at }
        #expect(seconds == (10...19).map { Self.at(Double($0)) } + [Self.at(20.25)])
        let gap = history.points.dropFirst(2).dropLast()
        #expect(gap.allSatisfy { $0.point.downlinkBitsPerSecond == 0 && $0.point.uplinkBitsPerSecond == 0 })
        #expect(gap.allSatisfy { $0.point.downlinkCapacityBitsPerSecond == 780_000 })
        #expect(gap.allSatisfy { $0.point.downlinkQueueDelaySeconds == 0 })
    }

    @Test func aLoopLateByLessThanHalfASecondAddsNoZero() {
        var history = RateHistory()
        history.record(Self.busy(1), at: Self.at(0))

        history.record(Self.busy(2), at: Self.at(1.4))

        #expect(history.points.map(\.point.downlinkBitsPerSecond) == [1, 2])
    }

    @Test func aDayAsleepStillHoldsOnlyTenMinutes() {
        var history = RateHistory()
        history.record(Self.busy(5), at: Self.at(0))

        history.record(Self.busy(6), at: Self.at(86_400))

        #expect(history.points.count == RateHistory.capacity)
        #expect(history.points.first?.at == Self.at(86_400 - Double(RateHistory.capacity - 1)))
        #expect(history.points.dropLast().allSatisfy { $0.point.downlinkBitsPerSecond == 0 })
        #expect(history.points.last?.point.downlinkBitsPerSecond == 6)
    }

    @Test func readingWhileTheMeterSleepsFillsZerosToNowAndChangesNothing() {
        var history = RateHistory()
        history.record(Self.busy(9), at: Self.at(100))

        let read = history.points(idleUntil: Self.at(103.1))

        #expect(read.map(\.at) == [100, 101, 102, 103].map { Self.at($0) })
        #expect(read.dropFirst().allSatisfy { $0.point.downlinkBitsPerSecond == 0 })
        #expect(history.points.count == 1)
    }
}
