import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Delay and rate measured through the proxy against what the profile asks, with stated tolerances.
///
/// A loaded 2-core machine only ever makes things late, never early, so each check is one-sided: delay never under
/// the profile (-0.5 ms for clock granularity), rate at most 0.5 % over, timed from before the connection so nothing
/// outside the link can make it look faster. How late or slow the machine makes it is not the link's decision: the
/// model's release instants are pinned in virtual time (StreamLinkContractTests, ConstantRateSerializerTests), and
/// the shortfall a busy machine adds is measured by `linkcond-bench`, never asserted here.
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
        let fastest = try #require(samples.min())

        // Both delays, once each: one missing undercuts 100 ms by 40 ms or more; that neither is applied twice is
        // the model's decision, pinned by StreamLinkContractTests' delay-only link.
        #expect(fastest >= 0.0995, "fastest round trip \(fastest) s undercuts the 100 ms profile")
    }

    @Test func deliversTheDownlinkRateNeverFaster() throws {
        let rate = BitRate.mbps(20)
        let size = Int(rate.bitsPerSecond / 8 * 3)
        let blocks = payloadBlocks(size: size, seed: 1)
        let server = try TestServer { connection in
            defer { connection.close() }
            for block in blocks { guard (try? connection.send(block)) != nil else { return } }
            connection.shutdownWrite()
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.downlink.bandwidth = rate
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        // Counting only: a checksum of each byte (`drain`) made the client the bottleneck under a sanitizer.
        var received = 0
        while true {
            let chunk = try client.receive(max: 262_144)
            if chunk.isEmpty { break }
            received += chunk.count
        }
        let achieved = Double(received) * 8 / secondsSince(start)

        #expect(received == size)
        #expect(
            achieved <= rate.bitsPerSecond * 1.005,
            "achieved \(achieved / 1e6) Mbit/s for \(rate.bitsPerSecond / 1e6) asked")
    }

    @Test func deliversTheUplinkRateNeverFaster() throws {
        let rate = BitRate.mbps(8)
        let size = Int(rate.bitsPerSecond / 8 * 2.5)
        let blocks = payloadBlocks(size: size, seed: 2)
        let arrival = LockedBox<(last: Instant?, count: Int)>((nil, 0))
        let server = try TestServer { connection in
            defer { connection.close() }
            while let chunk = try? connection.receive(), !chunk.isEmpty {
                let now = MonotonicClock().now()
                arrival.mutate { $0 = (now, $0.count + chunk.count) }
            }
        }
        defer { server.stop() }
        var profile = Profile.none
        profile.uplink.bandwidth = rate
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        for block in blocks { try client.send(block) }
        client.shutdownWrite()
        let arrived = waitUntil(seconds: 15) { arrival.value.count == size }

        let state = arrival.value
        let elapsed = try #require(state.last) - start
        let achieved = Double(state.count) * 8 / elapsed.seconds
        #expect(arrived, "\(state.count) of \(size) bytes arrived")
        #expect(
            achieved <= rate.bitsPerSecond * 1.005,
            "achieved \(achieved / 1e6) Mbit/s for \(rate.bitsPerSecond / 1e6) asked")
    }

    @Test func aSmallRequestAndAGreedyDownloadShareOneBottleneck() throws {
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

        let small = try TestConnection.connect(port: proxy.port)
        defer { small.close() }
        try small.send(Array("small".utf8))
        let reply = try small.receive(exactly: 2_000)
        let downlink = proxy.status()[0].downlink

        // Both connections, still open, are flows of the one downlink model, so the reply was queued in the FIFO
        // the greedy flow fills; that a FIFO serves it behind at most that queue (256 KiB at 8 Mbit/s is 262 ms)
        // is pinned in virtual time by QueueDisciplineTests.aFIFOMakesAReplyWaitBehindTheBulkFlowsStandingQueue.
        #expect(reply.count == 2_000)
        #expect(downlink.flows == 2, "the downlink carried \(downlink.flows) flows")
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

/// The blocks of a payload, made before a timed transfer so that generating them cannot slow it down.
func payloadBlocks(size: Int, seed: UInt64) -> [[UInt8]] {
    var blocks: [[UInt8]] = []
    Payload(size: size, seed: seed).forEachBlock { blocks.append($0) }
    return blocks
}
