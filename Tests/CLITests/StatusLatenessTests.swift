import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond status` says when released bytes reached their sockets late, with the figures `status --json` reports.
@Suite(.serialized)
struct StatusLatenessTests {
    @Test func aProcessStoppedPastADueReleaseShowsItsLateDeliveries() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-late-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = directory.appendingPathComponent("slow-uplink.profile").path
        try "uplink.delay = 200 ms\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let socket = directory.appendingPathComponent("control.sock").path
        let instance = try RunningLinkcond(["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
                                            "--profile", profile, "--control", socket])
        defer { _ = try? instance.stop() }
        let port = try instance.readReadyPort()
        _ = try instance.readLine()
        let client = try TestConnection.connect(port: port, timeout: 30)
        defer { client.close() }
        try client.send([1])
        #expect(try client.receive(exactly: 1) == [1])

        // Sent while the process is stopped: due 200 ms after, written once it runs again at least 1 s after.
        kill(instance.process.processIdentifier, SIGSTOP)
        try client.send([2])
        usleep(1_000_000)
        kill(instance.process.processIdentifier, SIGCONT)
        #expect(try client.receive(exactly: 1) == [2])
        let after = try #require(try uplinkLateness(socket))
        let human = try LinkcondProcess.run(["status", "--control", socket]).stdout

        #expect(after.maxSeconds >= 0.2, "\(after)")
        let lines = human.split(separator: "\n")
        let header = try #require(lines.firstIndex { $0.hasPrefix("Late deliveries") }, "\(human)")
        let row = try #require(lines.dropFirst(header + 1).first, "\(human)").split(separator: " ").map(String.init)
        #expect(row.prefix(2) == ["tcp", "127.0.0.1:\(port)"], "\(human)")
        #expect(row.dropFirst(2).prefix(4).joined(separator: " ") == "\(ms(after.p99Seconds)) \(ms(after.maxSeconds))", "\(human)")
    }

    private func ms(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1e3) }

    private func uplinkLateness(_ socket: String) throws -> StatusReport.Lateness? {
        let json = try LinkcondProcess.run(["status", "--json", "--control", socket])
        return try #require(try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).listeners.first).uplink.deliveryLateness
    }
}
