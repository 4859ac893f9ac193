import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The rate `linkcond status` shows is the running instance's, sampled on its loop: one call is enough.
@Suite(.serialized)
struct StatusRateTests {
    @Test func oneStatusCallDuringAShapedDownloadShowsTheShapedRate() throws {
        let source = try TestServer { connection in
            defer { connection.close() }
            let block = [UInt8](repeating: 0x5A, count: 16384)
            let start = MonotonicClock().now()
            while secondsSince(start) < 60, (try? connection.send(block)) != nil {}
        }
        defer { source.stop() }
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-rate-\(UUID().uuidString.prefix(8)).sock"
        ).path
        let instance = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(source.port)",
            "--profile", "3g", "--control", socket,
        ])
        defer { _ = try? instance.stop() }
        let port = try instance.readReadyPort()
        _ = try instance.readLine()
        let client = try TestConnection.connect(port: port, timeout: 30)
        defer { client.close() }
        let shaped = Profile.builtIn(named: "3g")!.downlink.bandwidth!.bitsPerSecond
        var received = 0
        let start = MonotonicClock().now()
        while received < Int(shaped / 8 * 1.5), secondsSince(start) < 60 {
            received += try client.receive().count
        }

        let json = try LinkcondProcess.run(["status", "--json", "--control", socket])

        let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
        let rate = try #require(report.listeners.first).downlink.bitsPerSecond
        #expect(rate >= shaped * 0.5 && rate <= shaped * 1.1, "\(rate) bit/s at a shaped \(shaped) bit/s")
    }
}
