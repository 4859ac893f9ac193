import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The link's delay counts from when bytes reached the proxy's socket (the kernel's receive stamp), not from when
/// a busy event loop got round to reading them, as a real link's delay starts when the packet enters it.
@Suite(.serialized)
struct ArrivalTimeTests {
    @Test func aLateReadDoesNotAddToTheDelay() throws {
        let sendSecond = DispatchSemaphore(value: 0)
        let secondSent = DispatchSemaphore(value: 0)
        let server = try TestServer { connection in
            defer { connection.close() }
            try? connection.send([1])
            _ = sendSecond.wait(timeout: .now() + 30)
            try? connection.send([2])
            secondSent.signal()
            _ = try? connection.receive()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.delay = .seconds(1)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 30)
        defer { client.close() }
        #expect(try client.receive(exactly: 1) == [1])
        let loopHeld = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)

        proxy.loop.execute {
            loopHeld.signal()
            _ = release.wait(timeout: .now() + 30)
        }
        loopHeld.wait()
        let sent = MonotonicClock().now()
        sendSecond.signal()
        secondSent.wait()
        usleep(1_500_000)
        release.signal()
        let second = try client.receive(exactly: 1)
        let elapsed = secondsSince(sent)
        let lateness = proxy.status()[0].downlinkLateness

        // In the proxy's socket while the loop was held, read at least 1.5 s after it arrived: due 1 s after its
        // arrival, it was written at least 0.5 s past its due instant, as the relay records. Timed from the read,
        // it would have been due 1 s after the read and written about on time (and 2.5 s after it was sent).
        // Never early.
        #expect(second == [2])
        #expect(elapsed >= 0.9995, "second byte after \(elapsed) s")
        #expect(lateness.maximum >= .milliseconds(500), "written \(lateness.maximum) after its due instant")
    }
}
