import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A connection holds fault stages only while the profile sets a stream fault: a fault-free profile's connections
/// make none, and a fault set later gives the open ones theirs, knowing who spoke last.
@Suite(.serialized)
struct FaultStageTests {
    @Test(arguments: [("", false), ("close.delay = 1 ms", true)])
    func aConnectionMakesStagesOnlyWhenItsProfileSetsAFault(profile: String, makesStages: Bool) throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: try Profile(parsing: profile))
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try echoedClient(through: proxy)
        defer { client.close() }

        #expect(proxy.relayDecisions().map(\.hasStages) == [makesStages])
    }

    @Test func aFaultSetOnAnOpenConnectionGivesItStagesThatKnowTheServerSpokeLast() throws {
        let echo = try TestServer.echo()
        // A delay keeps the bytes on the copying path, where the stages would have seen who spoke.
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: try Profile(parsing: "delay = 1 ms"))
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try echoedClient(through: proxy)
        defer { client.close() }
        #expect(proxy.relayDecisions().map(\.hasStages) == [false])

        try proxy.set([("downlink.first-byte.delay", "1 ms")])

        let decisions = proxy.relayDecisions()
        #expect(decisions.map(\.hasStages) == [true])
        #expect(decisions.map(\.speaker) == [.downstream])
    }
}

/// Opens a client through `proxy` (in front of an echo server) and has three bytes echoed.
func echoedClient(through proxy: ConditionedProxy) throws -> TestConnection {
    let client = try TestConnection.connect(port: proxy.port, timeout: 10)
    try client.send([1, 2, 3])
    #expect(try client.receive(exactly: 3) == [1, 2, 3])
    return client
}
