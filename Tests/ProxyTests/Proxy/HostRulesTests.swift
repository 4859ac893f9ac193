import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `exclude` rules: which destinations they match, and that matched ones bypass the link.
@Suite(.serialized)
struct HostRulesTests {
    @Test(arguments: [
        ("10.0.0.0/8", "10.200.3.4", true), ("10.0.0.0/8", "11.0.0.1", false), ("::1", "::1", true),
        ("fd00::/8", "fd12::5", true), ("fd00::/8", "fe80::1", false), ("127.0.0.0/8", "::ffff:127.0.0.1", true),
        ("api.internal", "API.internal", true), ("api.internal", "x.api.internal", false),
        ("*.internal", "x.api.internal", true), ("*.internal", "internal", true), ("*.internal", "notinternal", false),
    ])
    func matchesHostsDomainsAndNetworks(pattern: String, destination: String, expected: Bool) throws {
        let rule = try #require(HostPattern(parsing: pattern))

        #expect(rule.matches(name: destination) == expected)
    }

    @Test func clearsHostBitsSoEquivalentNetworksAreEqual() {
        #expect(HostPattern(parsing: "10.1.2.3/8") == HostPattern(parsing: "10.0.0.0/8"))
        #expect(HostPattern(parsing: "10.1.2.3/8")?.description == "10.0.0.0/8")
    }

    @Test(arguments: ["10.0.0.0/33", "::1/129", "bad host", "", "a..b", "10.0.0.0/x"])
    func rejectsWhatIsNeitherNameNorAddressNorNetwork(text: String) {
        #expect(HostPattern(parsing: text) == nil)
    }

    /// Under 100 ms each way an excluded destination takes the unconditioned link, and the status counts it there,
    /// while another crosses the shaped link and pays its two round trips.
    @Test func relaysExcludedDestinationsUntouchedAndDelaysOthers() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        var profile = delayProfile(.milliseconds(100))
        profile.exclude = [try #require(HostPattern(parsing: "localhost"))]
        let proxy = try ConditionedProxy.frontEnd(profile: profile)
        defer { proxy.stop() }

        func echoTime(_ request: [UInt8]) throws -> Double {
            let client = try TestConnection.connect(port: proxy.port, timeout: 5)
            defer { client.close() }
            try client.send(SOCKS5Client.greeting())
            _ = try client.receive(exactly: 2)
            let start = MonotonicClock().now()
            try client.send(request)
            guard try SOCKS5Client.readReply(client) == 0 else { throw TestError("connect failed") }
            try client.send([1])
            _ = try client.receive(exactly: 1)
            return secondsSince(start)
        }
        _ = try echoTime(SOCKS5Client.connect(name: "localhost", port: echo.port))
        let afterExcluded = proxy.status()[0]
        let conditioned = try echoTime(SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
        let afterConditioned = proxy.status()[0]

        #expect(afterExcluded.connectionsExcluded == 1)
        #expect(
            afterExcluded.uplink.bytesDelivered == 0 && afterExcluded.downlink.bytesDelivered == 0,
            "the excluded echo crossed the shaped link: \(afterExcluded.uplink.bytesDelivered) bytes up, \(afterExcluded.downlink.bytesDelivered) down"
        )
        #expect(afterConditioned.connectionsAccepted == 2 && afterConditioned.connectionsExcluded == 1)
        #expect(afterConditioned.uplink.bytesDelivered == 1, "\(afterConditioned.uplink.bytesDelivered) bytes up")
        #expect(
            conditioned >= 0.395, "conditioned destination took \(conditioned) s, expected two round trips of 0.2 s")
    }

    @Test func excludesByNetworkFromTheListenerSettings() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.frontEnd(
            profile: delayProfile(.milliseconds(100)),
            settings: ProxyFrontEndSettings(exclude: [try #require(HostPattern(parsing: "127.0.0.0/8"))]))
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { client.close() }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
        try client.send([1])
        _ = try client.receive(exactly: 1)

        #expect(reply == 0x00)
        #expect(
            proxy.status()[0].connectionsExcluded == 1,
            "the connection to an excluded network was not relayed untouched")
        #expect(proxy.status()[0].uplink.bytesDelivered == 0, "the echo to an excluded network crossed the shaped link")
    }
}
