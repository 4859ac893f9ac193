import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Delay and rate measured through the proxy against what the profile asks, with stated tolerances.
///
/// Tolerances: delay within +3 ms / -0.5 ms of the profile (timer wake-up and scheduling on a loaded 2-core
/// machine only ever add latency); rate within ±3 % over a multi-second transfer.
@Suite(.serialized)
struct LinkAccuracyTests {
    @Test func addsTheProfileDelayInEachDirectionToARoundTrip() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        var profile = Profile.none
        profile.uplink.delay = .milliseconds(40)
        profile.downlink.delay = .milliseconds(60)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        _ = try roundTrip(client)

        var samples: [Double] = []
        for _ in 0..<20 { samples.append(try roundTrip(client)) }
        samples.sort()

        let median = samples[samples.count / 2]
        #expect(median >= 0.0995 && median <= 0.103, "median round trip \(median) s for 100 ms asked")
        #expect(samples.first! >= 0.0995, "fastest round trip \(samples.first!) s undercuts the 100 ms profile")
    }

    @Test func deliversTheDownlinkRateWithinThreePercent() throws {
        let rate = BitRate.mbps(20)
        let seconds = 3.0
        let size = Int(rate.bitsPerSecond / 8 * seconds)
        let server = try TestServer { connection in
            defer { connection.close() }
            try? Payload(size: size, seed: 1).forEachBlock { try connection.send($0) }
            connection.shutdownWrite()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.bandwidth = rate
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        let first = try client.receive(exactly: 1)
        let start = MonotonicClock().now()
        let rest = try client.drain()
        let elapsed = secondsSince(start)

        let achieved = Double(rest.count) * 8 / elapsed
        #expect(first.count + rest.count == size)
        #expect(abs(achieved / rate.bitsPerSecond - 1) < 0.03, "achieved \(achieved / 1e6) Mbit/s for \(rate.bitsPerSecond / 1e6) asked")
    }

    @Test func deliversTheUplinkRateWithinThreePercent() throws {
        let rate = BitRate.mbps(8)
        let size = Int(rate.bitsPerSecond / 8 * 2.5)
        let arrival = LockedBox<(first: Instant?, last: Instant?, count: Int)>((nil, nil, 0))
        let server = try TestServer { connection in
            defer { connection.close() }
            while let chunk = try? connection.receive(), !chunk.isEmpty {
                let now = MonotonicClock().now()
                arrival.mutate { state in
                    if state.first == nil { state.first = now } else { state.count += chunk.count }
                    state.last = now
                }
            }
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.uplink.bandwidth = rate
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port)
        try Payload(size: size, seed: 2).forEachBlock { try client.send($0) }
        client.shutdownWrite()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let last = arrival.value.last, secondsSince(last) > 0.5 { break }
            usleep(20_000)
        }
        client.close()

        let state = arrival.value
        let elapsed = try #require(state.last) - (try #require(state.first))
        let achieved = Double(state.count) * 8 / elapsed.seconds
        #expect(abs(achieved / rate.bitsPerSecond - 1) < 0.03, "achieved \(achieved / 1e6) Mbit/s for \(rate.bitsPerSecond / 1e6) asked")
    }

    @Test func sharesTheBottleneckSoASmallRequestWaitsAtMostAFullQueueBehindAGreedyDownload() throws {
        let server = try TestServer { connection in
            defer { connection.close() }
            guard let request = try? connection.receive(), let first = request.first else { return }
            if first == UInt8(ascii: "G") {
                try? Payload(size: 8 << 20, seed: 3).forEachBlock { try connection.send($0) }
            } else {
                try? connection.send([UInt8](repeating: 7, count: 2_000))
            }
            connection.shutdownWrite()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.bandwidth = .mbps(8)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }
        let greedy = try TestConnection.connect(port: proxy.port)
        defer { greedy.close() }
        try greedy.send(Array("GET".utf8))
        _ = try greedy.receive(exactly: 500_000)

        let start = MonotonicClock().now()
        let small = try TestConnection.connect(port: proxy.port)
        defer { small.close() }
        try small.send(Array("small".utf8))
        let reply = try small.receive(exactly: 2_000)
        let elapsed = secondsSince(start)

        // The two flows share one FIFO bottleneck: the reply waits behind at most a full queue (256 KiB at 8 Mbit/s
        // is 262 ms, the bufferbloat a drop-tail buffer gives), never behind the greedy flow's megabytes.
        let fullQueue = BitRate.mbps(8).transmissionTime(bytes: DirectionProfile.defaultQueue.bytes).seconds
        #expect(reply.count == 2_000)
        #expect(elapsed < fullQueue + 0.15, "a 2 kB reply took \(elapsed) s behind a greedy download at 8 Mbit/s")
    }

    @Test func blackholeAcceptsButForwardsNothing() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        var profile = Profile.none
        profile.fault = .blackhole
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 0.5)
        defer { client.close() }
        try client.send(Array("anyone?".utf8))
        let outcome = Result { try client.receive() }

        guard case .failure(let error) = outcome else {
            Issue.record("a blackholed connection answered: \(outcome)")
            return
        }
        #expect("\(error)".contains("temporarily unavailable"))
    }

    @Test func refuseResetsNewConnections() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        var profile = Profile.none
        profile.fault = .refuse
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 2)
        defer { client.close() }
        let outcome = Result { try client.receive() }

        guard case .failure(let error) = outcome else {
            Issue.record("a refused connection was not reset: \(outcome)")
            return
        }
        #expect("\(error)".contains("reset"))
    }

    private func roundTrip(_ client: TestConnection) throws -> Double {
        let message = [UInt8](repeating: 0x42, count: 64)
        let start = MonotonicClock().now()
        try client.send(message)
        _ = try client.receive(exactly: message.count)
        return secondsSince(start)
    }
}
