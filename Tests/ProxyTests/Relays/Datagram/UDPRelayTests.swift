import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// End-to-end behaviour of the UDP relay on real loopback sockets.
@Suite(.serialized)
struct UDPRelayTests {

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

    /// Sends `count` datagrams, `datagram(number)` each, to `proxy` in windows of `window`. After each window it waits
    /// until the relay has read every datagram sent (or counted it as dropped by the kernel) and `sink`, if given,
    /// has every datagram the relay delivered: the sender never outruns the relay or the sink, however slow the
    /// machine, so the test sees only the loss the profile asks for.
    private func sendPaced(
        _ count: Int, from client: TestDatagramSocket, to proxy: ConditionedProxy, window: Int,
        sink: TestDatagramServer? = nil, _ datagram: (Int) -> [UInt8]
    ) throws {
        let before = status(proxy).uplink.datagramsEnqueued + status(proxy).uplinkKernelDrops
        for number in 0..<count {
            try client.send(datagram(number), to: proxy.port)
            guard number % window == window - 1 || number == count - 1 else { continue }
            let caughtUp = waitUntil(seconds: 10) {
                let uplink = status(proxy).uplink
                return uplink.datagramsEnqueued + status(proxy).uplinkKernelDrops == before + number + 1
                    && (sink.map { $0.datagrams.count == uplink.datagramsDelivered } ?? true)
            }
            guard caughtUp else {
                throw TestError("after \(number + 1) datagrams the relay or the sink has not accounted for every one")
            }
        }
    }

    @Test func echoKeepsEveryDatagramWhole() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let (proxy, client) = try relay(to: echo)
        defer {
            client.close()
            proxy.stop()
        }

