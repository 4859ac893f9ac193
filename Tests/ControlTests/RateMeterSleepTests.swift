import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The rate meter wakes the loop only while something moves: after a window with no change it stops its timer,
/// and the loop's next readiness event starts it again.
@Suite struct RateMeterSleepTests {
    /// Polls `condition` on the loop until it holds, within a generous bound.
    private func waitOnLoop(_ loop: EventLoop, _ condition: @escaping @Sendable () -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try loop.submitAndWait(condition) { return true }
            usleep(20_000)
        }
        return false
    }

    @Test func aMeterWhoseCountersDoNotMoveSleepsAndTheNextEventWakesIt() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        let listener = try Socket.listening(on: try #require(SocketAddress(numericHost: "127.0.0.1", port: 0)))
        defer { listener.close() }
        let port = try listener.localAddress().port
        nonisolated(unsafe) var meter: RateMeter?
        try loop.submitAndWait {
            meter = RateMeter(loop: loop) { [(ObjectIdentifier(loop), 1_000, 2_000)] }
            _ = try loop.register(listener.descriptor, interest: Epoll.readable | Epoll.edgeTriggered) { _ in }
        }

        let slept = try waitOnLoop(loop) { meter?.isSleeping == true }
        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        let woke = try waitOnLoop(loop) { meter?.isSleeping == false }
        try loop.submitAndWait { meter?.stop() }

        #expect(slept)
        #expect(woke)
    }

    @Test func aMeterStaysAwakeWhileConnectionsHoldBytes() throws {
        let loop = try EventLoop()
        loop.start()
        defer { loop.stopAndWait() }
        nonisolated(unsafe) var meter: RateMeter?
        nonisolated(unsafe) var ticksSeen = 0
        try loop.submitAndWait {
            meter = RateMeter(
                loop: loop,
                sample: {
                    ticksSeen += 1
                    return [(ObjectIdentifier(loop), 0, 0)]
                }, isHolding: { true })
        }

        // Six samples span more than one window, after which an idle meter would have gone to sleep.
        let sampledPastAWindow = try waitOnLoop(loop) { ticksSeen >= 6 }
        let sleeping = try loop.submitAndWait { meter?.isSleeping ?? true }
        try loop.submitAndWait { meter?.stop() }

        #expect(sampledPastAWindow)
        #expect(!sleeping)
    }
}
