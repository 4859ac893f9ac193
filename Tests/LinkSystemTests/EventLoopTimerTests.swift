import Foundation
import LinkModel
import Testing

@testable import LinkSystem

/// Timers on a running event loop: zero-delay yields are polled, later deadlines still wait for the timerfd,
/// deadlines close together share timer wake-ups, and deliveries the loop wakes ahead of still run on time.
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

    @Test func deliveriesAfterAQuietSpellWhichTheLoopWakesAheadOfAndPollsForFireNeverEarly() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let count = 5
        let fired = LockedCount()
        let early = LockedCount()
        let done = DispatchSemaphore(value: 0)

        try loop.submitAndWait {
            let start = loop.clock.now()
            for index in 1...count {
                let due = start + .milliseconds(Int64(5 * index))
                loop.schedule(at: due, delivery: true) {
                    if loop.clock.now() < due { early.add(1) }
                    fired.add(1)
                    if fired.value == count { done.signal() }
                }
            }
        }

        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(fired.value == count)
        #expect(early.value == 0, "\(early.value) deliveries ran before their due time")
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

    @Test func aFiredTimerfdIsReArmedWithoutReadingItsCountAndReadOnlyOnceNothingIsLeftToArm() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let count = 5
        let fired = LockedCount()
        let done = DispatchSemaphore(value: 0)

        let (armsBefore, readsBefore) = try loop.submitAndWait {
            let start = loop.clock.now()
            for index in 1...count {
                // 20 ms apart: only a stall of the loop past every deadline before its first arm (100 ms) would
                // leave no firing to read.
                loop.schedule(at: start + .milliseconds(Int64(20 * index))) {
                    fired.add(1)
                    if fired.value == count { done.signal() }
                }
            }
            return (loop.timerArms, loop.timerReads)
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let (arms, reads) = try loop.submitAndWait { (loop.timerArms - armsBefore, loop.timerReads - readsBefore) }

        // However the firings fell, each one was followed by an arm for the next deadline, which resets the
        // timerfd's count, except the last: with nothing left to arm, the loop read the count before it slept.
        #expect(fired.value == count)
        #expect(arms >= 1)
        #expect(reads == 1, "\(reads) reads of the timerfd for \(arms) arms")
    }
}

/// The timerfd's instant for the earliest deadline, given when timers last ran.
struct TimerWakeSpacingTests {
    let spacing = TimerWakeSpacing(spacing: .microseconds(50))
    let origin = Instant(nanoseconds: 1_000_000_000)

    @Test func cancelledTimersDoNotPileUpInTheHeapAndALiveOneStillFires() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let fired = DispatchSemaphore(value: 0)

        let entries = try loop.submitAndWait {
            loop.schedule(at: loop.clock.now() + .milliseconds(20)) { fired.signal() }
            for _ in 0..<20_000 {
                loop.cancel(loop.schedule(at: loop.clock.now() + .seconds(15)) {})
            }
            return loop.timerEntries
        }

