import Foundation
@testable import LinkConditioner
import Testing

/// Timers on a running event loop: zero-delay yields are polled, later deadlines still wait for the timerfd, and
/// deadlines close together share timer wake-ups.
struct EventLoopTimerTests {
    @Test func deadlinesAMicrosecondApartShareWakeUpsSpacedByTheLoopsSpacingAndNoneFiresEarly() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let count = 100
        let spacing = TimerWakeSpacing.standard.spacing
        let span = Duration.microseconds(Int64(count - 1))
        let fired = LockedCount()
        let early = LockedCount()
        let done = DispatchSemaphore(value: 0)

        let armsBefore = try loop.submitAndWait {
            let first = loop.clock.now() + .milliseconds(5)
            for index in 0..<count {
                let due = first + .microseconds(Int64(index))
                loop.schedule(at: due) {
                    if loop.clock.now() < due { early.add(1) }
                    fired.add(1)
                    if fired.value == count { done.signal() }
                }
            }
            return loop.timerArms
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let arms = try loop.submitAndWait { loop.timerArms } - armsBefore

        // One arm for the first deadline, then one per spacing after each run: however late the runs, the span
        // needs at most span / spacing + 2 of them, where one arm per deadline would be a hundred.
        let bound = Int(span / spacing) + 2
        #expect(fired.value == count)
        #expect(early.value == 0, "\(early.value) timers fired before their deadline")
        #expect(arms <= bound, "\(arms) timerfd arms for \(count) deadlines within \(span); at most \(bound) expected")
    }

    @Test func aChainOfZeroDelayTimersRunsToTheEndAndALaterTimerFiresNeverEarly() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let done = DispatchSemaphore(value: 0)
        let chained = LockedCount()
        let lateness = LockedCount()

        try loop.submitAndWait {
            let start = loop.clock.now()
            let due = start + .milliseconds(20)
            func yield() {
                chained.add(1)
                if chained.value < 1000 { loop.schedule(at: loop.clock.now()) { yield() } }
            }
            loop.schedule(at: start) { yield() }
            loop.schedule(at: due) {
                lateness.add(Int((loop.clock.now() - due) / .microseconds(1)))
                done.signal()
            }
        }

        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(chained.value == 1000)
        #expect(lateness.value >= 0, "the 20 ms timer fired \(-lateness.value) µs early")
    }
}

/// The timerfd's instant for the earliest deadline, given when timers last ran.
struct TimerWakeSpacingTests {
    let spacing = TimerWakeSpacing(spacing: .microseconds(50))
    let origin = Instant(nanoseconds: 1_000_000_000)

    @Test func aDeadlineBeforeTheLoopEverRanTimersIsArmedExactly() {
        #expect(spacing.wake(forEarliest: origin) == origin)
    }

    @Test func aDeadlineSoonAfterARunWaitsUntilTheSpacingHasPassed() {
        var schedule = spacing
        schedule.timersRan(at: origin)

        let wake = schedule.wake(forEarliest: origin + .microseconds(12))

        #expect(wake == origin + .microseconds(50))
    }

    @Test func aDeadlineLongerAfterARunThanTheSpacingIsArmedExactly() {
        var schedule = spacing
        schedule.timersRan(at: origin)
        let deadline = origin + .microseconds(51)

        #expect(schedule.wake(forEarliest: deadline) == deadline)
    }

    @Test func theWakeIsNeverBeforeTheDeadline() {
        var schedule = spacing
        schedule.timersRan(at: origin)

        for offset in stride(from: -100, through: 200, by: 7) {
            let deadline = origin + .microseconds(Int64(offset))
            #expect(schedule.wake(forEarliest: deadline) >= deadline)
        }
    }
}

/// A counter shared between the loop thread and the test thread.
private final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }

    func add(_ amount: Int) { lock.withLock { count += amount } }
}
