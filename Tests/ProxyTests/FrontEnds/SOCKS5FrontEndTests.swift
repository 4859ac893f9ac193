import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The SOCKS5 front end (RFC 1928, RFC 1929) on real loopback sockets, byte by byte and with curl.
@Suite(.serialized)
struct SOCKS5FrontEndTests {
    @Test func relaysAConnectToAnIPv4Destination() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
        try client.send(Array("hello".utf8))

        #expect(reply == 0x00)
        #expect(try client.receive(exactly: 5) == Array("hello".utf8))
    }

    @Test func relaysAConnectToIPv6Loopback() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let ipv6Echo = try ConditionedProxy.ipv6Echo(inFrontOf: echo)
        defer { ipv6Echo.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv6: SOCKS5Client.loopbackIPv6, port: ipv6Echo.port))
        try client.send(Array("over six".utf8))

        #expect(reply == 0x00)
        #expect(try client.receive(exactly: 8) == Array("over six".utf8))
    }

    @Test func resolvesADomainNameDestination() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(name: "localhost", port: echo.port))
        try client.send([7, 8, 9])

        #expect(reply == 0x00)
        #expect(try client.receive(exactly: 3) == [7, 8, 9])
    }

    @Test func keepsBytesPipelinedAfterTheRequest() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(profile: delayProfile(.milliseconds(20)))
        defer {
            client.close()
            proxy.stop()
        }
        let pipelined = [UInt8](repeating: 0x2A, count: 3000) + Array("end".utf8)

        try client.send(
            SOCKS5Client.greeting() + SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port) + pipelined)
        let method = try client.receive(exactly: 2)
        let reply = try SOCKS5Client.readReply(client)

        #expect(method == [0x05, 0x00])
        #expect(reply == 0x00)
        #expect(try client.receive(exactly: pipelined.count) == pipelined)
    }

    @Test func repliesConnectionRefusedForAPortNobodyListensOn() throws {
        let closed = try TestServer { $0.close() }
        let port = closed.port
        closed.stop()
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: port))

        #expect(reply == 0x05)
        #expect(client.readUntilClosed().isEmpty)
    }

    @Test func repliesHostUnreachableForANameThatDoesNotResolve() throws {
        let (proxy, client) = try connectedFrontEnd(timeout: 10)
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(name: "nonexistent.invalid", port: 80))

        #expect(reply == 0x04)
    }

    @Test(arguments: [UInt8(0x02), 0x03, 0x09])
    func repliesCommandNotSupportedForAnythingButConnect(command: UInt8) throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: 80, command: command))

        #expect(reply == 0x07)
    }

    @Test func repliesAddressTypeNotSupportedForAnUnknownAddressType() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(client, request: [0x05, 0x01, 0x00, 0x07, 1, 2, 3, 4, 0, 80])

        #expect(reply == 0x08)
    }

    @Test func repliesGeneralFailureToARequestWithTheWrongVersion() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(client, request: [0x04, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0, 80])

        #expect(reply == 0x01)
    }

    @Test func repliesNotAllowedForAConnectToTheProxyItself() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: proxy.port))

        #expect(reply == 0x02)
    }

    @Test func refusesEveryMethodWhenCredentialsAreRequiredButNotOffered() throws {
        let (proxy, client) = try connectedFrontEnd(
            settings: ProxyFrontEndSettings(credentials: ProxyCredentials(user: "ann", password: "s3cret")))
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting(methods: [0x00]))

        #expect(try client.receive(exactly: 2) == [0x05, 0xFF])
        #expect(client.readUntilClosed().isEmpty)
    }

    @Test func refusesWrongCredentials() throws {
        let (proxy, client) = try connectedFrontEnd(
            settings: ProxyFrontEndSettings(credentials: ProxyCredentials(user: "ann", password: "s3cret")))
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting(methods: [0x00, 0x02]))
        let method = try client.receive(exactly: 2)
        try client.send(SOCKS5Client.credentials(user: "ann", password: "guess"))

        #expect(method == [0x05, 0x02])
        #expect(try client.receive(exactly: 2) == [0x01, 0x01])
        #expect(client.readUntilClosed().isEmpty)
    }

    @Test func acceptsTheRightCredentials() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(
            settings: ProxyFrontEndSettings(credentials: ProxyCredentials(user: "ann", password: "s3cret")))
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting(methods: [0x02]))
        _ = try client.receive(exactly: 2)
        try client.send(SOCKS5Client.credentials(user: "ann", password: "s3cret"))
        let authentication = try client.receive(exactly: 2)
        try client.send(SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))

        #expect(authentication == [0x01, 0x00])
        #expect(try SOCKS5Client.readReply(client) == 0x00)
    }

    @Test func closesAClientThatSendsNothingOnceTheHandshakeTimeoutPasses() throws {
        let (proxy, client) = try connectedFrontEnd(
            settings: ProxyFrontEndSettings(handshakeTimeout: .milliseconds(300)))
        defer {
            client.close()
            proxy.stop()
        }
        let start = MonotonicClock().now()

        let ending = Result { try client.receive() }
        let closedAfter = secondsSince(start)

        // Closed (an end of stream, or a reset), not left open until the read's own 5 s time-out; never early.
        // Nothing but the handshake timeout closes a silent client, so how late it came is the machine's.
        switch ending {
        case .success(let received): #expect(received.isEmpty, "\(received)")
        case .failure(let error): #expect(!"\(error)".contains("temporarily unavailable"), "still open: \(error)")
        }
        #expect(closedAfter >= 0.25)
    }

    @Test func aConnectThatNeverCompletesIsAnsweredTTLExpiredOnceTheConnectTimeoutPasses() throws {
        let blocked = UInt16(9)
        let (proxy, client) = try connectedFrontEnd(
            profile: Profile(parsing: "blocked.ports = \(blocked)\nblocked.mode = blackhole"),
            settings: ProxyFrontEndSettings(connectTimeout: .milliseconds(300)))
        defer {
            client.close()
            proxy.stop()
        }
        let start = MonotonicClock().now()

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: blocked))

        #expect(reply == 0x06)
        #expect(secondsSince(start) >= 0.3, "never before the connect timeout")
    }

    @Test func aConnectHeldByAConnectStallIsAnsweredTTLExpiredOnceTheConnectTimeoutPasses() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(
            profile: Profile(parsing: "connect.stall = 60s"),
            settings: ProxyFrontEndSettings(connectTimeout: .milliseconds(300)))
        defer {
            client.close()
            proxy.stop()
        }
        let start = MonotonicClock().now()

        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))

        #expect(reply == 0x06)
        #expect(secondsSince(start) >= 0.3, "never before the connect timeout")
    }

    @Test func aConnectHeldByAnOfflineBlackholeIsGivenUpAtTheConnectTimeoutAndAnsweredOnceOnline() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(settings: ProxyFrontEndSettings(connectTimeout: .milliseconds(300)))
        defer {
            client.close()
            proxy.stop()
        }
        proxy.goOffline(.blackhole)
        try SOCKS5Client.greet(client)
        try client.send(SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))

        let replyHeldOnTheDeadLink = waitUntil(seconds: 30) { proxy.bufferedBytes().now == 10 }
        proxy.goOnline()
        let reply = try SOCKS5Client.readReply(client)

        #expect(replyHeldOnTheDeadLink, "the front end never gave up the connect while offline")
        #expect(reply == 0x06, "the connect the front end gave up was made once online")
    }

    @Test func aConnectionThatSetUpOutlivesTheConnectTimeout() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(settings: ProxyFrontEndSettings(connectTimeout: .milliseconds(100)))
        defer {
            client.close()
            proxy.stop()
        }
        let reply = try SOCKS5Client.negotiate(
            client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
        try client.send([1])
        _ = try client.receive(exactly: 1)

        Thread.sleep(forTimeInterval: 0.3)
        try client.send([3])

        #expect(reply == 0x00)
        #expect(try client.receive(exactly: 1) == [3])
    }

    @Test func closesAClientThatSendsAGreetingWithoutMethods() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send([0x05, 0x00])

        #expect(client.readUntilClosed() == [0x05, 0xFF])
    }

    /// Under 100 ms each way, the reply waits one round trip (the connect crosses the uplink, the reply the downlink).
    @Test func setupToAnAddressTakesOneRoundTrip() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(profile: delayProfile(.milliseconds(100)))
        defer {
            client.close()
            proxy.stop()
        }
        try SOCKS5Client.greet(client)

        let start = MonotonicClock().now()
        try client.send(SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
        let reply = try SOCKS5Client.readReply(client)
        let setup = secondsSince(start)

        #expect(reply == 0x00)
        // Never early (5 ms of tolerance for the clocks); lateness is the machine's, not the front end's decision.
        #expect(setup >= 0.195, "setup took \(setup) s, expected 0.2 s")
    }

    @Test func setupToANameAlsoPaysTheDNSDelay() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(
            profile: delayProfile(.milliseconds(100), dnsDelay: .milliseconds(150)))
        defer {
            client.close()
            proxy.stop()
        }
        try SOCKS5Client.greet(client)

        let start = MonotonicClock().now()
        try client.send(SOCKS5Client.connect(name: "localhost", port: echo.port))
        let reply = try SOCKS5Client.readReply(client)
        let setup = secondsSince(start)

        #expect(reply == 0x00)
        #expect(setup >= 0.345, "setup took \(setup) s, expected 0.35 s")
    }

    @Test func curlFetchesSeveralMebibytesByteExactThroughSocks5Hostname() throws {
        let size = 6 << 20

        guard
            let result = try curlThroughFrontEnd(
                unavailable: "curl is not installed; the SOCKS5 curl test cannot run",
                arguments: { proxyPort, originPort in
                    ["--socks5-hostname", "127.0.0.1:\(proxyPort)", "http://localhost:\(originPort)/bytes/\(size)"]
                })
        else { return }

        expectOriginBody(result, size: size)
    }
}
