import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The HTTP proxy front end: CONNECT tunnels and absolute-form forwarding, with raw sockets and with curl.
@Suite(.serialized)
struct HTTPProxyFrontEndTests {
    @Test func curlFetchesSeveralMebibytesByteExactWithAPlainProxiedGet() throws {
        let size = 6 << 20

        guard
            let result = try curlThroughFrontEnd(
                unavailable: "curl is not installed; the HTTP proxy curl test cannot run",
                arguments: { proxyPort, originPort in
                    ["-x", "http://127.0.0.1:\(proxyPort)", "http://127.0.0.1:\(originPort)/bytes/\(size)"]
                })
        else { return }

        expectOriginBody(result, size: size)
    }

    @Test func curlFetchesSeveralMebibytesByteExactThroughAConnectTunnel() throws {
        let size = 5 << 20

        guard
            let result = try curlThroughFrontEnd(
                unavailable: "curl is not installed; the HTTP CONNECT curl test cannot run",
                arguments: { proxyPort, originPort in
                    ["-p", "-x", "http://127.0.0.1:\(proxyPort)", "http://localhost:\(originPort)/bytes/\(size)"]
                })
        else { return }

        expectOriginBody(result, size: size)
    }

    @Test func rewritesAnAbsoluteFormRequestToOriginFormWithoutProxyFields() throws {
        let origin = try TestHTTPOrigin()
        defer { origin.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let responses = HTTPResponseReader(client)
        try client.send(
            Array(
                "GET http://127.0.0.1:\(origin.port)/echo?x=1 HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nProxy-Connection: keep-alive\r\nX-Test: kept\r\n\r\n"
                    .utf8))
        let response = try responses.next()
        let seen = String(decoding: response.body, as: UTF8.self)

        #expect(response.status == 200)
        #expect(seen.hasPrefix("GET /echo?x=1 HTTP/1.1\r\n"))
        #expect(seen.contains("Host: 127.0.0.1:\(origin.port)"))
        #expect(seen.contains("X-Test: kept"))
        #expect(!seen.lowercased().contains("proxy-connection"))
    }

    @Test func keepsTheConnectionAliveForTwoRequestsToTheSameOrigin() throws {
        let origin = try TestHTTPOrigin()
        defer { origin.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }
        let request = { (size: Int) in
            Array("GET http://127.0.0.1:\(origin.port)/bytes/\(size) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        }

        let responses = HTTPResponseReader(client)
        try client.send(request(1000))
        let first = try responses.next()
        try client.send(request(2000))
        let second = try responses.next()

        #expect(first.status == 200 && first.body.count == 1000)
        #expect(second.status == 200 && second.body.count == 2000)
        #expect(origin.connections.value == 1)
        #expect(origin.requestHeads.value.count == 2)
    }

    @Test func forwardsTwoPipelinedRequestsAndABodyInOrder() throws {
        let origin = try TestHTTPOrigin()
        defer { origin.stop() }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }
        let post = "POST http://127.0.0.1:\(origin.port)/first HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nHELLO"
        let get = "GET http://127.0.0.1:\(origin.port)/second HTTP/1.1\r\nHost: x\r\n\r\n"

        let responses = HTTPResponseReader(client)
        try client.send(Array((post + get).utf8))
        let first = try responses.next()
        let second = try responses.next()

        #expect(String(decoding: first.body, as: UTF8.self).hasPrefix("POST /first HTTP/1.1"))
        #expect(String(decoding: first.body, as: UTF8.self).hasSuffix("HELLO"))
        #expect(String(decoding: second.body, as: UTF8.self).hasPrefix("GET /second HTTP/1.1"))
    }

    @Test func closesAfterTheCurrentExchangeWhenALaterRequestNamesAnotherOrigin() throws {
        let origin = try TestHTTPOrigin()
        let other = try TestHTTPOrigin()
        defer {
            origin.stop()
            other.stop()
        }
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        let responses = HTTPResponseReader(client)
        try client.send(
            Array(
                "GET http://127.0.0.1:\(origin.port)/a HTTP/1.1\r\nHost: x\r\n\r\nGET http://127.0.0.1:\(other.port)/b HTTP/1.1\r\nHost: y\r\n\r\n"
                    .utf8))
        let first = try responses.next()
        let rest = client.readUntilClosed()

        #expect(first.status == 200)
        #expect(rest.isEmpty)
        #expect(other.requestHeads.value.isEmpty)
    }

    @Test func tunnelsAConnectAndKeepsBytesPipelinedAfterIt() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(profile: delayProfile(.milliseconds(20)))
        defer {
            client.close()
            proxy.stop()
        }
        let established = "HTTP/1.1 200 Connection established\r\n\r\n"

        try client.send(
            Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\npipelined".utf8))

        #expect(try client.receive(exactly: established.utf8.count) == Array(established.utf8))
        #expect(try client.receive(exactly: 9) == Array("pipelined".utf8))
    }

    @Test func answersBadRequestToGarbage() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("\u{01}\u{02} nonsense\r\n\r\n".utf8))
        let response = client.readTextUntilClosed()

        #expect(response.hasPrefix("HTTP/1.1 400 "))
    }

