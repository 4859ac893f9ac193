import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers
import Testing

/// `cut.after` and `cut.mode` on a TCP relay, seen by a real client: byte-exact up to the cut, then a reset or a
/// silent hang. Timing: never early; how late is the machine's, not the fault's decision, and the ending (a reset,
/// which nothing else here sends) says the cut acted.
@Suite(.serialized)
struct CutFaultTests {

    /// A server that sends `payload` and then holds the connection open.
    private func sender(_ payload: Payload) throws -> TestServer {
        try TestServer { connection in
            try? payload.forEachBlock { try connection.send($0) }
            _ = try? connection.receive()
            connection.close()
        }
    }

    private func received(_ client: TestConnection, upTo limit: Int) -> (bytes: [UInt8], ending: String) {
        var bytes: [UInt8] = []
        while bytes.count <= limit {
            do {
                let chunk = try client.receive()
                if chunk.isEmpty { return (bytes, "eof") }
                bytes += chunk
            } catch {
                return (bytes, errno == ECONNRESET ? "reset" : errno == EAGAIN ? "silence" : "error \(errno)")
            }
        }
        return (bytes, "more than the cut")
    }

    @Test func aCutAfterBytesDeliversExactlyThoseBytesThenResets() throws {
        let payload = Payload(size: 1 << 20, seed: 5)
        let server = try sender(payload)
        let proxy = try ConditionedProxy.inFront(
            of: server.port, profile: Profile(parsing: "downlink.cut.after = 100000 B"))
        defer {
            proxy.stop()
            server.stop()
        }

        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        let (bytes, ending) = received(client, upTo: 100_000)

        #expect(ending == "reset")
        #expect(bytes.count == 100_000)
        var expected = StreamDigest()
        var seen = StreamDigest()
        seen.add(bytes)
        payload.forEachBlock { block in
            if expected.count < 100_000 { expected.add(Array(block.prefix(100_000 - expected.count))) }
        }
        #expect(seen.value == expected.value)
    }

    @Test func aHangingCutDeliversTheBytesThenNeitherDataNorAnEnd() throws {
        let payload = Payload(size: 1 << 20, seed: 6)
        let server = try sender(payload)
        let proxy = try ConditionedProxy.inFront(
            of: server.port, profile: Profile(parsing: "cut.after = 5000 B\ncut.mode = hang"))
        defer {
            proxy.stop()
            server.stop()
        }

        let client = try TestConnection.connect(port: proxy.port, timeout: 3)
        defer { client.close() }
        let (bytes, ending) = received(client, upTo: 5000)

        #expect(bytes.count == 5000)
        #expect(ending == "silence", "a hung connection neither closes nor resets")
        #expect(proxy.status()[0].activeConnections == 1)
    }

    @Test func aCutAfterATimeResetsTheConnectionNeverEarly() throws {
        let server = try TestServer { connection in _ = try? connection.receive() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: Profile(parsing: "cut.after = 400 ms"))
        defer {
            proxy.stop()
            server.stop()
        }

        let start = MonotonicClock().now()
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        let (_, ending) = received(client, upTo: 0)
        let elapsed = secondsSince(start)

        #expect(ending == "reset")
        #expect(elapsed >= 0.4, "\(elapsed)")
    }

    @Test func aCutSetOnALiveConnectionReachesIt() throws {
        let server = try TestServer { connection in _ = try? connection.receive() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer {
            proxy.stop()
            server.stop()
        }
        let client = try TestConnection.connect(port: proxy.port, timeout: 10)
        defer { client.close() }
        try client.send([1])

        try proxy.set([("cut.after", "0 ms")])
        let (_, ending) = received(client, upTo: 0)

        #expect(ending == "reset")
    }
}

/// A scenario step can unplug the cable: `set cut.after = 0 ms; cut.mode = hang` leaves a live connection silent.
@Suite(.serialized)
struct ScenarioFaultTests {
    @Test func aScenarioStepCutsALiveConnectionSilently() throws {
        let echo = try TestServer.echo()
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer {
            proxy.stop()
            echo.stop()
        }
        let client = try TestConnection.connect(port: proxy.port, timeout: 1)
        defer { client.close() }
        try client.send([1, 2, 3])
        #expect(try client.receive(exactly: 3) == [1, 2, 3])

        proxy.startScenario(try Scenario(parsing: "0s set cut.after = 0 ms; cut.mode = hang\n"))
        let deadline = MonotonicClock().now() + .seconds(10)
        while !proxy.report().profileSummary.contains("cut (hang)") && MonotonicClock().now() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        try client.send([4, 5, 6])

        #expect(throws: (any Error).self, "neither the echo nor an end arrives") { try client.receive() }
    }

    @Test func aScenarioWithABadFaultValueIsRefusedWithItsLine() {
        #expect(throws: (any Error).self) { try Scenario(parsing: "0s none\n10s set blocked.ports = 80-99999\n") }
    }
}
