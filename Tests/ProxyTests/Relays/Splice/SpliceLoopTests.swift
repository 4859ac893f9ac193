import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Splice loops: a pass-through connection moves to another thread once it has carried some bytes, comes back to
/// the main loop before a change of conditions is applied, and is counted, reset and closed as if it never left.
/// The tests assert what the proxy decided (where a connection is, what it counted), never how fast it went.
@Suite(.serialized)
struct SpliceLoopTests {
    /// Options with one splice loop, whatever the machine's cores.
    private static let twoThreads: ProxyOptions = {
        var options = ProxyOptions()
        options.threads = 2
        return options
    }()

    private func onSpliceLoops(_ proxy: ConditionedProxy) -> Int {
        proxy.status().first?.connectionsOnSpliceLoops ?? -1
    }

    /// Sends `size` bytes through an echo and reads them back, so the connection carries enough to be handed over.
    private func exchange(_ client: TestConnection, size: Int) throws {
        let block = [UInt8](repeating: 0xA5, count: size)
        try client.send(block)
        #expect(try client.receive(exactly: size) == block)
    }

    /// Echoes enough through `client` for its connection to be handed over, and waits until `proxy` has.
    private func handOver(_ client: TestConnection, on proxy: ConditionedProxy) throws {
        try exchange(client, size: 256 << 10)
        try #require(waitUntil(seconds: 20) { onSpliceLoops(proxy) == 1 })
    }