    @Test func answersBadRequestToAnOriginFormRequest() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("GET / HTTP/1.1\r\nHost: example\r\n\r\n".utf8))

        #expect(client.readTextUntilClosed().hasPrefix("HTTP/1.1 400 "))
    }

    @Test func answersHeaderFieldsTooLargeToAnOversizedHead() throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try? client.send(
            Array("GET http://127.0.0.1:9/ HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 40_000))\r\n\r\n".utf8))

        #expect(client.readTextUntilClosed().hasPrefix("HTTP/1.1 431 "))
    }

    @Test func answersBadGatewayWhenTheOriginRefuses() throws {
        let closed = try TestServer { $0.close() }
        let port = closed.port
        closed.stop()
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("GET http://127.0.0.1:\(port)/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8))

        #expect(client.readTextUntilClosed().hasPrefix("HTTP/1.1 502 "))
    }

    @Test func answersBadGatewayWhenTheNameDoesNotResolve() throws {
        let (proxy, client) = try connectedFrontEnd(timeout: 10)
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("CONNECT nonexistent.invalid:443 HTTP/1.1\r\n\r\n".utf8))

        #expect(client.readTextUntilClosed().hasPrefix("HTTP/1.1 502 "))
    }

    @Test(arguments: [("TRACE", 405), ("BREW", 501)])
    func refusesMethodsItDoesNotForward(method: String, status: Int) throws {
        let (proxy, client) = try connectedFrontEnd()
        defer {
            client.close()
            proxy.stop()
        }

        try client.send(Array("\(method) http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8))

        #expect(client.readTextUntilClosed().hasPrefix("HTTP/1.1 \(status) "))
    }

    @Test func asksForProxyCredentialsWhenTheyAreRequiredAndAcceptsThem() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.frontEnd(
            settings: ProxyFrontEndSettings(credentials: ProxyCredentials(user: "ann", password: "s3cret")))
        defer { proxy.stop() }
        let anonymous = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { anonymous.close() }
        let authorized = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { authorized.close() }
        let token = Data("ann:s3cret".utf8).base64EncodedString()

        try anonymous.send(Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\n\r\n".utf8))
        try authorized.send(
            Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nProxy-Authorization: Basic \(token)\r\n\r\n".utf8))

        #expect(anonymous.readTextUntilClosed().hasPrefix("HTTP/1.1 407 "))
        #expect(String(decoding: try authorized.receive(exactly: 12), as: UTF8.self) == "HTTP/1.1 200")
    }

    @Test func connectSetupTakesOneRoundTrip() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (proxy, client) = try connectedFrontEnd(profile: delayProfile(.milliseconds(100)))
        defer {
            client.close()
            proxy.stop()
        }
        let established = "HTTP/1.1 200 Connection established\r\n\r\n"

        let start = MonotonicClock().now()
        try client.send(Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\n\r\n".utf8))
        let reply = try client.receive(exactly: established.utf8.count)
        let setup = secondsSince(start)

        #expect(reply == Array(established.utf8))
        // Never early (5 ms of tolerance for the clocks); lateness is the machine's, not the front end's decision.
        #expect(setup >= 0.195, "setup took \(setup) s, expected 0.2 s")
    }
}
