import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Every local program reaches the SOCKS5 and HTTP proxy from 127.0.0.1, so its per-address connection cap is
/// shared by all of them: a program holding it with silent connections must not lock the others out.
@Suite(.serialized)
struct ProxyFairnessCommandTests {
    /// The front end's cap per client address (`ProxyFrontEndSettings.connectionsPerClient`).
    static let cap = 512

    @Test func aClientStillGetsThroughWhileAnotherHoldsTheCapWithSilentConnections() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try RunningLinkcond(
            ["run", "--proxy", "127.0.0.1:0", "--control", "127.0.0.1:0"],
            environment: ["LINKCOND_CONTROL_TOKEN": ControlToken.random()])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let proxyPort = try linkcond.readReadyPort()

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

        #expect(method == [0x05, 0x00])
        #expect(reply.prefix(2) == [0x05, 0x00], "SOCKS5 reply \(reply)")
        #expect(String(decoding: echoed, as: UTF8.self) == "through")
        #expect(
            oldestHog == 0 || (oldestHog < 0 && oldestHogError == ECONNRESET),
            "the longest-silent connection is still open: recv \(oldestHog), errno \(oldestHogError)")
        #expect(
            linkcond.stderrText.contains("resetting the one waiting longest for its request"), "\(linkcond.stderrText)")
    }
}
