import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// End-to-end behaviour of the UDP relay on real loopback sockets.
@Suite(.serialized)
struct UDPRelayTests {
    /// Waits until `condition` holds, polling every 10 ms for at most `seconds`.
    private func wait(seconds: Double, until condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() && Date() < deadline { usleep(10_000) }
    }

    private func status(_ proxy: ConditionedProxy) -> ListenerStatus { proxy.status()[0] }

    /// A UDP relay on 127.0.0.1 in front of `server`, and one client socket; the caller closes the client, then stops
    /// the relay.
    private func relay(
        to server: TestDatagramServer, profile: Profile = .none, options: ProxyOptions = ProxyOptions()
    ) throws -> (proxy: ConditionedProxy, client: TestDatagramSocket) {
        let proxy = try ConditionedProxy.udpInFront(of: server.port, profile: profile, options: options)
        do {
            return (proxy, try TestDatagramSocket())
        } catch {
            proxy.stop()
            throw error
        }
    }

    /// Sends `count` datagrams, `datagram(number)` each, to `proxy`, pausing 1 ms after every `burst` of them.
    private func send(
        _ count: Int, from client: TestDatagramSocket, to proxy: ConditionedProxy, burst: Int,
        _ datagram: (Int) -> [UInt8]
    ) throws {
        for number in 0..<count {
            try client.send(datagram(number), to: proxy.port)
            if number % burst == burst - 1 { usleep(1000) }
        }
    }

    @Test func echoKeepsEveryDatagramWhole() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let (proxy, client) = try relay(to: echo)
        defer { client.close(); proxy.stop() }

