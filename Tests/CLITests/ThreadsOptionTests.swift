import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `run --threads`: how many event loop threads carry connections, as `status --json` reports where a
/// pass-through connection went; values outside 1…256 are refused before anything starts.
@Suite(.serialized)
struct ThreadsOptionTests {
    @Test(arguments: ["0", "1.5", "many", "257"])
    func aThreadCountOutsideItsRangeIsRefusedWithTheRange(_ value: String) throws {
        let result = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--threads", value,
        ])

        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--threads \"\(value)\""), "\(result.stderr)")
        #expect(result.stderr.contains("from 1 to 256"), "\(result.stderr)")
    }

    @Test func oneThreadKeepsAPassThroughConnectionOnTheMainLoop() throws {
        let (report, _) = try statusDuringADownload(threads: 1, waitingForSpliceLoop: false)

        #expect(report.spliceLoops == 0)
        #expect(report.listeners.first?.connectionsOnSpliceLoops == 0)
        #expect(report.listeners.first?.activeConnections == 1)
    }

    @Test func twoThreadsHandAPassThroughConnectionToTheSpliceLoop() throws {
        let (report, handedOver) = try statusDuringADownload(threads: 2, waitingForSpliceLoop: true)

        #expect(handedOver)
        #expect(report.spliceLoops == 1)
        #expect(report.listeners.first?.connectionsOnSpliceLoops == 1)
    }

    @Test func twoThreadsGiveTwoListenersTheirOwnLoopsWithTheirCountersInStatus() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-threads-\(UUID().uuidString.prefix(8)).sock"
        ).path
        let instance = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
            "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
            "--profile", "wifi", "--threads", "2", "--control", socket,
        ])
        defer { _ = try? instance.stop() }
        let ports = [try instance.readReadyPort(), try instance.readReadyPort()]
        _ = try instance.readLine()
        for (index, port) in ports.enumerated() {
            let client = try TestConnection.connect(port: port, timeout: 30)
            defer { client.close() }
            let block = [UInt8](repeating: UInt8(index), count: 1000 * (index + 1))
            try client.send(block)
            #expect(try client.receive(exactly: block.count) == block)
        }

        let json = try LinkcondProcess.run(["status", "--json", "--control", socket])
        let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))

        #expect(report.listeners.map(\.loop) == [0, 1])
        #expect(report.listeners.map(\.uplink.bytesDelivered) == [1000, 2000])
        #expect(report.listeners.map(\.connectionsAccepted) == [1, 1])
        let text = try LinkcondProcess.run(["status", "--control", socket])
        #expect(text.stdout.contains("listeners on 2 loops"), "\(text.stdout)")
    }

    /// Runs `linkcond run --threads threads` in front of a server that sends 1 MiB and waits, reads that MiB
    /// through it, and returns `status --json` (once it shows a connection on a splice loop, when waiting for that,
    /// within a bound) and whether it did.
    private func statusDuringADownload(threads: Int, waitingForSpliceLoop: Bool) throws -> (StatusReport, Bool) {
        let size = 1 << 20
        let source = try TestServer { connection in
            defer { connection.close() }
            try? connection.send([UInt8](repeating: 0x7E, count: size))
            _ = try? connection.receive()
        }
        defer { source.stop() }
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-threads-\(UUID().uuidString.prefix(8)).sock"
        ).path
        let instance = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(source.port)",
            "--threads", "\(threads)", "--control", socket,
        ])
        defer { _ = try? instance.stop() }
        let port = try instance.readReadyPort()
        _ = try instance.readLine()
        let client = try TestConnection.connect(port: port, timeout: 30)
        defer { client.close() }
        _ = try client.receive(exactly: size)

        var report: StatusReport?
        for _ in 0..<(waitingForSpliceLoop ? 40 : 1) {
            let json = try LinkcondProcess.run(["status", "--json", "--control", socket])
            report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
            if report?.listeners.first?.connectionsOnSpliceLoops == 1 { break }
            usleep(100_000)
        }
        let final = try #require(report)
        return (final, final.listeners.first?.connectionsOnSpliceLoops == 1)
    }
}
