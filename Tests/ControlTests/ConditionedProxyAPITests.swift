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

        #expect(deliveredAtSwitches.allSatisfy { $0 > 0 && $0 < size }, "link deliveries at each switch: \(deliveredAtSwitches)")
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

    /// Counts the whole process's descriptors and threads, so the suite runs it with nothing else starting event
    /// loops meanwhile (`--no-parallel`). An exit test's child process was tried instead, and under load it once
    /// counted a descriptor of these kinds that no proxy had opened (most likely one libdispatch opens lazily).
    @Test func stopLeavesNoDescriptorOrThreadBehindAcrossAHundredCycles() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let warmUp = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        warmUp.stop()
        let loopDescriptorsBefore = eventLoopDescriptorCount()
        let pipesBefore = pipeCount()
        var proxyPorts: Set<UInt16> = []
        var seenWhileRunning: [Int] = []

        var spliceLoopsSeen: [Int] = []
        var onSpliceLoopsSeen: [Int] = []
        var options = ProxyOptions()
        options.threads = 2

        for cycle in 0..<100 {
            // A stopped loop's thread may still be exiting when stop returns; the count is of this proxy's own.
            _ = waitUntil(seconds: 5) { threadCount(named: "linkcond-splice") == 0 }
            let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none, options: options)
            proxyPorts.insert(proxy.port)
            spliceLoopsSeen.append(threadCount(named: "linkcond-splice"))
            if cycle % 10 == 0 {
                let client = try TestConnection.connect(port: proxy.port)
                // Enough to be handed to the splice loop, which then holds the connection when the proxy stops.
                let block = [UInt8](repeating: 1, count: 256 << 10)
                try client.send(block)
                _ = try client.receive(exactly: block.count)
                _ = waitUntil(seconds: 10) { proxy.status()[0].connectionsOnSpliceLoops == 1 }
                onSpliceLoopsSeen.append(proxy.status()[0].connectionsOnSpliceLoops)
                // The listener, the accepted client and the upstream socket: proof that the census sees them.
                seenWhileRunning.append(proxySockets(ports: [proxy.port], upstreamPort: echo.port).count)
                proxy.stop()
                client.close()
            } else {
                proxy.stop()
            }
        }
        let loopThreadsEnded = waitUntil(seconds: 5) {
            threadCount(named: "linkcond-loop") == 0 && threadCount(named: "linkcond-splice") == 0
        }

        #expect(seenWhileRunning.allSatisfy { $0 == 3 }, "proxy sockets seen while running: \(seenWhileRunning)")
        #expect(onSpliceLoopsSeen.allSatisfy { $0 == 1 }, "connections on the splice loop before stop: \(onSpliceLoopsSeen)")
        #expect(spliceLoopsSeen.allSatisfy { $0 == 1 }, "splice loop threads seen while running: \(spliceLoopsSeen)")
        #expect(proxySockets(ports: proxyPorts, upstreamPort: echo.port).isEmpty)
        #expect(eventLoopDescriptorCount() == loopDescriptorsBefore)
        #expect(pipeCount() == pipesBefore, "splice pipes left open")
        #expect(loopThreadsEnded, "\(threadCount(named: "linkcond-loop")) event loop and \(threadCount(named: "linkcond-splice")) splice loop threads still running")
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

/// This process's descriptors of the kinds only an event loop opens here (epoll, timerfd, eventfd), from /proc.
///
/// Counted exactly, so the suite must not start event loops elsewhere meanwhile (it runs with --no-parallel).
func eventLoopDescriptorCount() -> Int {
    let kinds: Set<String> = ["anon_inode:[eventpoll]", "anon_inode:[timerfd]", "anon_inode:[eventfd]"]
    return descriptorTargets().filter { kinds.contains($0) }.count
}

/// This process's pipes (splice pipes, when nothing else here opens any meanwhile), from /proc.
func pipeCount() -> Int {
    descriptorTargets().filter { $0.hasPrefix("pipe:") }.count
}

/// This process's TCP sockets that belong to a proxy: bound to one of `ports` (its listener and accepted clients)
/// or connected to `upstreamPort` (its upstream connections). Sockets are matched to /proc/net/tcp by inode, so
/// descriptors that other threads open or close meanwhile cannot be mistaken for them.
func proxySockets(ports: Set<UInt16>, upstreamPort: UInt16) -> [String] {
    let inodes = Set(descriptorTargets().compactMap { target -> String? in
        guard target.hasPrefix("socket:[") else { return nil }
        return String(target.dropFirst(8).dropLast())
    })
    var found: [String] = []
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        // Read to the end: the table is generated as it is read and is longer than one page.
        guard let data = FileHandle(forReadingAtPath: table)?.readDataToEndOfFile() else { continue }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, inodes.contains(String(fields[9])),
                  let local = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                  let remote = fields[2].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }) else { continue }
            if ports.contains(local) || remote == upstreamPort { found.append(String(line)) }
        }
    }
    return found
}

/// What each open descriptor of this process refers to ("socket:[1234]", "anon_inode:[eventpoll]", a path).
func descriptorTargets() -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}

/// Threads of this process with the given name, from /proc.
func threadCount(named name: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
        return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
    }.count
}

/// The README's Swift example, word for word but for the upstream's port, so the API it shows keeps compiling and
/// doing what its comments say.
struct READMESwiftExampleTests {
    @Test func checkoutSurvivesEdge() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy(
            listeners: [ListenerSpec(listen: Endpoint(host: "127.0.0.1", port: 0),
                                     upstream: Endpoint(host: "127.0.0.1", port: echo.port))],
            profile: Profile.builtIn(named: "edge")!)
        defer { proxy.stop() }
        let port = proxy.listeners[0].address.port      // point the client under test here

        proxy.goOffline()                                // the train enters the tunnel
        proxy.goOnline()
        try proxy.set([(key: "loss", value: "2 %")])
        proxy.apply(try Profile.load("3g"))
        #expect(proxy.status()[0].downlink.bytesDelivered >= 0)
        #expect(port != 0)
    }
}
