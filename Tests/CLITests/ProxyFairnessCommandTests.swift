import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Every local program reaches the SOCKS5 and HTTP proxy from 127.0.0.1, so a per-address connection cap would be
/// shared by all of them: a program holding it with silent connections must not lock the others out, and one
/// holding it with established tunnels must not lock out another user's programs.
@Suite(.serialized)
struct ProxyFairnessCommandTests {
    /// The front end's cap per client address (`ProxyFrontEndSettings.connectionsPerClient`).
    static let cap = 512

    /// `linkcond run --proxy` on loopback, and the proxy's port.
    static func startProxy() throws -> (RunningLinkcond, UInt16) {
        let linkcond = try RunningLinkcond(
            ["run", "--proxy", "127.0.0.1:0", "--control", "127.0.0.1:0"],
            environment: ["LINKCOND_CONTROL_TOKEN": ControlToken.random()])
        do {
            return (linkcond, try linkcond.readReadyPort())
        } catch {
            _ = try? linkcond.stop(signal: SIGTERM)
            throw error
        }
    }

    @Test func aClientStillGetsThroughWhileAnotherHoldsTheCapWithSilentConnections() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let (linkcond, proxyPort) = try Self.startProxy()
        defer { _ = try? linkcond.stop(signal: SIGTERM) }

        // The hog: the cap's worth of connections that never send a byte, and a few more that try to take their place.
        var hog: [TestConnection] = []
        defer { for connection in hog { connection.close() } }
        for _ in 0..<(Self.cap + 16) { hog.append(try TestConnection.connect(port: proxyPort, timeout: 10)) }
        let client = try TestConnection.connect(port: proxyPort, timeout: 10)
        defer { client.close() }
        try client.send([0x05, 0x01, 0x00])
        let method = try client.receive(exactly: 2)
        try client.send([0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, UInt8(echo.port >> 8), UInt8(echo.port & 0xFF)])
        let reply = try client.receive(exactly: 10)
        try client.send(Array("through".utf8))
        let echoed = try client.receive(exactly: 7)
        // Displaced at once when the cap was reached, long before the client's round trips: reset by now.
        var byte: UInt8 = 0
        let oldestHog = recv(hog[0].fd, &byte, 1, Int32(MSG_DONTWAIT))
        let oldestHogError = errno
        // The log line comes through a pipe another thread reads: wait for it rather than race that thread.
        let logged = waitUntil(seconds: 30) {
            linkcond.stderrText.contains("resetting the one waiting longest for its request")
        }

        #expect(method == [0x05, 0x00])
        #expect(reply.prefix(2) == [0x05, 0x00], "SOCKS5 reply \(reply)")
        #expect(String(decoding: echoed, as: UTF8.self) == "through")
        #expect(
            oldestHog == 0 || (oldestHog < 0 && oldestHogError == ECONNRESET),
            "the longest-silent connection is still open: recv \(oldestHog), errno \(oldestHogError)")
        #expect(logged, "\(linkcond.stderrText)")
    }

    /// One user's program holds the cap with established tunnels that carry nothing (which displace nothing: they
    /// wait for no request); another user's program still gets through, as each user on loopback has a share of its
    /// own. The hog's own next tunnel is reset: the cap still holds for it.
    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs root, setpriv and python3"))
    func anotherUsersClientGetsThroughWhileOneHoldsTheCapWithIdleTunnels() throws {
        let idle = try TestServer { connection in
            defer { connection.close() }
            while let chunk = try? connection.receive(), !chunk.isEmpty {}
        }
        defer { idle.stop() }
        let origin = try TestServer { connection in
            defer { connection.close() }
            var request: [UInt8] = []
            while !String(decoding: request, as: UTF8.self).contains("\r\n\r\n"), let chunk = try? connection.receive(),
                !chunk.isEmpty
            {
                request += chunk
            }
            try? connection.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nthrough".utf8))
        }
        defer { origin.stop() }
        let (linkcond, proxyPort) = try Self.startProxy()
        defer { _ = try? linkcond.stop(signal: SIGTERM) }

        var hog: [TestConnection] = []
        defer { for connection in hog { connection.close() } }
        for _ in 0..<Self.cap {
            let tunnel = try TestConnection.connect(port: proxyPort, timeout: 20)
            hog.append(tunnel)
            let reply = try Self.openTunnel(tunnel, to: idle.port)
            guard reply.prefix(2) == [0x05, 0x00] else { throw TestError("tunnel \(hog.count): reply \(reply)") }
        }
        let oneMore = try TestConnection.connect(port: proxyPort, timeout: 20)
        defer { oneMore.close() }
        let oneMoreAnswer = Result { try Self.openTunnel(oneMore, to: idle.port) }
        let stranger = try exchangeAsAnotherUser(
            port: proxyPort,
            "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nConnection: close\r\n\r\n"
        )

        #expect(stranger.hasPrefix("HTTP/1.1 200 ") && stranger.hasSuffix("through"), "\(stranger)")
        if case .success(let reply) = oneMoreAnswer {
            Issue.record("the hog's connection past the cap was served: \(reply)")
        }
        #expect(
            linkcond.stderrText.contains("already holds \(Self.cap) connections past their request"),
            "\(linkcond.stderrText)")
    }

    /// A SOCKS5 handshake without authentication and a CONNECT to 127.0.0.1:`port` on `client`; the reply's 10 bytes.
    static func openTunnel(_ client: TestConnection, to port: UInt16) throws -> [UInt8] {
        try client.send([0x05, 0x01, 0x00])
        guard try client.receive(exactly: 2) == [0x05, 0x00] else { throw TestError("no SOCKS5 method") }
        try client.send([0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, UInt8(port >> 8), UInt8(port & 0xFF)])
        return try client.receive(exactly: 10)
    }
}
