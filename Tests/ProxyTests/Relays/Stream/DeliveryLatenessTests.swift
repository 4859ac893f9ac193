import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// Each write of released bytes records how long after its release by the model it reached the socket, so `status`
/// can say when a busy machine made linkcond's delays longer than asked.
@Suite(.serialized)
struct DeliveryLatenessTests {
    private func delayedUplink(_ delay: Duration) -> Profile {
        var profile = Profile.none
        profile.uplink.delay = delay
        return profile
    }

    /// Runs `body` with a client connected through a proxy with `profile` to an echo server.
    private func withEcho(through profile: Profile, _ body: (ConditionedProxy, TestConnection) throws -> Void) throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: profile)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 30)
        defer { client.close() }
        try body(proxy, client)
    }

    private func ping(_ client: TestConnection, _ byte: UInt8) throws {
        try client.send([byte])
        #expect(try client.receive(exactly: 1) == [byte])
    }

    @Test func eachDelayedMessageIsOneWriteOfReleasedBytes() throws {
        try withEcho(through: delayedUplink(.milliseconds(5))) { proxy, client in
            for byte: UInt8 in 1...3 { try ping(client, byte) }
            let lateness = proxy.status()[0].uplinkLateness

            #expect(lateness.samples == 3)
            #expect(lateness.quantile(0.5) != nil)
        }
    }

    @Test func bytesThatPassAnUnshapedLinkByAreNoLatenessSample() throws {
        try withEcho(through: .none) { proxy, client in
            for byte: UInt8 in 1...3 { try ping(client, byte) }
            let status = proxy.status()[0]

            #expect(status.uplinkLateness.samples == 0)
            #expect(status.downlinkLateness.samples == 0)
        }
    }

    @Test func aLoopHeldPastAReleaseRecordsHowLateItWrote() throws {
        try withEcho(through: delayedUplink(.milliseconds(200))) { proxy, client in
            try ping(client, 1)
            let loopHeld = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)

            proxy.loop.execute {
                loopHeld.signal()
                _ = release.wait(timeout: .now() + 30)
            }
            loopHeld.wait()
            try client.send([2])
            usleep(400_000)
            release.signal()
            #expect(try client.receive(exactly: 1) == [2])
            let lateness = proxy.status()[0].uplinkLateness

            // Due 200 ms after it was sent, written once the loop ran again, at least 400 ms after it was sent.
            #expect(lateness.maximum >= .milliseconds(200), "\(lateness.maximum)")
            #expect(lateness.quantile(1) == lateness.maximum)
        }
    }
}
