import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A client of the loopback Toxiproxy API that is one of linkcond's own sockets (a relay or proxy whose upstream is
/// the API, relaying whoever reached it) is refused, though the kernel lists it as linkcond's user's.
///
/// Such a proxy is refused at creation (issue 32, item 1), so the connection is made in process, as a relay's
/// upstream socket would make it.
@Suite(.serialized)
struct ToxiproxyOwnRelayTests {
    @Test func aClientThatIsLinkcondsOwnSocketIsRefusedWithToxiproxysError() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }

        let relayed = try exchangeThroughOwnSocket(
            port: api.port, "GET /proxies HTTP/1.1\r\nHost: 127.0.0.1:\(api.port)\r\nContent-Length: 0\r\n\r\n")
        let (ownerStatus, _) = try api.send("GET", "/proxies")

        #expect(relayed.hasPrefix("HTTP/1.1 403 "), "\(relayed)")
        #expect(relayed.contains(#""status":403"#), "\(relayed)")
        #expect(relayed.contains("comes through one of linkcond's own relays"), "\(relayed)")
        #expect(ownerStatus == 200)
    }
}
