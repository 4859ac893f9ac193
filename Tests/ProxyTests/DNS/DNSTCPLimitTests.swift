import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// DNS over TCP against hostile clients: one that trickles a frame byte by byte is closed once idle, and one that
/// pipelines queries faster than `dns.delay` lets them through is read only as fast as they are answered.
@Suite(.serialized)
struct DNSTCPLimitTests {
    private func forwarder(to server: DNSTestServer, dnsDelay: Duration, idle: Duration = .seconds(10)) throws
        -> ConditionedProxy
    {
        var profile = Profile.none
        profile.dnsDelay = dnsDelay
        return try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    kind: .dns(upstream: Endpoint(host: "127.0.0.1", port: server.port)))
            ],
            profile: profile, options: ProxyOptions(dnsTCPIdleTimeout: idle))
    }

    @Test func aClientTricklingAFrameIsClosedOnceIdleButNotBefore() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, dnsDelay: .milliseconds(100), idle: .milliseconds(500))
        defer { proxy.stop() }
        // Before the connect: the forwarder may accept, and start its idle clock, before connect returns here.
        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        let closed = LockedBox<Double?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let outcome = Result { try client.receive() }
            if case .failure(let error) = outcome, "\(error)".contains("temporarily unavailable") {
                // Timed out: still open.
            } else {
                closed.value = secondsSince(start)
            }
            done.signal()
        }

        try client.send([0x01])
        var trickled = 0
        while closed.value == nil && trickled < 400 {
            usleep(50_000)
            if (try? client.send([0x00])) == nil { break }
            trickled += 1
        }
        _ = done.wait(timeout: .now() + 15)

        let after = try #require(closed.value, "the trickling client was never closed")
        // Never early; the trickle outlasts the read's own 10 s time-out, which alone bounds how long the close may
        // take, so a forwarder whose idle clock each byte restarted would leave it open and fail here.
        #expect(after >= 0.6, "closed after \(after) s, before 500 ms idle plus 100 ms dns.delay")
    }

    @Test func aClientPipeliningQueriesFasterThanTheyAreAnsweredIsReadOnlyAsFastAsTheyAreAnswered() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, dnsDelay: .milliseconds(200))
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 30)
        defer { client.close() }
        let count = 2000
        let padding = [UInt8](repeating: 0, count: 480)
        let frames = (0..<count).flatMap { index in
            DNSForwarderTests.framed(DNSForwarderTests.query(id: UInt16(index), name: "pipe.test") + padding)
        }
        let sent = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? client.send(frames)
            sent.signal()
        }

        var ids: [UInt16] = []
        while ids.count < count {
            guard let header = try? client.receive(exactly: 2) else { break }
            let length = Int(header[0]) << 8 | Int(header[1])
            guard let answer = try? client.receive(exactly: length) else { break }
            ids.append(UInt16(answer[0]) << 8 | UInt16(answer[1]))
        }
        _ = sent.wait(timeout: .now() + 5)
        let status = proxy.status()[0]

        #expect(ids == (0..<count).map { UInt16($0) }, "\(ids.count) of \(count) answers, in order: \(ids.prefix(3))…")
        #expect(
            status.streamBufferedPeak <= 512 * 1024, "held \(status.streamBufferedPeak) bytes for one pipelining client"
        )
        #expect(status.streamBufferedBytes == 0)
    }
}