        for size in [1, 100, 1472, 9000, 60_000] {
            let datagram = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) }
            try client.send(datagram, to: proxy.port)
            let answer = try #require(client.receive())
            #expect(answer.bytes == datagram)
            #expect(answer.port == proxy.port)
        }
    }

    @Test func eachClientAddressGetsItsOwnFlow() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let clients = try (0..<3).map { _ in try TestDatagramSocket() }
        defer { for client in clients { client.close() } }

        for (number, client) in clients.enumerated() {
            try client.send(Array("client \(number)".utf8), to: proxy.port)
        }
        let answers = clients.map { $0.receive().map { String(decoding: $0.bytes, as: UTF8.self) } }

        #expect(answers == ["client 0", "client 1", "client 2"])
        #expect(echo.sourcePorts.count == 3)
        #expect(status(proxy).activeConnections == 3)
    }

    @Test func anIdleFlowIsForgottenAndTheNextDatagramOpensANewOne() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let (proxy, client) = try relay(to: echo, options: ProxyOptions(udpIdleTimeout: .milliseconds(200)))
        defer { client.close(); proxy.stop() }

        try client.send([1], to: proxy.port)
        _ = client.receive()
        #expect(status(proxy).activeConnections == 1)
        wait(seconds: 2) { status(proxy).activeConnections == 0 }
        #expect(status(proxy).activeConnections == 0)
        try client.send([2], to: proxy.port)
        _ = client.receive()

        #expect(status(proxy).connectionsAccepted == 2)
        #expect(echo.sourcePorts.count == 2)
    }

    @Test func aFlowWithTrafficOutlivesTheIdleTimeout() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let (proxy, client) = try relay(to: echo, options: ProxyOptions(udpIdleTimeout: .milliseconds(300)))
        defer { client.close(); proxy.stop() }

        for _ in 0..<8 {
            try client.send([7], to: proxy.port)
            _ = client.receive()
            usleep(100_000)
        }

        #expect(status(proxy).connectionsAccepted == 1)
        #expect(echo.sourcePorts.count == 1)
    }

    @Test func flowsBeyondTheLimitAreRefused() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(of: echo.port, profile: .none, options: ProxyOptions(udpFlowsPerClient: 2))
        defer { proxy.stop() }
        let clients = try (0..<3).map { _ in try TestDatagramSocket(timeout: 0.3) }
        defer { for client in clients { client.close() } }

        for client in clients { try client.send([1], to: proxy.port) }
        let answered = clients.filter { $0.receive() != nil }.count

        #expect(answered == 2)
        #expect(status(proxy).connectionsRefused == 1)
    }

    @Test func randomLossRateLiesWithinTheBinomialInterval() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.loss = Percentage(10)
        profile.seed = 2024
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer { client.close(); proxy.stop() }

        try send(5000, from: client, to: proxy, burst: 50) { [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: 64) }
        wait(seconds: 5) { status(proxy).uplink.datagramsDelivered == sink.datagrams.count && status(proxy).uplink.datagramsEnqueued == 5000 }
        let uplink = status(proxy).uplink
        let trials = uplink.datagramsEnqueued
        let received = sink.datagrams.count
        let spread = 2.576 * (Double(trials) * 0.1 * 0.9).squareRoot()

        #expect(trials >= 4900)
        #expect(uplink.randomLosses == trials - received)
        #expect(abs(Double(trials - received) - Double(trials) * 0.1) <= spread,
                "lost \(trials - received) of \(trials)")
    }

    @Test func aSmallQueueUnderARateCapDropsAtTheTailAndCountsIt() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.bandwidth = .mbps(1)
        profile.uplink.queue = ByteCount(bytes: 15_000)
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer { client.close(); proxy.stop() }

        // 200 datagrams in about 20 ms, ten times the rate: the 12-datagram queue overflows.
        try send(200, from: client, to: proxy, burst: 10) { _ in [UInt8](repeating: 9, count: 1200) }
        wait(seconds: 3) { status(proxy).uplink.datagramsEnqueued == 200 }
        wait(seconds: 3) { status(proxy).uplink.queuedBytes == 0 && status(proxy).uplink.inFlightBytes == 0 }
        wait(seconds: 1) { sink.datagrams.count == status(proxy).uplink.datagramsDelivered }
        let uplink = status(proxy).uplink

        #expect(uplink.datagramsEnqueued == 200)
        #expect(uplink.tailDrops > 100)
        #expect(sink.datagrams.count == uplink.datagramsEnqueued - uplink.tailDrops)
    }

    @Test func duplicationDeliversCopiesAndCountsThem() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.duplicate = Percentage(20)
        profile.seed = 5
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer { client.close(); proxy.stop() }

        try send(1000, from: client, to: proxy, burst: 50) { [UInt8(truncatingIfNeeded: $0)] }
        wait(seconds: 3) { sink.datagrams.count == status(proxy).uplink.datagramsDelivered && status(proxy).uplink.datagramsEnqueued == 1000 }
        let uplink = status(proxy).uplink

        #expect(sink.datagrams.count == uplink.datagramsEnqueued + uplink.duplicates)
        #expect(withinInterval(uplink.duplicates, trials: uplink.datagramsEnqueued, probability: 0.2))
    }

    @Test func resetForgetsEveryFlowAndAppliedProfilesTakeEffect() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let (proxy, client) = try relay(to: echo)
        defer { client.close(); proxy.stop() }
        try client.send([1], to: proxy.port)
        _ = client.receive()

        proxy.resetConnections()
        #expect(status(proxy).activeConnections == 0)
        var delayed = Profile.none
        delayed.uplink.delay = .milliseconds(150)
        proxy.apply(delayed)
        let start = MonotonicClock().now()
        try client.send([2], to: proxy.port)
        let answer = client.receive()
        let elapsed = secondsSince(start)

        #expect(answer?.bytes == [2])
        #expect(elapsed >= 0.15 && elapsed < 0.25, "round trip \(elapsed) s")
        #expect(echo.sourcePorts.count == 2)
    }
}

/// Whether `observed` successes of `trials` lie within the binomial 99 % interval around `probability`.
func withinInterval(_ observed: Int, trials: Int, probability: Double) -> Bool {
    let spread = 2.576 * (Double(trials) * probability * (1 - probability)).squareRoot()
    return abs(Double(observed) - Double(trials) * probability) <= spread
}
