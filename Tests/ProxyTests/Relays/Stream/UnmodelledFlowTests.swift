import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A connection made while its link shapes nothing builds no flow in the link's model, and a shaping profile
/// switched on later still conditions it. The tests assert what the relay decided (how many directions it
/// modelled) and a delay's lower bound, never how fast anything went.
@Suite(.serialized)
struct UnmodelledFlowTests {
    /// One byte sent through `client` and echoed back, checked, and how long the round trip took.
    private func echoRoundTrip(_ client: TestConnection, byte: UInt8) throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try client.send([byte])
        let echoed = try client.receive(exactly: 1)
        #expect(echoed == [byte])
        return clock.now - start
    }

    @Test func aConnectionOnAnUnshapedLinkModelsNeitherDirection() throws {
        let relay = try EchoRelay(profile: .none)
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)

        _ = try echoRoundTrip(client, byte: 1)

        #expect(proxy.relayDecisions().map(\.modelledDirections) == [0])
    }

    @Test func aConnectionOnAShapedLinkModelsBothDirections() throws {
        let relay = try EchoRelay(profile: delayProfile(.milliseconds(1)))
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)

        _ = try echoRoundTrip(client, byte: 1)

        #expect(proxy.relayDecisions().map(\.modelledDirections) == [2])
    }

    @Test func aConnectionOpenedUnshapedIsDelayedOnceAShapingProfileTakesOver() throws {
        let relay = try EchoRelay(profile: .none)
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)
        _ = try echoRoundTrip(client, byte: 1)

        proxy.apply(delayProfile(.milliseconds(40)))
        let shapedRoundTrip = try echoRoundTrip(client, byte: 2)
        proxy.apply(.none)
        let payload = [UInt8]((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try client.send(payload)
        let echoed = try client.receive(exactly: payload.count)

        // A byte crossing 40 ms each way cannot come back sooner than 80 ms.
        #expect(shapedRoundTrip >= .milliseconds(80))
        #expect(proxy.relayDecisions().map(\.modelledDirections) == [2])
        #expect(echoed == payload)
    }

    @Test func aFrontEndsReplyOnAnUnshapedLinkModelsNeitherDirection() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer { proxy.stop() }
        defer { client.close() }

        let status = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: [127, 0, 0, 1], port: echo.port))
        _ = try echoRoundTrip(client, byte: 3)

        #expect(status == 0x00)
        #expect(proxy.frontEndRelayDecisions().map(\.modelledDirections) == [0])
        #expect(proxy.status()[0].downlink.bytesDelivered == 11, "the 10-byte SOCKS reply and the echoed byte")
    }
}
