import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// A proxy client that keeps sending after its final answer (a refusal) is read only a bounded amount per loop
/// turn and closed once the linger time is up, so it cannot hold the event loop.
@Suite(.serialized)
struct FrontEndFinishingTests {
    @Test func aClientFloodingAfterItsRefusalIsClosedOnceTheLingerTimeIsUpAndTheLoopStaysResponsive() throws {
        let (proxy, client) = try connectedFrontEnd(timeout: 10)
        defer { proxy.stop() }
        defer { client.close() }
        try client.send([0x04, 0x01, 0x00, 0x50, 127, 0, 0, 1, 0])
        let refusal = try client.receive(exactly: 8)
        let start = MonotonicClock().now()
        let closedAfter = LockedBox<Double?>(nil)
        let flooders = DispatchGroup()
        let chunk = [UInt8](repeating: 0x55, count: 256 * 1024)
        for _ in 0..<3 {
            flooders.enter()
            Thread.detachNewThread {
                defer { flooders.leave() }
                while secondsSince(start) < 8 {
                    if (try? client.send(chunk)) == nil {
                        closedAfter.mutate { $0 = $0 ?? secondsSince(start) }
                        return
                    }
                }
            }
        }

        var slowestStatus = 0.0
        while closedAfter.value == nil && secondsSince(start) < 8 {
            let asked = MonotonicClock().now()
            _ = proxy.status()
            slowestStatus = max(slowestStatus, secondsSince(asked))
            usleep(50_000)
        }
        _ = flooders.wait(timeout: .now() + 10)

        #expect(refusal[1] == 0x5B)
        let closed = try #require(closedAfter.value, "the flooding client was never closed")
        #expect(closed < 5, "closed \(closed) s after its refusal, for a 2 s linger")
        #expect(slowestStatus < 1.5, "a status request waited \(slowestStatus) s while the client flooded")
    }
}
