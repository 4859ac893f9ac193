import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A front end's connect timeout lives only as long as the connect it limits: a relay whose upstream accepted
/// leaves no timer in the loop, so a churn of connections does not keep one closure per connection for 15 s.
@Suite(.serialized)
struct FrontEndConnectTimerTests {
    @Test func connectionsThatSetUpLeaveNoConnectTimerBehind() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.frontEnd(profile: .none, settings: ProxyFrontEndSettings())
        defer { proxy.stop() }
        let before = proxy.liveTimers
        var clients: [TestConnection] = []
        defer { for client in clients { client.close() } }

        for _ in 0..<20 {
            let client = try TestConnection.connect(port: proxy.port, timeout: 5)
            clients.append(client)
            let reply = try SOCKS5Client.negotiate(
                client, request: SOCKS5Client.connect(ipv4: SOCKS5Client.loopback, port: echo.port))
            try #require(reply == 0x00)
            try client.send([7])
            _ = try client.receive(exactly: 1)
        }
        let after = proxy.liveTimers

        #expect(after == before, "\(after - before) timers left by 20 open connections")
    }
}
