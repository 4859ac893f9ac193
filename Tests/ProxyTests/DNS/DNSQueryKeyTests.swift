import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// UDP queries waiting for their answer are keyed by the client's address, port and query ID.
@Suite(.serialized)
struct DNSQueryKeyTests {
    private func forwarder(to server: DNSTestServer, dnsDelay: Duration) throws -> ConditionedProxy {
        var profile = Profile.none
        profile.dnsDelay = dnsDelay
        return try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    kind: .dns(upstream: Endpoint(host: "127.0.0.1", port: server.port)))
            ],
            profile: profile)
    }

    /// Every datagram `socket` receives until it has been quiet for its timeout, at most `limit`.
    private func receiveAll(_ socket: TestDatagramSocket, limit: Int = 10) -> [[UInt8]] {
        var received: [[UInt8]] = []
        while received.count < limit, let datagram = socket.receive() { received.append(datagram.bytes) }
        return received
    }

    @Test func aClientRetransmittingAQueryWithItsIDStillPendingGetsOneAnswer() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, dnsDelay: .milliseconds(100))
        defer { proxy.stop() }
        let client = try TestDatagramSocket(timeout: 0.6)
        defer { client.close() }
        let query = DNSForwarderTests.query(id: 0x4242, name: "again.test")

        try client.send(query, to: proxy.port)
        try client.send(query, to: proxy.port)
        let answers = receiveAll(client)

        #expect(answers.count == 1, "\(answers.count) answers to one pending query")
        #expect(answers.first.map { Array($0[0..<2]) } == [0x42, 0x42])
    }

    @Test func twoPortsOfOneHostWithTheSameIDEachGetTheirOwnAnswer() throws {
        let server = try DNSTestServer()
        defer { server.stop() }
        let proxy = try forwarder(to: server, dnsDelay: .milliseconds(100))
        defer { proxy.stop() }
        let first = try TestDatagramSocket(timeout: 0.6)
        let second = try TestDatagramSocket(timeout: 0.6)
        defer {
            first.close()
            second.close()
        }

        try first.send(DNSForwarderTests.query(id: 0x0707, name: "first.test"), to: proxy.port)
        try second.send(DNSForwarderTests.query(id: 0x0707, name: "second-port.test"), to: proxy.port)
        try first.send(DNSForwarderTests.query(id: 0x0707, name: "first.test"), to: proxy.port)
        let toFirst = receiveAll(first)
        let toSecond = receiveAll(second)

        #expect(toFirst.count == 1 && toSecond.count == 1, "\(toFirst.count) and \(toSecond.count) answers")
        #expect(toFirst.first?.count == DNSForwarderTests.query(id: 0, name: "first.test").count + 16)
        #expect(toSecond.first?.count == DNSForwarderTests.query(id: 0, name: "second-port.test").count + 16)
        #expect(toSecond.first.map { Array($0[0..<2]) } == [0x07, 0x07])
    }
}
