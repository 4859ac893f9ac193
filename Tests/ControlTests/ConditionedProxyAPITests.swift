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
        let result = LockedBox<(Int, UInt64)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            result.value = try? client.drain()
            done.signal()
        }

        var fast = Profile.none
        fast.downlink.bandwidth = .mbps(2000)
        fast.downlink.delay = .milliseconds(2)
        var jittery = Profile.none
        jittery.downlink.delay = .milliseconds(20)
        jittery.downlink.jitter = .milliseconds(15)
        for (index, profile) in [fast, jittery, .none, fast, jittery, .none].enumerated() {
            if done.wait(timeout: .now() + 0.15) == .success { break }
            proxy.apply(profile)
            if index == 2 {
                proxy.goOffline()
                usleep(100_000)
                proxy.goOnline()
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)

        let received = try #require(result.value)
        #expect(received.0 == size)
        #expect(received.1 == payload.digest.value)
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
        defer { clients.forEach { $0.close() } }
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
        #expect(throws: ProfileError.self) { try proxy.set([(key: "uplink.delay", value: "5 ms"), (key: "loss", value: "120 %")]) }

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

    @Test func stopLeavesNoDescriptorOrThreadBehindAcrossAHundredCycles() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let warmUp = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        warmUp.stop()
        let descriptorsBefore = openDescriptorCount()
        let threadsBefore = threadCount()

        for cycle in 0..<100 {
            let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
            if cycle % 10 == 0 {
                let client = try TestConnection.connect(port: proxy.port)
                try client.send([1])
                _ = try client.receive(exactly: 1)
                client.close()
            }
            proxy.stop()
        }
        usleep(50_000)

        // Other tests' peer threads may close descriptors meanwhile, so "no more than before": a leak per cycle
        // would show as a hundred more.
        #expect(openDescriptorCount() <= descriptorsBefore)
        #expect(threadCount() <= threadsBefore)
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

/// Open file descriptors of this process, from /proc.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Threads of this process, from /proc.
func threadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
}
