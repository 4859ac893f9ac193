import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// End-to-end behaviour of the TCP relay on real loopback sockets.
@Suite(.serialized)
struct TCPRelayTests {
    /// Sends `size` bytes each way at once through a proxy in front of an echo-free sink/source pair and checks
    /// both streams arrive byte-exact.
    private func transferBothWays(profile: Profile, size: Int) throws {
        let upstreamPayload = Payload(size: size, seed: 0xDEC0DE)
        let clientPayload = Payload(size: size, seed: 0xC0FFEE)
        let upstreamReceived = LockedBox<(Int, UInt64)?>(nil)
        let server = try TestServer { connection in
            let sent = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                try? upstreamPayload.forEachBlock { try connection.send($0) }
                connection.shutdownWrite()
                sent.signal()
            }
            upstreamReceived.value = try? connection.drain()
            sent.wait()
            connection.close()
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        defer { client.close() }
        let sendDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? clientPayload.forEachBlock { try client.send($0) }
            client.shutdownWrite()
            sendDone.signal()
        }
        let downstream = try client.drain()
        sendDone.wait()
        let deadline = Date().addingTimeInterval(30)
        while upstreamReceived.value == nil && Date() < deadline { usleep(10_000) }

        #expect(downstream.count == size)
        #expect(downstream.checksum == upstreamPayload.digest.value)
        let upstream = try #require(upstreamReceived.value)
        #expect(upstream.0 == size)
        #expect(upstream.1 == clientPayload.digest.value)
    }

    @Test func passesSixtyFourMebibytesEachWayByteExactUnderNone() throws {
        try transferBothWays(profile: .none, size: 64 << 20)
    }

    @Test func passesSixtyFourMebibytesEachWayByteExactUnderDelayWithJitter() throws {
        var profile = Profile.none
        profile.uplink.delay = .milliseconds(5)
        profile.downlink.delay = .milliseconds(5)
        profile.uplink.jitter = .milliseconds(2)
        profile.downlink.jitter = .milliseconds(2)
        profile.seed = 7
        try transferBothWays(profile: profile, size: 64 << 20)
    }

    @Test func passesSixtyFourMebibytesEachWayByteExactUnderRateLimit() throws {
        var profile = Profile.none
        profile.uplink.bandwidth = .mbps(1500)
        profile.downlink.bandwidth = .mbps(1500)
        try transferBothWays(profile: profile, size: 64 << 20)
    }

    @Test func passesDataByteExactUnderLoss() throws {
        var profile = Profile.none
        profile.uplink.bandwidth = .mbps(200)
        profile.downlink.bandwidth = .mbps(200)
        profile.uplink.loss = Percentage(0.05)
        profile.downlink.loss = Percentage(0.05)
        profile.seed = 42
        try transferBothWays(profile: profile, size: 4 << 20)
    }

    @Test func forwardsClientHalfCloseAfterItsDataAndKeepsTheOtherDirectionOpen() throws {
        let server = try TestServer { connection in
            defer { connection.close() }
            let request = try? connection.drain()
            try? connection.send(Array("got \(request?.count ?? -1) bytes".utf8))
            connection.shutdownWrite()
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        try client.send([UInt8](repeating: 1, count: 100_000))
        client.shutdownWrite()
        let reply = try client.drain()

        #expect(reply.count == "got 100000 bytes".utf8.count)
    }

    @Test func bytesAndAHalfCloseSentBeforeTheRelayAcceptsAllCrossAShapedLink() throws {
        let received = LockedBox<[Int]>([])
        let server = try TestServer { connection in
            defer { connection.close() }
            let request = try? connection.drain()
            received.mutate { $0.append(request?.count ?? -1) }
            try? connection.send(Array("got \(request?.count ?? -1) bytes".utf8))
            connection.shutdownWrite()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.uplink.delay = .milliseconds(2)
        profile.downlink.delay = .milliseconds(2)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        var replies: [String] = []
        for size in [1, 1000, 70_000] {
            let client = try TestConnection.connect(port: proxy.port, timeout: 30)
            defer { client.close() }
            try client.send([UInt8](repeating: 9, count: size))
            client.shutdownWrite()
            var reply: [UInt8] = []
            while case let chunk = try client.receive(), !chunk.isEmpty { reply += chunk }
            replies.append(String(decoding: reply, as: UTF8.self))
        }

        #expect(replies == ["got 1 bytes", "got 1000 bytes", "got 70000 bytes"])
        #expect(received.value == [1, 1000, 70_000])
    }

    @Test func bytesBehindTCPUrgentDataCrossWithoutWaitingForMore() throws {
        let received = LockedBox<[UInt8]>([])
        let server = try TestServer { connection in
            defer { connection.close() }
            while let chunk = try? connection.receive(), !chunk.isEmpty { received.mutate { $0 += chunk } }
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 30)
        defer { client.close() }
        try client.send([0])
        try #require(waitUntil(seconds: 20) { received.value.count == 1 })

        try client.send(Array("abc".utf8))
        var urgent = UInt8(ascii: "U")
        _ = Glibc.send(client.fd, &urgent, 1, Int32(MSG_OOB))
        try client.send(Array("def".utf8))
        let arrived = waitUntil(seconds: 20) { received.value.count >= 7 }

        #expect(
            arrived, "only \(received.value.count) of 7 bytes arrived: the relay stopped reading at the urgent mark")
        #expect(received.value == [0] + Array("abcdef".utf8), "the urgent byte travels out of band, and is not relayed")
    }

    @Test func forwardsUpstreamHalfCloseAndKeepsTheClientDirectionOpen() throws {
        let received = LockedBox<Int>(-1)
        let server = try TestServer { connection in
            defer { connection.close() }
            try? connection.send(Array("hello".utf8))
            connection.shutdownWrite()
            received.value = (try? connection.drain().count) ?? -2
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        let greeting = try client.drain()
        try client.send([UInt8](repeating: 2, count: 50_000))
        client.shutdownWrite()
        let deadline = Date().addingTimeInterval(10)
        while received.value < 0 && Date() < deadline { usleep(5_000) }

        #expect(greeting.count == 5)
        #expect(received.value == 50_000)
    }

    @Test func aHalfCloseCrossesTheLinkDelayLikeData() throws {
        let server = try TestServer { connection in
            connection.shutdownWrite()
            _ = try? connection.drain()
            connection.close()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.delay = .milliseconds(100)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        let endOfStream = try client.receive()
        let elapsed = secondsSince(start)

        // The server's FIN is its first segment: it leaves after the handshake's SYN-ACK (100 ms down) and final
        // ACK (0 ms up) and crosses the downlink again, 200 ms in all, as on a real link. Never early; how late a
        // busy machine makes it is not the relay's decision, so it is not bounded here.
        #expect(endOfStream.isEmpty)
        #expect(elapsed >= 0.2, "end of stream after \(elapsed) s for a 100 ms downlink")
    }

    @Test func resetsTheClientPromptlyWhenTheUpstreamRefuses() throws {
        let unusedPort = try TestServer { $0.close() }
        let port = unusedPort.port
        unusedPort.stop()
        let proxy = try ConditionedProxy.inFront(of: port, profile: .none)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { client.close() }
        let outcome = Result { try client.receive() }

        // Promptly: the reset comes from the refusal itself, as nothing else resets this client; a relay that held
        // it instead would leave the read to time out ("temporarily unavailable").
        guard case .failure(let error) = outcome else {
            Issue.record("expected a reset, got \(outcome)")
            return
        }
        #expect("\(error)".contains("reset"), "\(error)")
    }

    @Test func propagatesAnUpstreamResetToTheClient() throws {
        let server = try TestServer { connection in
            _ = try? connection.receive()
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            connection.close()
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { client.close() }
        try client.send([1, 2, 3])
        let outcome = Result { try client.receive() }

        guard case .failure(let error) = outcome else {
            Issue.record("expected a reset, got \(outcome)")
            return
        }
        #expect("\(error)".contains("reset"))
    }

    @Test func relaysThreeHundredConcurrentConnections() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        var profile = Profile.none
        profile.uplink.delay = .milliseconds(10)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let count = 300
        let failures = LockedBox<[String]>([])
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let client = try TestConnection.connect(port: proxy.port)
                    defer { client.close() }
                    let message =
                        [UInt8]("connection \(index) ".utf8) + [UInt8](repeating: UInt8(index % 251), count: 20_000)
                    try client.send(message)
                    client.shutdownWrite()
                    let echoed = try client.receive(exactly: message.count)
                    if echoed != message { failures.mutate { $0.append("connection \(index): bytes differ") } }
                } catch {
                    failures.mutate { $0.append("connection \(index): \(error)") }
                }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
    }

    @Test func bothRelayedSocketsHaveNagleOffOnceTheUpstreamWasWrittenTwice() throws {
        let relay = try EchoRelay(profile: .none)
        defer { relay.close() }
        let (server, proxy, client) = (relay.echo, relay.proxy, relay.client)
        // The upstream gets TCP_NODELAY before its second write (UpstreamNoDelayTests), the client from the listener.
        for byte: UInt8 in [7, 8] {
            try client.send([byte])
            _ = try client.receive(exactly: 1)
        }

        let relayed = socketsOfThisProcess().filter { $0.localPort == proxy.port || $0.remotePort == server.port }
        let nagleOff = relayed.allSatisfy { $0.noDelay }

        #expect(relayed.count == 2, "the accepted client socket and the upstream socket: \(relayed)")
        #expect(nagleOff, "\(relayed)")
    }

    /// Every TCP socket this process has open over IPv4: its ports and whether TCP_NODELAY is set.
    private func socketsOfThisProcess() -> [(localPort: UInt16, remotePort: UInt16, noDelay: Bool)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { name -> (UInt16, UInt16, Bool)? in
            guard let fd = Int32(name),
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"))?.hasPrefix(
                    "socket:") == true
            else { return nil }
            var local = sockaddr_in()
            var remote = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            var remoteLength = length
            let named = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            let peered = withUnsafeMutablePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &remoteLength) }
            }
            guard named == 0, peered == 0, local.sin_family == sa_family_t(AF_INET) else { return nil }
            var noDelay: Int32 = 0
            var optionLength = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, &optionLength) == 0 else { return nil }
            return (UInt16(bigEndian: local.sin_port), UInt16(bigEndian: remote.sin_port), noDelay != 0)
        }
    }

    @Test func relaysOverIPv6() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        let proxy = try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "::1", port: 0), upstream: Endpoint(host: "localhost", port: server.port))
            ],
            profile: .none)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port, ipv6: true)
        defer { client.close() }
        try client.send(Array("over six".utf8))

        #expect(try client.receive(exactly: 8) == Array("over six".utf8))
    }
}
