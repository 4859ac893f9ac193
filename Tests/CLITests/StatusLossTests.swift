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
        let linkcond = try ProfiledLinkcond(
            upstream: source.port, profile: "bandwidth = 20 Mbit/s\ndelay = 2 ms\nloss = 5 %\nseed = 11\n")
        defer { linkcond.stop() }
        let client = try TestConnection.connect(port: linkcond.port, timeout: 30)
        defer { client.close() }
        #expect(try client.receive(exactly: payload.size) == expected)

        let (listener, human) = try settledStatus(linkcond)

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
        [
            listener.uplink.segmentsLost, listener.downlink.segmentsLost, listener.downlink.acksLost,
            listener.uplink.acksLost,
            listener.uplink.handshakeRetransmissions, listener.downlink.handshakeRetransmissions,
        ]
    }

    /// The human view taken between two JSON reports with the same loss counts, so a late ACK's loss cannot fall
    /// between the two reads being compared.
    private func settledStatus(_ linkcond: ProfiledLinkcond) throws -> (StatusReport.Listener, String) {
        for _ in 0..<50 {
            let before = try linkcond.listenerStatus()
            let human = try linkcond.humanStatus()
            let after = try linkcond.listenerStatus()
            if lossCounts(before) == lossCounts(after) { return (after, human) }
        }
        throw TestError("the loss counters kept changing")
    }
}
