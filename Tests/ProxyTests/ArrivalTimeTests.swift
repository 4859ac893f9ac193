@testable import LinkConditioner
import Foundation
import LoopbackPeers
import Testing

/// The link's delay counts from when bytes reached the proxy's socket (the kernel's receive stamp), not from when
/// a busy event loop got round to reading them, as a real link's delay starts when the packet enters it.
@Suite(.serialized)
struct ArrivalTimeTests {
    @Test func aLateReadDoesNotAddToTheDelay() throws {
        let sendSecond = DispatchSemaphore(value: 0)
        let server = try TestServer { connection in
            defer { connection.close() }
            try? connection.send([1])
            _ = sendSecond.wait(timeout: .now() + 30)
            try? connection.send([2])
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
        let loopBusy = DispatchSemaphore(value: 0)

        proxy.loop.execute {
            loopBusy.signal()
            usleep(1_000_000)
        }
        loopBusy.wait()
        let sent = MonotonicClock().now()
        sendSecond.signal()
        let second = try client.receive(exactly: 1)
        let elapsed = secondsSince(sent)

        // Sent while the loop slept for 1 s, read when it woke: due 1 s after it arrived, so about then, where
        // timing from the read would make it 2 s. Never early; late by at most 0.6 s on a loaded machine.
        #expect(second == [2])
        #expect(elapsed >= 0.9995, "second byte after \(elapsed) s")
        #expect(elapsed < 1.6, "second byte after \(elapsed) s")
    }
}
