import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The upstream's socket gets TCP_NODELAY before the relay's second write to it, not at connect: Nagle's algorithm
/// can hold back only a write made while earlier bytes are unacknowledged. The tests read the option the kernel
/// holds for the relay's upstream socket.
@Suite(.serialized)
struct UpstreamNoDelayTests {
    private func echoed(_ client: TestConnection, _ bytes: [UInt8]) throws {
        try client.send(bytes)
        #expect(try client.receive(exactly: bytes.count) == bytes)
    }

    @Test func anUpstreamWrittenOnceKeepsNagleOn() throws {
        let relay = try EchoRelay(profile: .none)
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)

        try echoed(client, [1, 2, 3])

        #expect(proxy.relayDecisions().map(\.upstreamNoDelay) == [false])
    }

    @Test func anUpstreamWrittenTwiceHasNoDelay() throws {
        let relay = try EchoRelay(profile: .none)
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)

        try echoed(client, [1, 2, 3])
        try echoed(client, [4, 5])

        #expect(proxy.relayDecisions().map(\.upstreamNoDelay) == [true])
    }

    @Test func anUpstreamWrittenTwiceThroughTheModelHasNoDelay() throws {
        let relay = try EchoRelay(profile: delayProfile(.milliseconds(1)))
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)

        try echoed(client, [1, 2, 3])
        try echoed(client, [4, 5])

        #expect(proxy.relayDecisions().map(\.upstreamNoDelay) == [true])
    }

    @Test func anUpstreamWrittenOnceGetsNoDelayWhenASpliceLoopTakesTheConnection() throws {
        let download = Payload(size: 1 << 20, seed: 0x0DE1)
        let server = try TestServer { connection in
            defer { connection.close() }
            guard (try? connection.receive(exactly: 1)) != nil else { return }
            try? download.forEachBlock { try connection.send($0) }
            _ = try? connection.receive()
        }
        defer { server.stop() }
        var options = ProxyOptions()
        options.threads = 2
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none, options: options)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 30)
        defer { client.close() }

        try client.send([1])
        var digest = StreamDigest()
        try client.receive(until: download.size, into: &digest)
        try #require(waitUntil(seconds: 20) { proxy.status().first?.connectionsOnSpliceLoops == 1 })

        // The splice loop writes to the upstream without asking, so the option is set as it takes the connection.
        #expect(digest.value == download.digest.value)
        #expect(proxy.relayDecisions().map(\.upstreamNoDelay) == [true])
    }
}
