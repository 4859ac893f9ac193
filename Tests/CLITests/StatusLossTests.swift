import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond status` names what the TCP model lost, with the same counts `status --json` reports.
@Suite(.serialized)
struct StatusLossTests {
    @Test func aLossyDownloadShowsItsLostSegmentsAndACKsByDirection() throws {
        let payload = Payload(size: 300_000, seed: 5)
        var expected: [UInt8] = []
        payload.forEachBlock { expected += $0 }
        let source = try TestServer.sending(payload)
        defer { source.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-loss-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = directory.appendingPathComponent("lossy.profile").path
        try "bandwidth = 20 Mbit/s\ndelay = 2 ms\nloss = 5 %\nseed = 11\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let socket = directory.appendingPathComponent("control.sock").path
        let instance = try RunningLinkcond(["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(source.port)",
                                            "--profile", profile, "--control", socket])
        defer { _ = try? instance.stop() }
        let port = try instance.readReadyPort()
        _ = try instance.readLine()
        let client = try TestConnection.connect(port: port, timeout: 30)
        defer { client.close() }
        #expect(try client.receive(exactly: payload.size) == expected)

        let (listener, human) = try settledStatus(socket)

        #expect(listener.downlink.segmentsLost > 0)
        let lines = human.split(separator: "\n")
        let header = try #require(lines.firstIndex { $0.hasPrefix("TCP losses") }, "\(human)")
        let row = try #require(lines.dropFirst(header + 1).first, "\(human)")
        let counts = row.split(separator: " ").map(String.init)
        #expect(counts.prefix(2) == ["tcp", listener.address])
        #expect(Array(counts.dropFirst(2)) == lossCounts(listener).map(String.init), "\(row)")
    }

    /// The loss counts in the order the human view shows them.
    private func lossCounts(_ listener: StatusReport.Listener) -> [Int] {
        [listener.uplink.segmentsLost, listener.downlink.segmentsLost, listener.downlink.acksLost, listener.uplink.acksLost,
         listener.uplink.handshakeRetransmissions, listener.downlink.handshakeRetransmissions]
    }

    /// The human view taken between two JSON reports with the same loss counts, so a late ACK's loss cannot fall
    /// between the two reads being compared.
    private func settledStatus(_ socket: String) throws -> (StatusReport.Listener, String) {
        for _ in 0..<50 {
            let before = try report(socket)
            let human = try LinkcondProcess.run(["status", "--control", socket]).stdout
            let after = try report(socket)
            if lossCounts(before) == lossCounts(after) { return (after, human) }
        }
        throw TestError("the loss counters kept changing")
    }

    private func report(_ socket: String) throws -> StatusReport.Listener {
        let json = try LinkcondProcess.run(["status", "--json", "--control", socket])
        return try #require(try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).listeners.first)
    }
}
