import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The in-process Swift API a test suite uses: start on port 0, steer, read counters, stop.
@Suite(.serialized)
struct ConditionedProxyAPITests {
    @Test func switchingProfilesDuringASixtyFourMebibyteTransferKeepsItByteExact() throws {
        let size = 64 << 20
        let payload = Payload(size: size, seed: 77)
        let server = try TestServer { connection in
            defer { connection.close() }
            try? payload.forEachBlock { try connection.send($0) }
            connection.shutdownWrite()
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        defer { client.close() }
        // A fixed receive buffer (no autotuning): what the client has not read holds the rest back in the relay.
        var receiveBuffer: Int32 = 256 << 10
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))

        var fast = Profile.none
        fast.downlink.bandwidth = .mbps(2000)
        fast.downlink.delay = .milliseconds(2)
        var jittery = Profile.none
        jittery.downlink.delay = .milliseconds(20)
        jittery.downlink.jitter = .milliseconds(15)
        // The client reads 4 MiB between switches, so each switch meets a transfer with most of it still to come.
        var digest = StreamDigest()
        var deliveredAtSwitches: [Int] = []
        for (index, profile) in [fast, jittery, .none, fast, jittery, .none].enumerated() {
            digest.add(try client.receive(exactly: 4 << 20))
            proxy.apply(profile)
            if index == 2 {
                proxy.goOffline()
                usleep(100_000)
                proxy.goOnline()
            }
            deliveredAtSwitches.append(try #require(proxy.status().first).downlink.bytesDelivered)
        }
        try client.drain(into: &digest)

        #expect(
            deliveredAtSwitches.allSatisfy { $0 > 0 && $0 < size },
            "link deliveries at each switch: \(deliveredAtSwitches)")
        #expect(digest.count == size)
        #expect(digest.value == payload.digest.value)
    }

    @Test func offlineRefusesNewConnectionsAndStallsExistingOnesUntilOnline() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let existing = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { existing.close() }
        try existing.send([1])
        _ = try existing.receive(exactly: 1)

        proxy.goOffline(.refuse)
        let refused = try TestConnection.connect(port: proxy.port, timeout: 2)
        defer { refused.close() }
        let refusedOutcome = Result { try refused.receive() }
        try existing.send([2])
        let stalledStart = MonotonicClock().now()
        let stalled = LockedBox<[UInt8]?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            stalled.value = try? existing.receive(exactly: 1)
            answered.signal()
        }
        let answeredWhileOffline = answered.wait(timeout: .now() + 0.5) == .success
        proxy.goOnline()
        let answeredAfterOnline = answered.wait(timeout: .now() + 5) == .success

        guard case .failure(let error) = refusedOutcome else {
            Issue.record("a connection made while offline was not reset: \(refusedOutcome)")
            return
        }
        #expect("\(error)".contains("reset"))
        #expect(!answeredWhileOffline, "an existing connection carried data while offline")
        #expect(answeredAfterOnline)
        #expect(stalled.value == [2])
        #expect(secondsSince(stalledStart) >= 0.5)
    }

    @Test func resetConnectionsResetsEveryLiveConnection() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let clients = try (0..<3).map { _ in try TestConnection.connect(port: proxy.port, timeout: 5) }
        defer { for client in clients { client.close() } }
        for client in clients {
            try client.send([9])
            _ = try client.receive(exactly: 1)
        }

        proxy.resetConnections()

        for client in clients {
            let outcome = Result { try client.receive() }
            guard case .failure(let error) = outcome else {
                Issue.record("connection was not reset: \(outcome)")
                continue
            }
            #expect("\(error)".contains("reset"))
        }
        #expect(proxy.status().first?.activeConnections == 0)
    }

    @Test func settingOneKeyChangesOnlyThatSettingAndABadOneChangesNothing() throws {
        let proxy = try ConditionedProxy.inFront(of: 9, profile: Profile.builtIn(named: "3g")!)
        defer { proxy.stop() }

        try proxy.set([(key: "downlink.delay", value: "300 ms")])
        #expect(throws: ProfileError.self) {
            try proxy.set([(key: "uplink.delay", value: "5 ms"), (key: "loss", value: "120 %")])
        }

        let profile = proxy.profile
        #expect(profile.downlink.delay == .milliseconds(300))
        #expect(profile.uplink.delay == .milliseconds(100))
        #expect(profile.downlink.bandwidth == .kbps(780))
    }

    @Test func countersReportBytesInEachDirection() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }

        try client.send([UInt8](repeating: 3, count: 10_000))
        _ = try client.receive(exactly: 10_000)

        let status = try #require(proxy.status().first)
        #expect(status.uplink.bytesDelivered == 10_000)
        #expect(status.downlink.bytesDelivered == 10_000)
        #expect(status.connectionsAccepted == 1)
    }

    @Test func methodsAfterStopAreHarmless() throws {
        let proxy = try ConditionedProxy.inFront(of: 9, profile: .none)
        proxy.stop()

        proxy.apply(.none)
        proxy.goOffline()
        proxy.stop()

        #expect(proxy.status().isEmpty)
    }
}

/// The README's Swift example, word for word but for the upstream's port, so the API it shows keeps compiling and
/// doing what its comments say.
struct READMESwiftExampleTests {
    @Test func checkoutSurvivesEdge() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    upstream: Endpoint(host: "127.0.0.1", port: echo.port))
            ],
            profile: Profile.builtIn(named: "edge")!)
        defer { proxy.stop() }
        let port = proxy.listeners[0].address.port // point the client under test here

        proxy.goOffline() // the train enters the tunnel
        proxy.goOnline()
        try proxy.set([(key: "loss", value: "2 %")])
        proxy.apply(try Profile.load("3g"))
        #expect(proxy.status()[0].downlink.bytesDelivered >= 0)
        #expect(port != 0)
    }
}
