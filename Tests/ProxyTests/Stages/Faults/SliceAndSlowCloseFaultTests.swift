import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `slice.*` and `close.delay` on a TCP relay: the receiver sees small writes, byte-exact, and the end of the
/// stream late.
@Suite(.serialized)
struct SliceAndSlowCloseFaultTests {
    /// 200 bytes in 10-byte slices 20 ms apart take at least 19 pauses; a busy receiver may read several slices
    /// at once, so the pacing is what is asserted, never the read sizes.
    @Test func slicedDataIsPacedSliceBySliceAndArrivesByteExact() throws {
        let payload = Array((0..<200).map { UInt8($0 % 251) })
        let server = try TestServer { connection in
            try? connection.send(payload)
            connection.shutdownWrite()
            _ = try? connection.receive()
        }
        let proxy = try ConditionedProxy.inFront(
            of: server.port, profile: Profile(parsing: "downlink.slice.size = 10 B\ndownlink.slice.delay = 20 ms"))
        defer {
            proxy.stop()
            server.stop()
        }

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port, timeout: 20)
        defer { client.close() }
        var reads: [[UInt8]] = []
        while let chunk = try? client.receive(), !chunk.isEmpty { reads.append(chunk) }
        let elapsed = secondsSince(start)

        #expect(reads.flatMap { $0 } == payload)
        #expect(elapsed >= 0.38, "\(elapsed) s for 19 pauses of 20 ms")
    }

    @Test func theEndOfStreamArrivesNoEarlierThanTheCloseDelay() throws {
        let server = try TestServer { connection in
            try? connection.send(Array("bye".utf8))
            connection.shutdownWrite()
            _ = try? connection.receive()
        }
        let proxy = try ConditionedProxy.inFront(
            of: server.port, profile: Profile(parsing: "downlink.close.delay = 500 ms"))
        defer {
            proxy.stop()
            server.stop()
        }

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        let data = try client.receive(exactly: 3)
        let end = try client.receive()
        let elapsed = secondsSince(start)

        #expect(data == Array("bye".utf8))
        #expect(end.isEmpty)
        #expect(elapsed >= 0.5, "end of stream after \(elapsed) s, the FIN having come with the data")
    }
}
