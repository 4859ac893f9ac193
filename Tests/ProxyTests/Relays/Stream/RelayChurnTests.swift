import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers
import Testing

/// Many connections opening, ending and being cut while the link is busy or the conditions flip: the relay must
/// neither crash nor mislead an app. A stream either arrives whole and ends with a FIN, or is cut with a reset.
@Suite(.serialized)
struct RelayChurnTests {
    /// How one client's stream ended.
    enum Ending: Equatable {
        case endOfStream
        case reset
        case failed(String)
    }

    /// What one client saw: the bytes it received and how the stream ended.
    struct Received {
        var bytes: [UInt8]
        var ending: Ending
    }

    /// Reads until end of stream or an error, keeping every byte.
    static func readToEnd(_ connection: TestConnection) -> Received {
        var bytes: [UInt8] = []
        while true {
            do {
                let chunk = try connection.receive(max: 65536)
                if chunk.isEmpty { return Received(bytes: bytes, ending: .endOfStream) }
                bytes += chunk
            } catch {
                let text = "\(error)"
                return Received(bytes: bytes, ending: text.contains("reset") ? .reset : .failed(text))
            }
        }
    }

    /// Makes `close` send a reset instead of a FIN.
    static func resetOnClose(_ connection: TestConnection) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// An upstream that reads one command byte, sends `payload`, then ends with a FIN (`F`) or a reset (`R`).
    static func finishingOrResettingServer(payload: [UInt8]) throws -> TestServer {
        try TestServer { connection in
            guard let command = try? connection.receive(exactly: 1) else {
                connection.close()
                return
            }
            try? connection.send(payload)
            if command == [UInt8(ascii: "R")] {
                resetOnClose(connection)
            } else {
                connection.shutdownWrite()
                _ = try? connection.receive()
            }
            connection.close()
        }
    }

    @Test func upstreamsEndingAndResettingMidStreamOnAFullSmallQueueEndEachStreamHonestly() throws {
        let payload = Array(Payload(size: 192 * 1024, seed: 0xC4A5).allBytes())
        let server = try Self.finishingOrResettingServer(payload: payload)
        defer { server.stop() }
        var profile = Profile.none
        try profile.set("bandwidth", to: "200 Mbit/s")
        // 64 KiB is under half a segment per flow: pumps wait for room, thousands of segments are lost and
        // repaired, and relays close while the link services them. A 2 KiB queue (the original report) is a
        // congestion collapse instead: in the model alone its slowest flow needs 103 s, as backed-off Linux
        // senders would, which made this test's time a matter of chance.
        try profile.set("queue", to: "64 KiB")
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let clients = 130
        let rounds = 3
        let problems = LockedBox<[String]>([])
        let resets = LockedBox(0)
        for round in 0..<rounds {
            let group = DispatchGroup()
            for index in 0..<clients {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    let resetting = index % 2 == 1
                    do {
                        // A hang guard, not a speed bound (the model alone finishes every flow within about 2 s).
                        let client = try TestConnection.connect(port: proxy.port, timeout: 120)
                        defer { client.close() }
                        try client.send([UInt8(ascii: resetting ? "R" : "F")])
                        let received = Self.readToEnd(client)
                        let intact = received.bytes == Array(payload.prefix(received.bytes.count))
                        if !intact { problems.mutate { $0.append("round \(round) client \(index): bytes differ") } }
                        if resetting {
                            if received.ending == .endOfStream && received.bytes.count < payload.count {
                                problems.mutate {
                                    $0.append(
                                        "round \(round) client \(index): FIN after \(received.bytes.count) of \(payload.count) bytes of a reset stream"
                                    )
                                }
                            }
                            if received.ending == .reset { resets.mutate { $0 += 1 } }
                        } else if received.ending != .endOfStream || received.bytes.count != payload.count {
                            problems.mutate {
                                $0.append(
                                    "round \(round) client \(index): \(received.ending) after \(received.bytes.count) of \(payload.count) bytes"
                                )
                            }
                        }
                    } catch {
                        problems.mutate { $0.append("round \(round) client \(index): \(error)") }
                    }
                }
            }
            #expect(group.wait(timeout: .now() + 300) == .success)
        }

