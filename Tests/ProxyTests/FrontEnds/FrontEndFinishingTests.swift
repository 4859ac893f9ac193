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
        let chunksSent = LockedBox(0)
        let flooders = DispatchGroup()
        let chunk = [UInt8](repeating: 0x55, count: 256 * 1024)
        for _ in 0..<3 {
            flooders.enter()
            Thread.detachNewThread {
                defer { flooders.leave() }
                while secondsSince(start) < 20 {
                    if (try? client.send(chunk)) == nil {
                        closedAfter.mutate { $0 = $0 ?? secondsSince(start) }
                        return
                    }
                    chunksSent.mutate { $0 += 1 }
                }
            }
        }

        var answeredWhileFlooding = 0
        while closedAfter.value == nil && secondsSince(start) < 20 {
            if chunksSent.value > 0, proxy.status().first?.activeConnections == 1 { answeredWhileFlooding += 1 }
            usleep(50_000)
        }
        _ = flooders.wait(timeout: .now() + 25)

        // Closed by the 2 s linger, not left to the flooders' 20 s; the loop answered status requests while the
        // flooding client was still there, where a loop held by its reads would answer only once it was gone. How
        // quickly it answered is the machine's, not the loop's decision.
        #expect(refusal[1] == 0x5B)
        #expect(closedAfter.value != nil, "the flooding client was never closed")
        #expect(answeredWhileFlooding >= 1, "no status request was answered while the client flooded")
    }
}
