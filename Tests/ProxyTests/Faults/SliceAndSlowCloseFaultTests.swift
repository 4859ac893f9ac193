import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `slice.*` and `close.delay` on a TCP relay: the receiver sees small writes, byte-exact, and the end of the
/// stream late.
@Suite(.serialized)
struct SliceAndSlowCloseFaultTests {
    @Test func slicedDataArrivesInReadsNoLargerThanTheSliceAndByteExact() throws {
        let payload = Array((0..<2000).map { UInt8($0 % 251) })
        let server = try TestServer { connection in try? connection.send(payload); connection.shutdownWrite(); _ = try? connection.receive() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: Profile(parsing: "downlink.slice.size = 10 B\ndownlink.slice.delay = 1 ms"))
        defer { proxy.stop(); server.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 20)
        defer { client.close() }
        var reads: [[UInt8]] = []
        while let chunk = try? client.receive(), !chunk.isEmpty { reads.append(chunk) }

        #expect(reads.flatMap { $0 } == payload)
        #expect(reads.allSatisfy { $0.count <= 10 }, "largest read \(reads.map(\.count).max() ?? 0)")
    }

    @Test func theEndOfStreamArrivesNoEarlierThanTheCloseDelay() throws {
        let server = try TestServer { connection in try? connection.send(Array("bye".utf8)); connection.shutdownWrite(); _ = try? connection.receive() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: Profile(parsing: "downlink.close.delay = 500 ms"))
        defer { proxy.stop(); server.stop() }

        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        let data = try client.receive(exactly: 3)
        let start = MonotonicClock().now()
        let end = try client.receive()
        let elapsed = secondsSince(start)

        #expect(data == Array("bye".utf8))
        #expect(end.isEmpty)
        #expect(elapsed >= 0.45 && elapsed < 5.5, "\(elapsed)")
    }
}
