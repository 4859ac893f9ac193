import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What the SOCKS5 and HTTP proxy front end refuses so that it cannot be turned against its host or its upstreams.
@Suite(.serialized)
struct ProxyFrontEndSecurityTests {
    @Test func aSOCKS5ClientOfferingOnlyPasswordAuthenticationIsRefusedWhenNoCredentialsAreConfigured() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(SOCKS5Client.greeting(methods: [0x02]))

        #expect(try client.receive(exactly: 2) == [0x05, 0xFF])
        #expect(client.readUntilClosed().isEmpty)
    }

    @Test func aSOCKS5ConnectToTheProxyItselfAsAnIPv4MappedIPv6AddressIsNotAllowed() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + SOCKS5Client.loopback

        let reply = try SOCKS5Client.negotiate(client, request: SOCKS5Client.connect(ipv6: mapped, port: proxy.port))

        #expect(reply == 0x02)
        #expect(proxy.status().first?.activeConnections ?? 0 <= 1)
    }

    @Test func anHTTPConnectToTheProxyItselfAsAnIPv4MappedIPv6AddressIsForbidden() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(
            Array(
                "CONNECT [::ffff:127.0.0.1]:\(proxy.port) HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:\(proxy.port)\r\n\r\n"
                    .utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 403 "), "\(response)")
    }

    @Test func anHTTPGetToTheProxyItselfAsAnIPv4MappedIPv6AddressIsForbidden() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("GET http://[::ffff:127.0.0.1]:\(proxy.port)/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 403 "), "\(response)")
    }

    /// The Toxiproxy API asks no token on loopback and the control endpoint accepts a loopback `Host`: whoever may
    /// use the proxy (other hosts with --allow-remote, every page of a browser pointed at it) must not reach them
    /// through it, whichever way the loopback address is written.
    @Test(arguments: [
        "GET http://127.0.0.1:API/proxies HTTP/1.1\r\nHost: 127.0.0.1:API",
        "CONNECT 127.0.0.1:API HTTP/1.1\r\nHost: 127.0.0.1:API",
        "GET http://[::ffff:127.0.0.1]:API/proxies HTTP/1.1\r\nHost: 127.0.0.1:API",
        "GET http://127.0.0.1:CONTROL/status HTTP/1.1\r\nHost: 127.0.0.1:CONTROL",
    ])
    func linkcondsOwnAPIsAreForbiddenThroughTheProxy(_ request: String) throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }
        let api = try #require(
            try proxy.serveToxiproxy(at: Endpoint(host: "127.0.0.1", port: 0)).split(separator: ":").last)
        let control = try #require(
            try proxy.serveControl(at: .tcp(Endpoint(host: "127.0.0.1", port: 0))).split(separator: ":").last)

        try client.send(
            Array(
                (request.replacingOccurrences(of: "API", with: String(api))
                    .replacingOccurrences(of: "CONTROL", with: String(control)) + "\r\n\r\n").utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 403 "), "\(response)")
        #expect(response.contains("linkcond's own"), "\(response)")
    }

    @Test func aSOCKS5ConnectToTheToxiproxyAPIIsNotAllowed() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }
        let api = try #require(
            try proxy.serveToxiproxy(at: Endpoint(host: "127.0.0.1", port: 0)).split(separator: ":").last.flatMap {
                UInt16($0)
            })

        let reply = try SOCKS5Client.negotiate(client, request: SOCKS5Client.connect(name: "localhost", port: api))

        #expect(reply == 0x02)
    }

    @Test(arguments: ["content-length", "Transfer-Encoding", "keep-alive, Content-Length"])
    func aRequestNamingAFramingFieldInConnectionIsRefusedAndNothingReachesTheOrigin(_ connectionField: String) throws {
        let origin = try TestHTTPOrigin()
        defer { origin.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }
        let smuggled = "GET /second HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

        try client.send(
            Array(
                ("POST http://127.0.0.1:\(origin.port)/first HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Connection: \(connectionField)\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n" + smuggled)
                    .utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 400 "), "\(response)")
        #expect(origin.requestHeads.value.isEmpty, "the origin saw \(origin.requestHeads.value)")
    }

    /// Framings an origin may read differently from linkcond (`LooseHTTPFramings`, which CLITests send to the
    /// binary too): each request comes whole in one write, and is refused before linkcond connects to the origin.
    @Test(arguments: LooseHTTPFramings.all)
    func aLooselyFramedRequestIsAnsweredBadRequestAndNothingReachesTheOrigin(_ framing: String, _ rest: String) throws {
        let origin = try TestHTTPOrigin()
        defer { origin.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array(LooseHTTPFramings.request(rest, originPort: origin.port).utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 400 "), "\(framing): \(response)")
        #expect(
            origin.connections.value == 0 && origin.requestHeads.value.isEmpty,
            "\(framing): the origin saw \(origin.connections.value) connections and \(origin.requestHeads.value)")
    }

    @Test func aWellFramedChunkedRequestWithExtensionsAndTrailersIsForwardedWhole() throws {
        let body = "5 ;name=\"v\"\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n"
        let received = LockedBox<[UInt8]>([])
        let origin = try TestServer { connection in
            defer { connection.close() }
            var bytes: [UInt8] = []
            while !String(decoding: bytes, as: UTF8.self).hasSuffix(body), let chunk = try? connection.receive(),
                !chunk.isEmpty
            {
                bytes += chunk
            }
            received.value = bytes
            try? connection.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8))
        }
        defer { origin.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(
            Array(
                ("POST http://127.0.0.1:\(origin.port)/chunked HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n" + body).utf8))
        let answer = try HTTPResponseReader(client).next()

        #expect(answer.status == 200)
        let forwarded = String(decoding: received.value, as: UTF8.self)
        #expect(
            forwarded.hasPrefix("POST /chunked HTTP/1.1\r\n") && forwarded.hasSuffix("\r\n\r\n" + body), "\(forwarded)")
    }

    @Test func aRequestWithBareLineFeedsIsAnsweredBadRequestAtOnce() throws {
        let (proxy, client) = try connectedFrontEnd(
            settings: ProxyFrontEndSettings(handshakeTimeout: .seconds(60)), timeout: 30)
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("GET http://127.0.0.1:9/ HTTP/1.1\nHost: 127.0.0.1\n\n".utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 400 "), "\(response)")
    }
}
