import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A relay watches its client for reading only until a write to it would block: an accepted socket is writable,
/// and its writable edge would cost every connection an event for nothing.
@Suite(.serialized)
struct ClientWritableInterestTests {
    @Test func aConnectionWhoseWritesNeverBlockWatchesItsClientForReadingOnly() throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try echoedClient(through: proxy)
        defer { client.close() }

        let interests = proxy.relayDecisions().map(\.clientInterest)
        #expect(interests.count == 1)
        #expect(
            interests.allSatisfy { $0.map { $0 & Epoll.readable != 0 && $0 & Epoll.writable == 0 } == true },
            "\(interests)")
    }

    @Test func aClientThatStopsReadingIsWatchedForWritingAndStillGetsEveryByte() throws {
        let payload = Payload(size: 32 << 20, seed: 11)
        let server = try TestServer.sending(payload)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer {
            proxy.stop()
            server.stop()
        }
        let client = try TestConnection.connect(port: proxy.port, timeout: 20)
        defer { client.close() }

        // The client reads nothing until the relay's writes to it have blocked.
        let watched = waitUntil(seconds: 20) {
            proxy.relayDecisions().contains { ($0.clientInterest ?? 0) & Epoll.writable != 0 }
        }
        var digest = StreamDigest()
        try client.drain(into: &digest)

        #expect(watched, "the relay never watched its client for writing")
        #expect(digest.count == payload.size)
        #expect(digest.value == payload.digest.value)
    }
}
