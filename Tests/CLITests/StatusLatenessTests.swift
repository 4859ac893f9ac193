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
        let linkcond = try ProfiledLinkcond(upstream: echo.port, profile: "uplink.delay = 200 ms\n")
        defer { linkcond.stop() }
        let client = try TestConnection.connect(port: linkcond.port, timeout: 30)
        defer { client.close() }
        try client.send([1])
        #expect(try client.receive(exactly: 1) == [1])

        // Sent while the process is stopped: due 200 ms after, written once it runs again at least 1 s after.
        kill(linkcond.instance.process.processIdentifier, SIGSTOP)
        try client.send([2])
        usleep(1_000_000)
        kill(linkcond.instance.process.processIdentifier, SIGCONT)
        #expect(try client.receive(exactly: 1) == [2])
        let after = try #require(try linkcond.listenerStatus().uplink.deliveryLateness)
        let human = try linkcond.humanStatus()

        #expect(after.maxSeconds >= 0.2, "\(after)")
        let lines = human.split(separator: "\n")
        let header = try #require(lines.firstIndex { $0.hasPrefix("Late deliveries") }, "\(human)")
        let row = try #require(lines.dropFirst(header + 1).first, "\(human)").split(separator: " ").map(String.init)
        #expect(row.prefix(2) == ["tcp", "127.0.0.1:\(linkcond.port)"], "\(human)")
        #expect(
            row.dropFirst(2).prefix(4).joined(separator: " ") == "\(ms(after.p99Seconds)) \(ms(after.maxSeconds))",
            "\(human)")
        #expect(
            human.contains("--realtime, given to run, exec or attach, keeps its loop ahead of other processes"),
            "\(human)")
    }

    private func ms(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1e3) }
}
