import Foundation
import Testing

@testable import LinkSystem

/// Starting an event loop: the thread that started it may hand it work at once.
struct EventLoopStartTests {
    /// `submitAndWait` asks whether its caller is the loop thread; under `scripts/sanitize thread` this reported a
    /// data race while `start` returned before the loop thread had recorded who it is.
    @Test func workSubmittedRightAfterStartRunsOnTheLoopThreadAndNotOnTheCaller() throws {
        for _ in 0..<20 {
            let loop = try EventLoop()
            defer { loop.stopAndWait() }
            loop.start()

            let ranOnLoop = try loop.submitAndWait { loop.inLoopThread }

            #expect(!loop.inLoopThread)
            #expect(ranOnLoop)
        }
    }
}
