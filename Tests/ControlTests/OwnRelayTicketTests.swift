import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A dashboard ticket presented through one of linkcond's own sockets (a relay or proxy whose upstream is the control
/// endpoint, relaying whoever reached it, of any user) is void: the kernel lists that socket as linkcond's user's,
/// so the same-user check alone would hand the token to whoever sent the ticket through it.
///
/// Item 1 of issue 32 refuses every relay or proxy whose upstream reaches a loopback control endpoint, where alone the
/// dashboard's routes are served; `exec`'s gateway still reaches it (RelayedTicketCommandTests). This test makes the
/// connection in process, as a relay's upstream socket would.
@Suite(.serialized)
struct OwnRelayTicketTests {
    @Test func aTicketPresentedThroughLinkcondsOwnSocketIsRefusedAndVoid() throws {
        let token = ControlToken.random()
        let endpoint = try ControlEndpointUnderTest(token: token)
        defer { endpoint.stop() }
        let ticketAnswer = try endpoint.request("POST", "/dashboard/ticket")
        let ticket = try #require(ticketAnswer.components(separatedBy: "\r\n\r\n").last)
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let relayed = try exchangeThroughOwnSocket(
            port: endpoint.port,
            "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\nContent-Length: \(ticket.utf8.count)\r\n\r\n\(ticket)"
        )
        // The ticket is void now: even the owner's own program cannot trade it any more.
        let again = try endpoint.raw(
            "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\nContent-Length: \(ticket.utf8.count)\r\n\r\n\(ticket)"
        )

        #expect(ticketAnswer.hasPrefix("HTTP/1.1 200 ") && !ticket.isEmpty, "\(ticketAnswer)")
        #expect(relayed.hasPrefix("HTTP/1.1 403 "), "\(relayed)")
        #expect(relayed.contains("came through one of linkcond's own relays"), "\(relayed)")
        #expect(!relayed.contains(token), "the token leaked: \(relayed)")
        #expect(again.hasPrefix("HTTP/1.1 403 ") && !again.contains(token), "\(again)")
    }
}
