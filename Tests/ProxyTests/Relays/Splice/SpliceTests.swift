import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The relay's splice path: a direction with nothing to shape moves its bytes with splice(2), and a profile switch
/// in either direction mid-stream loses and reorders nothing. The tests assert what the relay decided (its
/// `bytesSpliced` counter), never how fast it went.
@Suite(.serialized)
struct SpliceTests {
    private func downlink(_ proxy: ConditionedProxy) -> LinkCounters { proxy.status()[0].downlink }

    /// Downloads `payload` through a proxy under `profile` (the client half-closes first), then runs `check` with
    /// what arrived and the proxy, still running, for its counters.
    private func download(
        _ payload: Payload, under profile: Profile,
        _ check: (_ received: (count: Int, checksum: UInt64), _ proxy: ConditionedProxy) throws -> Void
    ) throws {
        let server = try TestServer.sending(payload)
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: profile)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        client.shutdownWrite()
        let received = try client.drain()
        client.close()
        try check(received, proxy)
    }

    @Test func anUnshapedDirectionMovesEveryByteBySplice() throws {
        let payload = Payload(size: 8 << 20, seed: 0x5A1CE)

        try download(payload, under: .none) { received, proxy in
            #expect(received.count == payload.size)
            #expect(received.checksum == payload.digest.value)
            #expect(downlink(proxy).bytesSpliced == payload.size)
        }
    }

    @Test func shortMessagesCrossUnshapedByOneCopyWithoutTakingAPipe() throws {
        let relay = try EchoRelay(profile: .none)
        defer { relay.close() }
        let (proxy, client) = (relay.proxy, relay.client)

        var echoed: [[UInt8]] = []
        for round in 0..<20 {
            try client.send([UInt8](repeating: UInt8(round), count: 100))
            echoed.append(try client.receive(exactly: 100))
        }

        #expect(echoed == (0..<20).map { [UInt8](repeating: UInt8($0), count: 100) })
        #expect(proxy.report().splicePipesKept == 0, "a pipe was taken for 100-byte messages")
        #expect(downlink(proxy).bytesSpliced == 2000)
    }

    @Test func aLongBurstGoesThroughThePipe() throws {
        let payload = Payload(size: 4 << 20, seed: 0xB0125)

        try download(payload, under: .none) { received, proxy in
            #expect(received.checksum == payload.digest.value)
            #expect((proxy.report().splicePipesKept ?? 0) >= 1, "no pipe was ever taken for 4 MiB")
        }
    }

    @Test func aShortMessageAndTheEndOfStreamBehindItBothCross() throws {
        let server = try TestServer { connection in
            defer { connection.close() }
            guard let first = try? connection.receive(exactly: 1) else { return }
            try? connection.send(first)
            let rest = try? connection.drain()
            try? connection.send(Array("got \(rest?.count ?? -1) bytes".utf8))
            connection.shutdownWrite()
        }
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 30)
        defer { client.close() }
        try client.send([1])
        _ = try client.receive(exactly: 1)

        try client.send([UInt8](repeating: 2, count: 10))
        client.shutdownWrite()
        var reply: [UInt8] = []
        while case let chunk = try client.receive(), !chunk.isEmpty { reply += chunk }

        #expect(String(decoding: reply, as: UTF8.self) == "got 10 bytes")
    }

    @Test func aDelayInEitherDirectionKeepsBothOnTheCopyingPath() throws {
        var profile = Profile.none
        profile.uplink.delay = .milliseconds(1)
        let payload = Payload(size: 2 << 20, seed: 0xDE1A7)

        try download(payload, under: profile) { received, proxy in
            #expect(received.count == payload.size)
            #expect(received.checksum == payload.digest.value)
            // The downlink itself has no delay, but its ACKs would cross the delayed uplink: the model must see it.
            #expect(downlink(proxy).bytesSpliced == 0)
            #expect(proxy.status()[0].uplink.bytesSpliced == 0)
        }
    }

    @Test func switchingToAShapedProfileAndBackMidStreamLosesAndReordersNothing() throws {
        let payload = Payload(size: 24 << 20, seed: 0x5717C4)
        let server = try TestServer.sending(payload)
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        defer { client.close() }
        client.shutdownWrite()

        // The client reads a first part, then stops reading, so the proxy's pipe and buffers fill.
        var digest = StreamDigest()
        try client.receive(until: 4 << 20, into: &digest)
        try waitUntilDeliveriesSettle(proxy)
        let splicedBeforeSwitch = downlink(proxy).bytesSpliced

        var shaped = Profile.none
        shaped.downlink.delay = .milliseconds(2)
        shaped.downlink.bandwidth = BitRate(bitsPerSecond: 2_000_000_000)
        proxy.apply(shaped)
        let splicedAtSwitch = downlink(proxy).bytesSpliced
        try client.receive(until: 12 << 20, into: &digest)
        let splicedWhileShaped = downlink(proxy).bytesSpliced

        proxy.apply(.none)
        try client.drain(into: &digest)
        let splicedAtEnd = downlink(proxy).bytesSpliced

        #expect(digest.count == payload.size)
        #expect(digest.value == payload.digest.value)
        #expect(splicedBeforeSwitch > 0)
        #expect(splicedAtSwitch == splicedBeforeSwitch)
        #expect(splicedWhileShaped == splicedAtSwitch)
        #expect(splicedAtEnd > splicedWhileShaped)
    }

    @Test func aFaultSetMidStreamLeavesTheSplicePathAndCutsTheStream() throws {
        let payload = Payload(size: 24 << 20, seed: 0xC07)
        let server = try TestServer.sending(payload)
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        defer { client.close() }
        client.shutdownWrite()
        var digest = StreamDigest()
        try client.receive(until: 4 << 20, into: &digest)
        try waitUntilDeliveriesSettle(proxy)
        let splicedBeforeFault = downlink(proxy).bytesSpliced

        proxy.apply(try Profile(parsing: "downlink.cut.after = 1 MiB\ndownlink.cut.mode = close"))
        try? client.drain(into: &digest)

        #expect(splicedBeforeFault > 0)
        #expect(downlink(proxy).bytesSpliced == splicedBeforeFault)
        #expect(digest.count < payload.size, "the cut let all \(digest.count) bytes through")
    }

    /// Waits, within a bound, until the proxy's downlink has delivered nothing new for a while: the client's
    /// receive buffer is full and the rest waits in the proxy and the upstream's socket.
    private func waitUntilDeliveriesSettle(_ proxy: ConditionedProxy) throws {
        let deadline = Date().addingTimeInterval(20)
        var last = downlink(proxy).bytesDelivered
        var stableSince = Date()
        while Date() < deadline {
            usleep(20_000)
            let now = downlink(proxy).bytesDelivered
            if now != last {
                last = now
                stableSince = Date()
            } else if Date().timeIntervalSince(stableSince) > 0.2 {
                return
            }
        }
        throw TestError("the downlink kept delivering for 20 s while the client did not read")
    }
}