        for size in [1, 100, 1472, 9000, 60_000] {
            let datagram = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) }
            try client.send(datagram, to: proxy.port)
            let answer = try #require(client.receive())
            #expect(answer.bytes == datagram)
            #expect(answer.port == proxy.port)
        }
    }

    /// With `appliedLater`, the relay starts under `none`, whose datagrams need no stamps, and the delay comes
    /// with a later `apply`.
    @Test(arguments: [false, true])
    func aDatagramThatWaitedInTheKernelWhileTheLoopWasHeldCountsItsDelayFromItsArrival(appliedLater: Bool) throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        var profile = Profile.none
        profile.uplink.delay = .milliseconds(100)
        let (proxy, client) = try relay(to: echo, profile: appliedLater ? .none : profile)
        defer {
            client.close()
            proxy.stop()
        }
        if appliedLater { proxy.apply(profile) }
        // The kernel turns receive stamps on for the whole machine some time after the first socket asks (a
        // deferred static key); a round trip through the delay first makes sure they are on.
        try client.send([0], to: proxy.port)
        #expect(client.receive()?.bytes == [0])

        let release = proxy.holdLoop()
        try client.send([1], to: proxy.port)
        usleep(400_000)
        release()

        #expect(client.receive()?.bytes == [1])
        let lateness = status(proxy).uplinkLateness
        // Arrived while the loop was held, due 100 ms later, read and sent at least 400 ms after it arrived.
        #expect(lateness.samples == 2)
        #expect(lateness.maximum >= .milliseconds(250), "\(lateness.maximum)")
    }

    @Test func everyDatagramOfABurstThatWaitedInTheKernelCountsFromItsOwnArrival() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        var profile = Profile.none
        profile.uplink.delay = .seconds(1)
        let (proxy, client) = try relay(to: echo, profile: profile)
        defer {
            client.close()
            proxy.stop()
        }
        try client.send([0], to: proxy.port)
        #expect(client.receive()?.bytes == [0])

        let release = proxy.holdLoop()
        for byte: UInt8 in 1...3 { try client.send([byte], to: proxy.port) }
        usleep(1_500_000)
        release()
        let first = client.receive()
        let delivered = status(proxy).uplink.datagramsDelivered

        // All three were due before the loop ran again, so they leave in the pass that sends the first; counted
        // from the read, the second and third would wait another second.
        #expect(first?.bytes == [1])
        #expect(delivered == 4)
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

    @Test func anIdleFlowIsForgottenNoEarlierThanTheTimeoutAndTheNextDatagramOpensANewOne() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let timeout = 0.2
        let (proxy, client) = try relay(to: echo, options: ProxyOptions(udpIdleTimeout: .milliseconds(200)))
        defer {
            client.close()
            proxy.stop()
        }

        let start = MonotonicClock().now()
        try client.send([1], to: proxy.port)
        _ = client.receive()
        waitUntil(seconds: 5) { status(proxy).activeConnections == 0 }
        let forgottenAfter = secondsSince(start)
        try client.send([2], to: proxy.port)
        _ = client.receive()

        #expect(forgottenAfter >= timeout, "forgotten \(forgottenAfter) s after the last datagram")
        #expect(status(proxy).connectionsAccepted == 2)
        #expect(echo.sourcePorts.count == 2)
    }

    @Test func aFlowWithTrafficOutlivesTheIdleTimeout() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let timeout = 0.3
        let (proxy, client) = try relay(to: echo, options: ProxyOptions(udpIdleTimeout: .milliseconds(300)))
        defer {
            client.close()
            proxy.stop()
        }

        // Round trips back to back for twice the timeout; the longest gap between two shows whether the test thread
        // itself was kept off the CPU for a whole timeout, which would make the relay right to forget the flow.
        let start = MonotonicClock().now()
        var last = start
        var longestGap = 0.0
        while secondsSince(start) < 2 * timeout {
            longestGap = max(longestGap, secondsSince(last))
            last = MonotonicClock().now()
            try client.send([7], to: proxy.port)
            _ = client.receive()
        }

        #expect(
            status(proxy).connectionsAccepted == 1 || longestGap >= timeout / 2,
            "the flow was forgotten although the longest gap between datagrams was \(longestGap) s")
        #expect(echo.sourcePorts.count == status(proxy).connectionsAccepted)
    }

    /// A third client is refused and counted, whether the limit is per client host (all three share 127.0.0.1) or
    /// for the whole listener.
    @Test(arguments: [
        ("per client", ProxyOptions(udpFlowsPerClient: 2)), ("per listener", ProxyOptions(udpFlowLimit: 2)),
    ])
    func flowsBeyondTheLimitAreRefused(limit: String, options: ProxyOptions) throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(of: echo.port, profile: .none, options: options)
        defer { proxy.stop() }
        let clients = try (0..<3).map { _ in try TestDatagramSocket(timeout: 2) }
        defer { for client in clients { client.close() } }

        for client in clients { try client.send([1], to: proxy.port) }
        let answered = clients.filter { $0.receive() != nil }.count

        #expect(answered == 2, "limit \(limit)")
        #expect(status(proxy).connectionsAccepted == 2, "limit \(limit)")
        #expect(status(proxy).connectionsRefused == 1, "limit \(limit)")
    }

    @Test func randomLossRateLiesWithinTheBinomialInterval() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.loss = Percentage(10)
        profile.seed = 2024
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer {
            client.close()
            proxy.stop()
        }

        try sendPaced(5000, from: client, to: proxy, window: 50, sink: sink) {
            [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: 64)
        }
        let uplink = status(proxy).uplink
        let trials = uplink.datagramsEnqueued
        let received = sink.datagrams.count

        #expect(status(proxy).uplinkKernelDrops == 0)
        #expect(trials == 5000)
        #expect(uplink.randomLosses == trials - received)
        #expect(
            withinInterval(trials - received, trials: trials, probability: 0.1),
            "lost \(trials - received) of \(trials)")
    }

    @Test func aSmallQueueUnderARateCapDropsAtTheTailAndCountsIt() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.bandwidth = .mbps(1)
        profile.uplink.queue = ByteCount(bytes: 15_000)
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer {
            client.close()
            proxy.stop()
        }

        // 200 datagrams wait for the relay together: the 12-datagram queue takes what fits, the idle link's burst
        // credit sends one at once and one more is on the wire; the rest is dropped. Reading them takes time (ASan
        // took over 10 ms), and each 9.6 ms the link sends one datagram and the queue takes one more.
        let release = proxy.holdLoop()
        for _ in 0..<200 { try client.send([UInt8](repeating: 9, count: 1200), to: proxy.port) }
        let released = MonotonicClock().now()
        release()
        waitUntil(seconds: 10) { status(proxy).uplink.datagramsEnqueued == 200 }
        let sentWhileReading = Int((MonotonicClock().now() - released).seconds / 0.0096)
        waitUntil(seconds: 10) { status(proxy).uplink.queuedBytes == 0 && status(proxy).uplink.inFlightBytes == 0 }
        waitUntil(seconds: 10) { sink.datagrams.count == status(proxy).uplink.datagramsDelivered }
        let uplink = status(proxy).uplink

        #expect(uplink.datagramsEnqueued == 200)
        #expect(uplink.tailDrops >= 200 - 15_000 / 1200 - 2 - sentWhileReading)
        #expect(uplink.tailDrops <= 200 - 15_000 / 1200)
        #expect(sink.datagrams.count == uplink.datagramsEnqueued - uplink.tailDrops)
    }

    @Test func aFloodOnADelayOnlyLinkIsBoundedByTheQueueAndItsDropsShow() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.delay = .seconds(20)
        let queue = profile.uplink.queue.bytes
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer {
            client.close()
            proxy.stop()
        }

        var mostHeld = 0
        for window in 0..<40 {
            try sendPaced(50, from: client, to: proxy, window: 50) { _ in
                [UInt8](repeating: UInt8(window), count: 60_000)
            }
            let uplink = status(proxy).uplink
            mostHeld = max(mostHeld, uplink.queuedBytes + uplink.inFlightBytes)
        }
        let uplink = status(proxy).uplink
        let reported = proxy.report().listeners[0].uplink

        #expect(mostHeld <= queue, "the relay held \(mostHeld) bytes for a \(queue)-byte queue")
        #expect(uplink.datagramsEnqueued == 2000)
        #expect(uplink.tailDrops == 2000 - queue / 60_000)
        #expect(reported.datagramsDropped == uplink.tailDrops)
        #expect(reported.inFlightBytes == queue / 60_000 * 60_000)
    }

    @Test(
        .enabled(
            if: relayCanEnlargeItsReceiveBuffer,
            "needs root (SO_RCVBUFFORCE) or net.core.rmem_max of at least 4 MiB for the relay's receive buffer"))
    func aBurstWhileTheLoopIsBusyWaitsInTheKernelInsteadOfBeingDropped() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        let (proxy, client) = try relay(to: sink)
        defer {
            client.close()
            proxy.stop()
        }

        // 2 MB in 1000 datagrams: ten times what the kernel's default receive buffer holds.
        let release = proxy.holdLoop()
        for number in 0..<1000 {
            try client.send([UInt8](repeating: UInt8(truncatingIfNeeded: number), count: 2000), to: proxy.port)
        }
        release()
        waitUntil(seconds: 10) { status(proxy).uplink.datagramsEnqueued + status(proxy).uplinkKernelDrops == 1000 }

        #expect(status(proxy).uplink.datagramsEnqueued == 1000)
        #expect(status(proxy).uplinkKernelDrops == 0)
    }

    @Test func datagramsTheKernelDropsAtAFullReceiveBufferAreCounted() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        let (proxy, client) = try relay(to: sink)
        defer {
            client.close()
            proxy.stop()
        }

        // 40 MB while the loop is held: far more than even the enlarged receive buffer holds.
        let release = proxy.holdLoop()
        var sent = 0
        for _ in 0..<20_000 {
            try client.send([UInt8](repeating: 5, count: 2000), to: proxy.port)
            sent += 1
        }
        release()
        // The kernel reports its running drop count with the next datagram it queues, so keep sending one at a
        // time until the relay's account of every datagram sent is complete.
        waitUntil(seconds: 10) {
            let complete = status(proxy).uplink.datagramsEnqueued + status(proxy).uplinkKernelDrops == sent
            if !complete, (try? client.send([6], to: proxy.port)) != nil { sent += 1 }
            return complete
        }
        let uplink = status(proxy).uplink
        let kernelDrops = status(proxy).uplinkKernelDrops

        #expect(kernelDrops > 0)
        #expect(uplink.datagramsEnqueued + kernelDrops == sent)
        #expect(proxy.report().listeners[0].uplink.kernelDrops == kernelDrops)
    }

    @Test func duplicationDeliversCopiesAndCountsThem() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.duplicate = Percentage(20)
        profile.seed = 5
        let (proxy, client) = try relay(to: sink, profile: profile)
        defer {
            client.close()
            proxy.stop()
        }

        try sendPaced(1000, from: client, to: proxy, window: 50, sink: sink) { [UInt8(truncatingIfNeeded: $0)] }
        let uplink = status(proxy).uplink

        #expect(uplink.datagramsEnqueued == 1000)
        #expect(sink.datagrams.count == uplink.datagramsEnqueued + uplink.duplicates)
        #expect(withinInterval(uplink.duplicates, trials: uplink.datagramsEnqueued, probability: 0.2))
    }

    @Test func resetForgetsEveryFlowAndAppliedProfilesTakeEffect() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let (proxy, client) = try relay(to: echo)
        defer {
            client.close()
            proxy.stop()
        }
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
        // Held 250 ms from its arrival: due after 150 ms it leaves at least 100 ms late; a delay applied twice
        // would make it due after 300 ms, so less late than that.
        let release = proxy.holdLoop()
        try client.send([3], to: proxy.port)
        usleep(250_000)
        release()
        let held = client.receive()

        #expect(answer?.bytes == [2])
        #expect(elapsed >= 0.15, "round trip \(elapsed) s for 150 ms asked")
        #expect(held?.bytes == [3])
        #expect(status(proxy).uplinkLateness.maximum >= .milliseconds(100), "\(status(proxy).uplinkLateness)")
        #expect(echo.sourcePorts.count == 2)
    }

    @Test func switchingBetweenPassThroughAndADelayWhileDatagramsFlowDeliversEachOnce() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        let (proxy, client) = try relay(to: sink)
        defer {
            client.close()
            proxy.stop()
        }
        // Room for every datagram in propagation under both profiles: the sender waits for the relay's reads, not
        // its deliveries, and a switch keeps what is in propagation counted against the new profile's queue.
        var passThrough = Profile.none
        passThrough.uplink.queue = ByteCount(bytes: 16 << 20)
        var delayed = passThrough
        delayed.uplink.delay = .milliseconds(5)
        let rounds = 10
        let perRound = 200

        for round in 0..<rounds {
            proxy.apply(round % 2 == 0 ? passThrough : delayed)
            try sendPaced(perRound, from: client, to: proxy, window: 50, sink: sink) { numbered(round * perRound + $0) }
        }

        #expect(waitUntil(seconds: 10) { sink.datagrams.count >= rounds * perRound })
        let numbers = sink.datagrams.map { Int($0[0]) << 8 | Int($0[1]) }
        #expect(numbers.count == rounds * perRound)
        let missing = Set(0..<rounds * perRound).subtracting(numbers).sorted()
        #expect(missing.isEmpty, "\(missing.count) missing, from \(missing.prefix(10)) \(status(proxy).uplink)")
        let uplink = status(proxy).uplink
        #expect(uplink.datagramsEnqueued == rounds * perRound && uplink.datagramsDelivered == rounds * perRound)
        #expect(uplink.tailDrops == 0 && uplink.inFlightBytes == 0)
    }

    /// Datagram `number` of a burst: its number in the first two bytes, then filler up to a size that changes every
    /// 20 datagrams, so runs of equal sizes (which the relay may send as one segmented message) alternate with changes.
    private func numbered(_ number: Int) -> [UInt8] {
        [UInt8(number >> 8), UInt8(number & 0xFF)]
            + [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: (number / 20 * 389) % 3000)
    }

    @Test(
        .enabled(
            if: relayCanEnlargeItsReceiveBuffer,
            "needs root (SO_RCVBUFFORCE) or net.core.rmem_max of at least 4 MiB for the relay's receive buffer"))
    func aBurstReadAndSentInBatchesReachesTheUpstreamWholeAndInOrder() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        let (proxy, client) = try relay(to: sink)
        defer {
            client.close()
            proxy.stop()
        }
        let sent = (0..<300).map(numbered)

        // Held, so the relay finds the whole burst waiting and reads and sends it in batches.
        let release = proxy.holdLoop()
        for bytes in sent { try client.send(bytes, to: proxy.port) }
        release()
        waitUntil(seconds: 10) { sink.datagrams.count == sent.count }

        #expect(sink.datagrams == sent)
        #expect(status(proxy).uplinkKernelDrops == 0)
    }

    @Test(
        .enabled(
            if: relayCanEnlargeItsReceiveBuffer,
            "needs root (SO_RCVBUFFORCE) or net.core.rmem_max of at least 4 MiB for the relay's receive buffer"))
    func echoesOfBurstsFromTwoClientsReturnToEachClientWholeAndInOrder() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let clients = try (0..<2).map { _ in try TestDatagramSocket() }
        defer { for client in clients { client.close() } }
        let sent = (0..<100).map(numbered)

        let release = proxy.holdLoop()
        for bytes in sent {
            for client in clients { try client.send(bytes, to: proxy.port) }
        }
        release()
        let answers = clients.map { client in (0..<sent.count).compactMap { _ in client.receive()?.bytes } }

        #expect(answers[0] == sent)
        #expect(answers[1] == sent)
    }

    @Test func aDelayedBurstReleasedAtOnceArrivesWholeAndInOrder() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var delayed = Profile.none
        delayed.uplink.delay = .milliseconds(50)
        let (proxy, client) = try relay(to: sink, profile: delayed)
        defer {
            client.close()
            proxy.stop()
        }
        let sent = (0..<100).map(numbered)

        try sendPaced(sent.count, from: client, to: proxy, window: 50) { sent[$0] }
        waitUntil(seconds: 10) { sink.datagrams.count == sent.count }

        #expect(sink.datagrams == sent)
        #expect(status(proxy).uplinkKernelDrops == 0)
    }
}

/// Whether the relay gets the receive buffer it asks for: as root (SO_RCVBUFFORCE), or when net.core.rmem_max allows it.
let relayCanEnlargeItsReceiveBuffer: Bool = {
    if geteuid() == 0 { return true }
    let limit =
        (try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8))
        .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    return limit >= Int(UDPListener.receiveBufferBytes)
}()

/// Whether `observed` successes of `trials` lie within the binomial 99 % interval around `probability`.
func withinInterval(_ observed: Int, trials: Int, probability: Double) -> Bool {
    let spread = 2.576 * (Double(trials) * probability * (1 - probability)).squareRoot()
    return abs(Double(observed) - Double(trials) * probability) <= spread
}
