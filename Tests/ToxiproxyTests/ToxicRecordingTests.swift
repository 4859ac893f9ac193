import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Under `run --record`, bytes a toxic holds back are a stall whose cause is `fault`, from when the toxic took
/// them until it let them go.
struct ToxicRecordingTests {
    @Test func bytesALatencyToxicHoldsAreRecordedAsAFaultStallLastingAtLeastTheLatency() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-toxic-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = ProxyOptions()
        options.recording = RecordingOptions(path: path)
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let api = try ToxiproxyUnderTest(options: options)
        let port = try api.createProxy("slow", upstreamPort: echo.port)
        _ = try api.send(
            "POST", "/proxies/slow/toxics", #"{"type":"latency","stream":"downstream","attributes":{"latency":300}}"#)

        let client = try TestConnection.connect(port: port, timeout: 10)
        try client.send(Array("ping".utf8))
        let answer = try client.receive(exactly: 4)
        client.close()
        api.stop()
        let recording = try Recording(contentsOf: path)

        #expect(answer == Array("ping".utf8))
        let connection = try #require(recording.connections.first)
        let stall = try #require(connection.stalls.first { $0.cause == "fault" && !$0.up }, "\(connection.stalls)")
        let held = try #require(stall.end) - stall.start
        #expect(held >= 300_000, "held \(held) µs for a 300 ms latency")
    }
}
