import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The toxics that end or hold connections, on real loopback connections through the Toxiproxy API: timeout,
/// reset_peer and slow_close. Timing: never early, from before `connect()`: a toxic's clock starts when linkcond
/// accepts, which may come before `connect()` returns to a descheduled client. How late a loaded machine lets the
/// toxic act is not its decision and is not bounded; the ending itself says which decision was taken, as nothing
/// else ends these connections before the client's read times out (20 s).
@Suite(.serialized)
struct ConnectionToxicTests {

    @Test func timeoutHoldsTheDataAndClosesAfterItsTimeout() throws {
        let received = LockedBox(0)
        let upstream = try TestServer { connection in
            while let bytes = try? connection.receive(), !bytes.isEmpty { received.mutate { $0 += bytes.count } }
        }
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            upstream.stop()
        }
        let port = try api.createProxy("t", upstreamPort: upstream.port)
        _ = try api.send(
            "POST", "/proxies/t/toxics", #"{"type":"timeout","stream":"upstream","attributes":{"timeout":300}}"#)

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        try client.send(Array(repeating: 7, count: 1000))
        let answer = try client.receive()
        let elapsed = secondsSince(start)

        #expect(answer.isEmpty, "end of stream")
        #expect(elapsed >= 0.3, "\(elapsed)")
        #expect(received.value == 0)
    }

    @Test func timeoutZeroHoldsDataUntilTheToxicIsRemovedAndLosesNone() throws {
        let echo = try TestServer.echo()
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            echo.stop()
        }
        let port = try api.createProxy("t", upstreamPort: echo.port)
        _ = try api.send("POST", "/proxies/t/toxics", #"{"name":"hold","type":"timeout","attributes":{"timeout":0}}"#)
        let client = try TestConnection.connect(port: port, timeout: 0.3)
        defer { client.close() }
        try client.send(Array("held".utf8))
        #expect(throws: (any Error).self) { try client.receive(exactly: 4) }

        _ = try api.send("DELETE", "/proxies/t/toxics/hold")
        let after = try TestConnection(fd: client.fd, timeout: 10).receive(exactly: 4)

        #expect(after == Array("held".utf8))
    }

    @Test func aToxicWithToxicityZeroNeverActsOnAConnection() throws {
        let echo = try TestServer.echo()
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            echo.stop()
        }
        let port = try api.createProxy("z", upstreamPort: echo.port)
        _ = try api.send("POST", "/proxies/z/toxics", #"{"type":"limit_data","toxicity":0,"attributes":{"bytes":10}}"#)
        let sent = (0..<1000).map { UInt8($0 % 251) }

        let client = try TestConnection.connect(port: port, timeout: 10)
        defer { client.close() }
        try client.send(sent)
        let answer = try client.receive(exactly: sent.count)

        #expect(answer == sent)
    }

    @Test func limitDataUpstreamClosesTheWholeConnectionAsToxiproxyDoes() throws {
        let received = LockedBox(0)
        let upstream = try TestServer { connection in
            while let bytes = try? connection.receive(), !bytes.isEmpty { received.mutate { $0 += bytes.count } }
        }
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            upstream.stop()
        }
        let port = try api.createProxy("l", upstreamPort: upstream.port)
        _ = try api.send(
            "POST", "/proxies/l/toxics", #"{"type":"limit_data","stream":"upstream","attributes":{"bytes":100}}"#)

        let client = try TestConnection.connect(port: port, timeout: 10)
        defer { client.close() }
        try client.send(Array(repeating: 9, count: 1000))
        let ending: String
        do {
            ending = try client.receive().isEmpty ? "end of stream" : "data"
        } catch {
            ending = "\(error)".contains("reset") ? "reset" : "\(error)"
        }

        #expect(
            ending == "end of stream" || ending == "reset",
            "the client's direction ends too, not only the cut one: \(ending)")
        #expect(received.value <= 100)
    }

    @Test func resetPeerResetsTheClientAfterItsTimeout() throws {
        let upstream = try TestServer { connection in
            try? connection.send(Array("hello".utf8))
            Thread.sleep(forTimeInterval: 3)
        }
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            upstream.stop()
        }
        let port = try api.createProxy("r", upstreamPort: upstream.port)
        _ = try api.send("POST", "/proxies/r/toxics", #"{"type":"reset_peer","attributes":{"timeout":200}}"#)

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        let outcome = Result { try client.receive() }
        let elapsed = secondsSince(start)

        // A reset, not the read's own time-out nor the upstream's close 3 s later.
        #expect(throws: (any Error).self) { try outcome.get() }
        if case .failure(let error) = outcome { #expect("\(error)".contains("reset"), "\(error)") }
        #expect(elapsed >= 0.2, "\(elapsed)")
    }

    @Test func slowCloseDeliversDataAtOnceAndTheEndOfStreamLate() throws {
        let upstream = try TestServer { connection in
            try? connection.send(Array("bye".utf8))
            connection.shutdownWrite()
        }
        let api = try ToxiproxyUnderTest()
        defer {
            api.stop()
            upstream.stop()
        }
        let port = try api.createProxy("s", upstreamPort: upstream.port)
        _ = try api.send("POST", "/proxies/s/toxics", #"{"type":"slow_close","attributes":{"delay":300}}"#)

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        let data = try client.receive(exactly: 3)
        let end = try client.receive()
        let endAt = secondsSince(start)

        // That the data is not held with the end is the toxic's decision, pinned by SlowCloseToxicTests.
        #expect(data == Array("bye".utf8))
        #expect(end.isEmpty)
        #expect(endAt >= 0.3, "\(endAt)")
    }
}
