import Foundation
import LinkSystem
import LoopbackPeers
import Testing

/// Stopping an event loop while other threads submit work to it: every caller gets an answer, the work's result
/// or `EventLoopStopped`, and none waits forever.
@Suite(.serialized)
struct EventLoopShutdownTests {
    @Test func everySubmitterRacingAStopGetsAResultOrEventLoopStopped() throws {
        let submitters = 8
        var stuck = 0
        var answered = 0
        for _ in 0..<100 {
            let loop = try EventLoop()
            loop.start()
            let started = DispatchGroup()
            let finished = DispatchGroup()
            let answers = LockedBox(0)
            for _ in 0..<submitters {
                started.enter()
                finished.enter()
                Thread.detachNewThread {
                    started.leave()
                    defer { finished.leave() }
                    for _ in 0..<10_000 {
                        do {
                            _ = try loop.submitAndWait { 1 }
                            answers.mutate { $0 += 1 }
                        } catch {
                            answers.mutate { $0 += 1 }
                            return
                        }
                    }
                }
            }
            started.wait()
            loop.stopAndWait()
            if finished.wait(timeout: .now() + 5) == .timedOut { stuck += 1 }
            answered += answers.value
        }

        #expect(stuck == 0, "\(stuck) of 100 stops left a submitter waiting forever")
        #expect(answered > 0)
    }

    @Test func submittingToALoopThatWasNeverStartedFailsOnceItIsStopped() throws {
        let loop = try EventLoop()
        let outcome = LockedBox<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                _ = try loop.submitAndWait { 1 }
                outcome.value = "ran"
            } catch {
                outcome.value = "\(error)"
            }
            done.signal()
        }
        usleep(50_000)

        loop.stopAndWait()

        #expect(done.wait(timeout: .now() + 5) == .success, "the submitter still waits after stop")
        #expect(outcome.value == "the event loop has stopped")
    }

    @Test func submittingAfterStopFailsAtOnce() throws {
        let loop = try EventLoop()
        loop.start()
        loop.stopAndWait()

        #expect(throws: EventLoopStopped.self) { try loop.submitAndWait { 1 } }
    }
}