        // 20 000 cancelled 15 s timeouts, as a churn of connections leaves them: the heap keeps at most about a
        // thousand dead entries beside the live one, not all of them for 15 s.
        #expect(entries <= 1_026, "\(entries) entries for one live timer")
        #expect(fired.wait(timeout: .now() + 10) == .success)
    }

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

    @Test func anExactDeadlineSoonAfterARunIsArmedForItselfNotPostponedByTheSpacing() {
        var schedule = spacing
        schedule.timersRan(at: origin)

        let wake = schedule.wake(forEarliest: origin + .microseconds(10), exact: origin + .microseconds(20))

        #expect(wake == origin + .microseconds(20))
    }

    @Test func anExactDeadlineAfterTheSpacedWakeChangesNothing() {
        var schedule = spacing
        schedule.timersRan(at: origin)

        let wake = schedule.wake(forEarliest: origin + .microseconds(10), exact: origin + .microseconds(80))

        #expect(wake == origin + .microseconds(50))
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

/// When the loop wakes ahead of a delivery and polls up to its due time, given when timers last ran.
struct DeliveryLeadTests {
    let lead = DeliveryLead(divisor: 20, shortest: .microseconds(25), longest: .microseconds(150))
    let origin = Instant(nanoseconds: 1_000_000_000)

    @Test func aDeliveryAfterALongQuietSpellWakesTheLongestLeadBeforeItsDueTime() {
        let due = origin + .milliseconds(10)

        let step = lead.step(toward: due, now: origin + .milliseconds(1), timersLastRan: origin)

        #expect(step == .wake(at: due - .microseconds(150)))
    }

    @Test func aDeliveryAfterAShortQuietSpellWakesAheadByItsShare() {
        let due = origin + .milliseconds(1)

        let step = lead.step(toward: due, now: origin, timersLastRan: origin)

        #expect(step == .wake(at: due - .microseconds(50)))
    }

    @Test func aDeliveryWithinTheLeadIsPolledFor() {
        let due = origin + .milliseconds(10)

        let step = lead.step(toward: due, now: due - .microseconds(40), timersLastRan: origin)

        #expect(step == .poll)
    }

    @Test func aDeliveryDueSoonAfterTimersRanIsNotLedSoABusyLinkNeverPolls() {
        let due = origin + .microseconds(499)

        let step = lead.step(toward: due, now: origin + .microseconds(480), timersLastRan: origin)

        #expect(step == .unled)
    }

    @Test func aDeliveryAlreadyDueIsLeftToTheLoopsOrdinaryRun() {
        let due = origin + .milliseconds(10)

        #expect(lead.step(toward: due, now: due, timersLastRan: origin) == .unled)
        #expect(lead.step(toward: due, now: due + .microseconds(1), timersLastRan: origin) == .unled)
    }

    @Test func aDeliveryBeforeTimersEverRanGetsTheLongestLead() {
        let due = origin + .milliseconds(10)

        let step = lead.step(toward: due, now: origin, timersLastRan: Instant(nanoseconds: .min))

        #expect(step == .wake(at: due - .microseconds(150)))
    }

    @Test func aZeroLongestLeadNeverWakesEarlyNorPolls() {
        let off = DeliveryLead(divisor: 20, shortest: .zero, longest: .zero)
        let due = origin + .milliseconds(10)

        #expect(off.step(toward: due, now: due - .microseconds(10), timersLastRan: origin) == .unled)
        #expect(off.step(toward: due, now: origin, timersLastRan: origin) == .unled)
    }

    @Test func theWakeIsNeverMoreThanTheLongestLeadBeforeTheDueTimeNorAfterIt() {
        for offset in stride(from: 0, through: 20_000, by: 173) {
            let due = origin + .microseconds(Int64(offset))
            if case .wake(let instant) = lead.step(toward: due, now: origin, timersLastRan: origin - .milliseconds(5)) {
                #expect(instant >= due - .microseconds(150))
                #expect(instant < due)
            }
        }
    }

    /// The CPU bound the loop's documentation states: deliveries one after another, each run at its due time,
    /// poll for at most a twentieth of the time they span, whatever their spacing.
    @Test func pollingTakesAtMostTheDivisorsShareOfTheTimeDeliveriesSpan() {
        var random = SeededRandom(seed: 13)
        var lastRun = origin
        var polled = Duration.zero
        for _ in 0..<10_000 {
            let gap = Duration.microseconds(Int64(random.next() % 3_000) + 1)
            let due = lastRun + gap
            switch lead.step(toward: due, now: lastRun, timersLastRan: lastRun) {
            case .unled: break
            case .wake(let instant): polled += due - instant
            case .poll: polled += gap
            }
            lastRun = due
        }
        let span = lastRun - origin

        #expect(polled > .zero)
        #expect(polled * 20 <= span, "polled \(polled) of \(span)")
    }
}

/// A counter shared between the loop thread and the test thread.
private final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }

    func add(_ amount: Int) { lock.withLock { count += amount } }
}
