import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The DNS forwarder, over UDP and TCP, against a DNS server on loopback.
@Suite(.serialized)
struct DNSForwarderTests {
    private func forwarder(to server: DNSTestServer, profile: Profile) throws -> ConditionedProxy {
        try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    kind: .dns(upstream: Endpoint(host: "127.0.0.1", port: server.port)))
            ],
            profile: profile)
    }

    private func delayed(_ milliseconds: Int64) -> Profile {
        var profile = Profile.none
        profile.dnsDelay = .milliseconds(milliseconds)
        return profile
    }

    @Test func theReadyLineNamesListenAddressAndUpstream() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: .none)
        defer { proxy.stop() }

        #expect(proxy.listeners[0].readyLine == "ready dns 127.0.0.1:\(proxy.port) 127.0.0.1:\(server.port)")
    }

    @Test(.enabled(if: Dig.path != nil, "dig is not installed (apt-get install dnsutils)"), arguments: [false, true])
    func digGetsTheAnswerAfterTheDNSDelay(tcp: Bool) throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: delayed(300))
        defer { proxy.stop() }

        let through = try Dig.query("app.example.test", port: proxy.port, tcp: tcp)

        #expect(through.answers.count == 1)
        #expect(through.answers.first?.hasPrefix("app.example.test.") == true)
        #expect(through.answers.first?.hasSuffix("192.0.2.53") == true)
        // Never early: the query reached the server at least the delay after dig started, on this process's clock
        // (dig's own query time is stamped by its threads, which a loaded machine can run late). That the delay is
        // paid once, not on the answer too, is the forwarder's decision (for UDP, DNSDelayDirectionTests').
        let forwarded = try #require(server.lastQueryAt.value)
        #expect(
            forwarded - through.launchedAt >= .milliseconds(300), "\(forwarded - through.launchedAt) for 300 ms asked")
    }

    @Test(.enabled(if: Dig.path != nil, "dig is not installed (apt-get install dnsutils)"))
    func digThroughTheHighLatencyDNSProfilePaysThreeSeconds() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: try #require(Profile.builtIn(named: "high-latency-dns")))
        defer { proxy.stop() }

        let through = try Dig.query("slow.example.test", port: proxy.port, seconds: 6)

        #expect(through.answers.count == 1)
        let forwarded = try #require(server.lastQueryAt.value)
        #expect(forwarded - through.launchedAt >= .seconds(3), "\(forwarded - through.launchedAt) for 3 s asked")
    }

    @Test func queriesFromTwoClientsWithTheSameIDGetTheirOwnAnswers() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: delayed(50))
        defer { proxy.stop() }
        let first = try TestDatagramSocket()
        let second = try TestDatagramSocket()
        defer {
            first.close()
            second.close()
        }

        try first.send(Self.query(id: 0x1234, name: "one.test"), to: proxy.port)
        try second.send(Self.query(id: 0x1234, name: "second.test"), to: proxy.port)
        let answers = [first.receive(), second.receive()]

        #expect(answers.map { $0.map { Array($0.bytes[0..<2]) } } == [[0x12, 0x34], [0x12, 0x34]])
        #expect(answers[0]?.bytes.count == Self.query(id: 0, name: "one.test").count + 16)
        #expect(answers[1]?.bytes.count == Self.query(id: 0, name: "second.test").count + 16)
    }

    @Test func pipelinedTCPQueriesAreAllAnsweredInOrder() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: delayed(20))
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { client.close() }

        let ids: [UInt16] = [1, 2, 3, 4, 5]
        try client.send(ids.flatMap { Self.framed(Self.query(id: $0, name: "pipe.test")) })
        var received: [UInt16] = []
        for _ in ids {
            let length = try client.receive(exactly: 2)
            let answer = try client.receive(exactly: Int(length[0]) << 8 | Int(length[1]))
            received.append(UInt16(answer[0]) << 8 | UInt16(answer[1]))
        }

        #expect(received == ids)
    }

    /// A listener's byte counts cover both transports: `dig +tcp` through a forwarder used to leave them at zero.
    @Test func queriesAndAnswersOverTCPAreCountedAsOverUDP() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: delayed(10))
        defer { proxy.stop() }
        let query = Self.query(id: 7, name: "counted.test")
        let datagram = try TestDatagramSocket()
        defer { datagram.close() }
        try datagram.send(query, to: proxy.port)
        let udpAnswer = try #require(datagram.receive())
        let client = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { client.close() }

        try client.send(Self.framed(query))
        let length = try client.receive(exactly: 2)
        let tcpAnswer = try client.receive(exactly: Int(length[0]) << 8 | Int(length[1]))

        let status = proxy.status()[0]
        #expect(status.uplink.bytesDelivered == 2 * query.count)
        #expect(status.downlink.bytesDelivered == udpAnswer.bytes.count + tcpAnswer.count)
    }

    @Test func aTCPQueryWaitsTheDNSDelayOnceAsAUDPQueryDoes() throws {
        // Once is the forwarder's decision, read back from it: the wait it scheduled for the query. (Racing the TCP
        // answer against a UDP query asked half a delay later failed whenever the loop read the TCP query late.)
        // Never early is measured at the server, on this process's clock.
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: delayed(300))
        defer { proxy.stop() }
        let tcp = try TestConnection.connect(port: proxy.port, timeout: 15)
        defer { tcp.close() }

        let sentAt = MonotonicClock().now()
        try tcp.send(Self.framed(Self.query(id: 1, name: "tcp.test")))
        let length = try tcp.receive(exactly: 2)
        let answer = try tcp.receive(exactly: Int(length[0]) << 8 | Int(length[1]))

        #expect(Array(answer[0..<2]) == [0, 1])
        #expect(proxy.lastDNSTCPQueryWaits == [DNSForwarder.queryDirection(proxy.profile).delay])
        #expect(proxy.lastDNSTCPQueryWaits == [.milliseconds(300)])
        let forwarded = try #require(server.lastQueryAt.value)
        #expect(forwarded - sentAt >= .milliseconds(300), "\(forwarded - sentAt) for 300 ms asked")
    }

    @Test func malformedMessagesAreCountedAndAGoodQueryIsStillAnswered() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, profile: .none)
        defer { proxy.stop() }
        let udp = try TestDatagramSocket(timeout: 2)
        defer { udp.close() }

        try udp.send([0xFF, 0x00, 0x13], to: proxy.port)
        try udp.send([], to: proxy.port)
        try udp.send([UInt8](repeating: 0xAB, count: 5000), to: proxy.port)
        let zeroLength = try TestConnection.connect(port: proxy.port, timeout: 2)
        try zeroLength.send([0, 0] + Self.framed([1, 2, 3]))
        zeroLength.close()
        let truncated = try TestConnection.connect(port: proxy.port, timeout: 2)
        try truncated.send([0, 40, 1, 2, 3])
        truncated.close()
        let oversized = try TestConnection.connect(port: proxy.port, timeout: 2)
        try oversized.send([0xFF, 0xFF, 9, 9])
        defer { oversized.close() }
        let deadline = Date().addingTimeInterval(3)
        // Three bad datagrams; TCP: a zero-length and a 3-byte frame, a truncated frame, an oversized length.
        while proxy.status()[0].malformedMessages < 7 && Date() < deadline { usleep(10_000) }

        try udp.send(Self.query(id: 77, name: "after.test"), to: proxy.port)
        let answer = udp.receive()
        #expect(proxy.status()[0].malformedMessages == 7)
        #expect(answer.map { Array($0.bytes[0..<2]) } == [0, 77])
        let tcp = try TestConnection.connect(port: proxy.port, timeout: 2)
        defer { tcp.close() }
        try tcp.send(Self.framed(Self.query(id: 78, name: "after.test")))
        let length = try tcp.receive(exactly: 2)
        let tcpAnswer = try tcp.receive(exactly: Int(length[0]) << 8 | Int(length[1]))
        #expect(Array(tcpAnswer[0..<2]) == [0, 78])
    }

    @Test func uplinkLossDropsUDPQueries() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        var profile = Profile.none
        profile.uplink.loss = Percentage(100)
        let proxy = try forwarder(to: server, profile: profile)
        defer { proxy.stop() }
        let client = try TestDatagramSocket(timeout: 0.3)
        defer { client.close() }

        try client.send(Self.query(id: 9, name: "lost.test"), to: proxy.port)

        #expect(client.receive() == nil)
        #expect(proxy.status()[0].uplink.randomLosses == 1)
    }

    @Test func theSystemResolverIsTheFirstNameserver() throws {
        let path = NSTemporaryDirectory() + "linkcond-resolv-\(UInt32.random(in: 0...UInt32.max)).conf"
        try "# comment\nsearch example\nnameserver 127.0.0.53\nnameserver 10.0.0.1\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }

        #expect(try DNSForwarderSupport.systemResolver(configuration: path) == "127.0.0.53:53")
    }

    /// A query for `name`'s A record with recursion desired.
    static func query(id: UInt16, name: String) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return bytes + [0, 0, 1, 0, 1]
    }

    static func framed(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }
}
