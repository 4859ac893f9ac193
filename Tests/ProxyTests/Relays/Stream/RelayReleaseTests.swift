import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The loop holds a relay while it watches the relay's sockets, and each pump holds its relay unowned: a relay
/// whose connection ended must still be freed, with nothing left holding it.
@Suite(.serialized)
struct RelayReleaseTests {
    @Test func aRelayIsFreedOnceItsConnectionEnded() throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try echoedClient(through: proxy)
        let references = proxy.relayReferences()
        #expect(references.count == 1)

        client.close()

        let closed = waitUntil(seconds: 10) { proxy.relayDecisions().isEmpty }
        #expect(closed, "the relay never closed")
        let freed = references.filter { $0.isFreed }.count
        #expect(freed == references.count)
    }
}
