import Foundation
@testable import LinkConditioner
import Testing

/// Timers on a running event loop: zero-delay yields are polled, later deadlines still wait for the timerfd.
struct EventLoopTimerTests {
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

/// A counter shared between the loop thread and the test thread.
private final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }

    func add(_ amount: Int) { lock.withLock { count += amount } }
}