        #expect(problems.value.isEmpty, "\(problems.value.count) problems, first: \(problems.value.prefix(5))")
        #expect(resets.value > 0, "no reset stream was cut before its end: the test did not exercise cuts")
        #expect(
            waitUntil(seconds: 20) { proxy.status()[0].activeConnections == 0 },
            "connections still open: \(proxy.status()[0].activeConnections)")
    }

    @Test func stoppingTheProxyResetsAStreamWhoseDataIsStillOnTheLink() throws {
        let server = try TestServer { connection in
            try? connection.send([UInt8](repeating: 7, count: 100_000))
            connection.shutdownWrite()
            _ = try? connection.receive()
            connection.close()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.delay = .seconds(5)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        // The transport model lets only its window onto the link per (5 s) round trip, so wait for the first
        // bytes on the link rather than all of them; none can have arrived yet.
        let deadline = Date().addingTimeInterval(10)
        while proxy.status()[0].downlink.bytesEnqueued == 0 && Date() < deadline { usleep(5_000) }
        try #require(proxy.status()[0].downlink.bytesEnqueued > 0)
        try #require(proxy.status()[0].downlink.bytesDelivered == 0)

        proxy.stop()
        let received = Self.readToEnd(client)

        #expect(received.bytes.isEmpty)
        #expect(received.ending == .reset, "a stream cut by stop ended with \(received.ending)")
    }

    @Test
    func echoClientsStayByteExactOrAreResetWhileTheProxyFlipsBetweenBlackholeOnlineAndResetsEveryFiftyMilliseconds()
        throws
    {
        let server = try TestServer.echo()
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }

        let clients = 50
        let exchangesPerConnection = 10
        let stop = LockedBox(false)
        let problems = LockedBox<[String]>([])
        let exchanges = LockedBox(0)
        let group = DispatchGroup()
        for index in 0..<clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var connection = 0
                while !stop.value && connection < 200 {
                    do {
                        let client = try TestConnection.connect(port: proxy.port, timeout: 20)
                        defer { client.close() }
                        for exchange in 0..<exchangesPerConnection {
                            let size = 1000 + (index * 131 + exchange * 97) % 9000
                            let message = [UInt8](
                                repeating: UInt8(truncatingIfNeeded: index &* 31 &+ exchange), count: size)
                            try client.send(message)
                            let echoed = try client.receive(exactly: message.count)
                            if echoed != message {
                                problems.mutate { $0.append("client \(index) connection \(connection): bytes differ") }
                                return
                            }
                            exchanges.mutate { $0 += 1 }
                        }
                        client.shutdownWrite()
                        let rest = Self.readToEnd(client)
                        if case .failed = rest.ending {
                            problems.mutate { $0.append("client \(index) connection \(connection): \(rest.ending)") }
                        }
                        if !rest.bytes.isEmpty {
                            problems.mutate {
                                $0.append(
                                    "client \(index) connection \(connection): ended with \(rest.ending) after \(rest.bytes.count) extra bytes"
                                )
                            }
                        }
                    } catch  where "\(error)".contains("reset") {
                        // Cut by resetConnections: a reset is the honest ending; connect again.
                    } catch {
                        problems.mutate { $0.append("client \(index) connection \(connection): \(error)") }
                        return
                    }
                    connection += 1
                }
            }
        }
        var toggles = 0
        while toggles < 60 {
            usleep(50_000)
            if toggles % 2 == 0 { proxy.goOffline(.blackhole) } else { proxy.goOnline() }
            if toggles % 7 == 3 { proxy.resetConnections() }
            toggles += 1
        }
        proxy.goOnline()
        stop.value = true

        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(exchanges.value >= clients, "only \(exchanges.value) echo exchanges completed")
        #expect(problems.value.isEmpty, "\(problems.value.count) problems, first: \(problems.value.prefix(5))")
    }
}

extension Payload {
    /// The whole payload as one array, for payloads small enough to hold.
    func allBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        forEachBlock { bytes += $0 }
        return bytes
    }
}
