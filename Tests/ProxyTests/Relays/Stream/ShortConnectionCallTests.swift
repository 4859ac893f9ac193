import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The system calls a short connection (a request, its reply, both ends of stream) costs an unshaped relay: none
/// spent to hear that a socket is empty, and no half-close just before the close that sends the same FIN.
@Suite(.serialized)
struct ShortConnectionCallTests {
    private static let request = [UInt8](repeating: 0x51, count: 16)
    private static let reply = [UInt8](repeating: 0x52, count: 32)

    /// An upstream that reads the 16-byte request, sends the 32-byte reply and closes, as an HTTP/1.0 server does.
    private func replyingServer() throws -> TestServer {
        try TestServer { connection in
            defer { connection.close() }
            guard (try? connection.receive(exactly: Self.request.count)) != nil else { return }
            try? connection.send(Self.reply)
        }
    }

    /// Runs `count` connections in turn through `proxy`, each until the client has the reply and its end of
    /// stream and has closed, then waits until the proxy has closed them all.
    private func runShortConnections(_ count: Int, through proxy: ConditionedProxy) throws {
        for _ in 0..<count {
            let client = try TestConnection.connect(port: proxy.port, timeout: 10)
            try client.send(Self.request)
            #expect(try client.receive(exactly: Self.reply.count) == Self.reply)
            #expect(try client.receive().isEmpty, "the upstream's end of stream did not cross")
            client.close()
        }
        let closed = waitUntil(seconds: 10) { proxy.status()[0].activeConnections == 0 }
        #expect(closed, "the proxy still holds connections")
    }

    @Test func aShortConnectionNeverReadsAnEmptySocket() throws {
        let server = try replyingServer()
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }

        try runShortConnections(5, through: proxy)

        #expect(proxy.relayCalls().emptyReads == 0)
    }

    @Test func aShortReadAfterThePeersFINIsTheEndOfStreamWithoutAReadOfNothing() throws {
        let sawEnd = DispatchSemaphore(value: 0)
        let mayReply = DispatchSemaphore(value: 0)
        let server = try TestServer { connection in
            defer { connection.close() }
            guard (try? connection.receive(exactly: Self.request.count)) != nil,
                (try? connection.receive())?.isEmpty == true
            else { return }
            sawEnd.signal()
            // The reply and its end of stream wait until the uplink's reads are counted, so none of theirs is.
            _ = mayReply.wait(timeout: .now() + 30)
            try? connection.send(Self.reply)
        }
        defer { server.stop() }
        // The upstream is connected 2 s after the client, so the request and the FIN behind it are both queued
        // before the relay first reads the client.
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: try Profile(parsing: "connect.stall = 2 s"))
        defer { proxy.stop() }
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }

        try client.send(Self.request)
        client.shutdownWrite()
        let upstreamSawEnd = sawEnd.wait(timeout: .now() + 20) == .success
        let endReads = proxy.relayCalls().endReads
        mayReply.signal()

        #expect(upstreamSawEnd)
        #expect(endReads == 0, "the uplink read nothing but its end of stream")
        #expect(try client.receive(exactly: Self.reply.count) == Self.reply)
    }

    @Test func onlyTheFirstEndOfStreamIsAHalfCloseTheSecondIsTheClose() throws {
        let server = try replyingServer()
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }

        try runShortConnections(5, through: proxy)

        #expect(proxy.relayCalls().halfCloses == 5)
    }
}
