import Foundation
import LinkProfiles
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// `ProxyOptions.threads`: TCP listeners spread over the event loops round-robin, each with its connections on the
/// loop that owns it, while profile switches, offline, status and stop reach every loop. The tests assert what the
/// proxy decided (which thread owns what, what it counted), never how fast anything went.
@Suite(.serialized)
struct ListenerLoopsTests {
    private static let size = 256 << 10

    /// A proxy on `threads` loops with one TCP listener per entry of `upstreams`.
    private func proxy(threads: Int, upstreams: [UInt16], profile: Profile = .none) throws -> ConditionedProxy {
        var options = ProxyOptions()
        options.threads = threads
        return try ConditionedProxy(
            listeners: upstreams.map {
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0), upstream: Endpoint(host: "127.0.0.1", port: $0))
            },
            profile: profile, options: options)
    }

    /// Sends `size` bytes through `client` to an echo and reads them back, byte-exact.
    /// An echo server, a proxy on two loops with a listener on each in front of it, and one client per listener
    /// that has exchanged a first message.
    private func twoListenersWithAClientEach() throws -> (TestServer, ConditionedProxy, [TestConnection]) {
        let echo = try TestServer.echo()
        let proxy = try proxy(threads: 2, upstreams: [echo.port, echo.port])
        let clients = try proxy.listeners.map { try TestConnection.connect(port: $0.address.port) }
        for (index, client) in clients.enumerated() { try exchange(client, seed: UInt8(index)) }
        return (echo, proxy, clients)
    }

    private func stop(_ echo: TestServer, _ proxy: ConditionedProxy, _ clients: [TestConnection]) {
        for client in clients { client.close() }
        proxy.stop()
        echo.stop()
    }

    private func exchange(_ client: TestConnection, seed: UInt8) throws {
        let block = (0..<Self.size).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
        try client.send(block)
        #expect(try client.receive(exactly: block.count) == block)
    }

    @Test func twoThreadsGiveTwoListenersAndTheirConnectionsToDifferentLoops() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try proxy(
            threads: 2, upstreams: [echo.port, echo.port], profile: try Profile(parsing: "delay = 1 ms"))
        defer { proxy.stop() }
        let clients = try proxy.listeners.map { try TestConnection.connect(port: $0.address.port) }
        defer { for client in clients { client.close() } }
        for (index, client) in clients.enumerated() { try exchange(client, seed: UInt8(index)) }

        let owners = proxy.listenerThreads()
        #expect(owners.count == 2)
        #expect(Set(owners.map(\.thread)).count == 2, "\(owners)")
        #expect(owners.map(\.relaysOnIt) == [[true], [true]], "\(owners)")
        #expect(!owners.map(\.thread).contains(0))
        #expect(proxy.status().map(\.loop) == [0, 1])
        #expect(proxy.report().listeners.map(\.loop) == [0, 1])
    }

    @Test func oneThreadKeepsEveryListenerOnTheMainLoop() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try proxy(threads: 1, upstreams: [echo.port, echo.port, echo.port])
        defer { proxy.stop() }

        #expect(Set(proxy.listenerThreads().map(\.thread)).count == 1)
        #expect(proxy.status().map(\.loop) == [0, 0, 0])
    }

    @Test func listenersGoRoundRobinOverTheLoopsTheMainLoopFirst() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try proxy(threads: 2, upstreams: [echo.port, echo.port, echo.port, echo.port])
        defer { proxy.stop() }

        #expect(proxy.status().map(\.loop) == [0, 1, 0, 1])
        let threads = proxy.listenerThreads().map(\.thread)
        #expect(threads[0] == threads[2] && threads[1] == threads[3] && threads[0] != threads[1], "\(threads)")
    }

    @Test func aProfileSwitchOfflineAndStatusReachEveryLoop() throws {
        let (echo, proxy, clients) = try twoListenersWithAClientEach()
        defer { stop(echo, proxy, clients) }
        // Under `none` neither link builds a flow in its model.
        #expect(proxy.relayDecisions().map(\.modelledDirections) == [0, 0])

        proxy.apply(try Profile(parsing: "delay = 1 ms"))
        for (index, client) in clients.enumerated() { try exchange(client, seed: UInt8(index) ^ 0x5A) }

        // The new profile reached both loops' links: each connection's bytes now enter its link's model.
        #expect(proxy.relayDecisions().map(\.modelledDirections) == [2, 2])
        // Each listener's counters, read on its own loop, hold exactly what crossed it.
        let status = proxy.status()
        #expect(status.map(\.uplink.bytesDelivered) == [2 * Self.size, 2 * Self.size])
        #expect(status.map(\.downlink.bytesDelivered) == [2 * Self.size, 2 * Self.size])
        #expect(status.map(\.activeConnections) == [1, 1])
        #expect(status.map(\.uplinkLateness.samples).allSatisfy { $0 > 0 }, "\(status.map(\.uplinkLateness.samples))")

        proxy.goOffline(.refuse)
        for listener in proxy.listeners {
            let refused = try TestConnection.connect(port: listener.address.port)
            _ = try? refused.receive()
            refused.close()
        }
        #expect(waitUntil(seconds: 20) { proxy.status().map(\.connectionsRefused) == [1, 1] })
        proxy.goOnline()
        for (index, client) in clients.enumerated() { try exchange(client, seed: UInt8(index) ^ 0x33) }
    }

    @Test func resetConnectionsResetsTheConnectionsOfEveryLoop() throws {
        let (echo, proxy, clients) = try twoListenersWithAClientEach()
        defer { stop(echo, proxy, clients) }

        proxy.resetConnections()

        #expect(proxy.status().map(\.activeConnections) == [0, 0])
        for client in clients { #expect(throws: (any Error).self) { _ = try client.receive() } }
    }

    @Test func stopClosesEveryLoopsSocketsAndEndsItsThread() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try proxy(threads: 2, upstreams: [echo.port, echo.port])
        let clients = try proxy.listeners.map { try TestConnection.connect(port: $0.address.port) }
        defer { for client in clients { client.close() } }
        for (index, client) in clients.enumerated() { try exchange(client, seed: UInt8(index)) }
        let owned = proxy.ownedResources()
        #expect(owned.threadIDs.count == 2)

        proxy.stop()

        // A loop thread may still be exiting when stop returns.
        let ended = waitUntil(seconds: 5) {
            owned.threadIDs.allSatisfy { !FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") }
        }
        #expect(ended, "loop threads \(owned.threadIDs) still running")
        #expect(owned.pipesOpen == 0)
        // Both connections were reset, and neither listening socket takes a client any more.
        for client in clients { #expect(throws: (any Error).self) { _ = try client.receive() } }
        for listener in proxy.listeners {
            #expect(throws: (any Error).self) { _ = try TestConnection.connect(port: listener.address.port) }
        }
    }
}