    /// Runs `body` with a client whose connection to an echo server a splice loop carries, through a proxy with one
    /// splice loop.
    private func withEchoOnASpliceLoop(_ body: (ConditionedProxy, TestConnection) throws -> Void) throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none, options: Self.twoThreads)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        try handOver(client, on: proxy)
        try body(proxy, client)
    }

    @Test func aPassThroughConnectionCrossesASpliceLoopByteExactWithAHalfCloseEachWay() throws {
        let up = Payload(size: 2 << 20, seed: 0x0051)
        let down = Payload(size: 16 << 20, seed: 0x00D0)
        let receivedUpstream = LockedBox<(count: Int, checksum: UInt64)?>(nil)
        let server = try TestServer { connection in
            defer { connection.close() }
            guard let received = try? connection.drain() else { return }
            receivedUpstream.value = received
            try? down.forEachBlock { try connection.send($0) }
            connection.shutdownWrite()
            _ = try? connection.receive()
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none, options: Self.twoThreads)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        defer { client.close() }

        try up.forEachBlock { try client.send($0) }
        let handedOver = waitUntil(seconds: 20) { onSpliceLoops(proxy) == 1 }
        client.shutdownWrite()
        var digest = StreamDigest()
        let first = try client.receive(max: 65_536)
        digest.add(first)
        let stillThereAfterHalfClose = onSpliceLoops(proxy)
        try client.drain(into: &digest)
        let closed = waitUntil(seconds: 20) { proxy.status()[0].activeConnections == 0 }

        #expect(handedOver)
        #expect(stillThereAfterHalfClose == 1)
        #expect(receivedUpstream.value?.count == up.size)
        #expect(receivedUpstream.value?.checksum == up.digest.value)
        #expect(digest.count == down.size)
        #expect(digest.value == down.digest.value)
        #expect(closed)
        #expect(proxy.status()[0].downlink.bytesSpliced == down.size)
    }

    @Test func aResetThroughTheControlEndpointTakesTheConnectionBackBeforeClosingIt() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none, options: Self.twoThreads)
        defer { proxy.stop() }
        let token = ControlToken.random()
        let served = try proxy.serveControl(at: .tcp(Endpoint(host: "127.0.0.1", port: 0)), token: token)
        let control = ControlClient(
            address: .tcp(
                Endpoint(
                    host: "127.0.0.1", port: try #require(served.split(separator: ":").last.flatMap { UInt16($0) }))),
            token: token)
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        try handOver(client, on: proxy)

        let reply = try control.send("POST", "/reset")
        let afterReset = onSpliceLoops(proxy)
        proxy.apply(try Profile(parsing: "delay = 1 ms"))
        let next = try TestConnection.connect(port: proxy.port)
        defer { next.close() }
        try exchange(next, size: 1000)

        #expect(reply.body.hasPrefix("reset 1 connection"))
        #expect(afterReset == 0)
        #expect(client.readUntilClosed().isEmpty)
    }

    @Test func statusCountsTheBytesASpliceLoopMoved() throws {
        try withEchoOnASpliceLoop { proxy, client in
            try exchange(client, size: 768 << 10)
            let status = proxy.status()[0]

            #expect(status.connectionsOnSpliceLoops == 1)
            #expect(status.activeConnections == 1)
            #expect(status.uplink.bytesDelivered == 1 << 20)
            #expect(status.downlink.bytesDelivered == 1 << 20)
            #expect(status.downlink.bytesSpliced >= 768 << 10)
            #expect(proxy.report().listeners[0].connectionsOnSpliceLoops == 1)
        }
    }

    @Test func switchingBetweenNoneAndAShapedProfileTakesTheConnectionBackBeforeApplyReturns() throws {
        let payload = Payload(size: 96 << 20, seed: 0x5EA5)
        let server = try TestServer.sending(payload)
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none, options: Self.twoThreads)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        defer { client.close() }
        client.shutdownWrite()
        var shaped = Profile.none
        shaped.downlink.delay = .milliseconds(2)
        shaped.downlink.bandwidth = BitRate(bitsPerSecond: 2_000_000_000)

        // The client reads in bounded steps, so the stream is always mid-flight when the profile changes.
        var digest = StreamDigest()
        func read(_ count: Int) throws { try client.receive(until: digest.count + count, into: &digest) }
        var handedOver: [Bool] = []
        var onSpliceLoopsAfterApply: [Int] = []
        for _ in 0..<5 {
            proxy.apply(.none)
            // Handed over once what the shaped period left in user space (up to the 4 MiB connection buffer) and in
            // the sockets has reached the client: within 16 MiB whatever the machine's speed.
            var carried = false
            for _ in 0..<256 where !carried {
                try read(64 << 10)
                carried = onSpliceLoops(proxy) == 1
            }
            handedOver.append(carried)
            proxy.apply(shaped)
            onSpliceLoopsAfterApply.append(onSpliceLoops(proxy))
            try read(1 << 20)
        }
        proxy.apply(.none)
        try client.drain(into: &digest)

        #expect(handedOver == Array(repeating: true, count: 5))
        #expect(onSpliceLoopsAfterApply == Array(repeating: 0, count: 5))
        #expect(digest.count == payload.size)
        #expect(digest.value == payload.digest.value)
    }

    @Test func aChangeThatLeavesOpenStreamsAsTheyWereKeepsTheConnectionOnItsSpliceLoop() throws {
        try withEchoOnASpliceLoop { proxy, client in
            var slowDNS = Profile.none
            slowDNS.name = "slow-dns"
            slowDNS.dnsDelay = .milliseconds(300)

            proxy.apply(slowDNS)
            try exchange(client, size: 64 << 10)
            let handOvers = proxy.report().spliceHandOvers

            // A recall would have brought the connection back, and the exchange handed it over a second time.
            #expect(handOvers == 1, "the connection came back to the main loop and left again")
            #expect(onSpliceLoops(proxy) == 1)
            #expect(proxy.profile.name == "slow-dns")
        }
    }

    @Test func resetConnectionsResetsAConnectionOnASpliceLoop() throws {
        let upstreamSaw = LockedBox<String?>(nil)
        let server = try TestServer { connection in
            defer { connection.close() }
            do {
                while true {
                    let chunk = try connection.receive()
                    if chunk.isEmpty {
                        upstreamSaw.value = "end of stream"
                        return
                    }
                    try connection.send(chunk)
                }
            } catch {
                upstreamSaw.value = "\(error)"
            }
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none, options: Self.twoThreads)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        try handOver(client, on: proxy)

        proxy.resetConnections()
        let status = proxy.status()[0]

        #expect(status.activeConnections == 0)
        #expect(status.connectionsOnSpliceLoops == 0)
        #expect(throws: TestError.self) { _ = try client.receive() }
        #expect(waitUntil(seconds: 20) { upstreamSaw.value != nil })
        #expect(upstreamSaw.value?.contains("reset") == true, "the upstream saw \(upstreamSaw.value ?? "nothing")")
    }

    @Test func oneThreadKeepsEveryConnectionOnTheMainLoop() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        var options = ProxyOptions()
        options.threads = 1
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none, options: options)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }

        for _ in 0..<8 { try exchange(client, size: 256 << 10) }
        let status = proxy.status()[0]

        #expect(proxy.report().spliceLoops == 0)
        #expect(status.connectionsOnSpliceLoops == 0)
        #expect(status.downlink.bytesSpliced > 0, "the main loop splices it itself")
    }

    @Test func fewerThanOneThreadIsRefusedWithTheReason() throws {
        var options = ProxyOptions()
        options.threads = 0

        #expect {
            _ = try ConditionedProxy.inFront(of: 9, profile: .none, options: options)
        } throws: { error in
            "\(error)".contains("threads must be at least 1")
        }
    }
}
