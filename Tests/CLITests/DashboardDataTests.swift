import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What the dashboard draws comes from the running binary: each connection's bytes, the profile's rate beside the
/// measured one, and the history the instance sampled before anyone asked.
@Suite(.serialized)
struct DashboardDataTests {
    static let sent = 50_000
    static let answered = 120_000

    @Test func theInstanceServesPerConnectionBytesTheProfilesRateAndTheHistoryOfATransferNobodyWatched() throws {
        let upstream = try TestServer { connection in
            defer { connection.close() }
            guard (try? connection.receive(exactly: Self.sent)) != nil else { return }
            try? connection.send([UInt8](repeating: 0x5A, count: Self.answered))
            // Held open until the client closes, so the connection is still listed when the test reads the list.
            while let chunk = try? connection.receive(), !chunk.isEmpty {}
        }
        defer { upstream.stop() }
        let linkcond = try ProfiledLinkcond(upstream: upstream.port, builtIn: "3g")
        defer { linkcond.stop() }
        let client = try TestConnection.connect(port: linkcond.port, timeout: 60)
        defer { client.close() }
        try client.send([UInt8](repeating: 0x41, count: Self.sent))
        _ = try client.receive(exactly: Self.answered)
        let control = ControlClient(address: .unix(linkcond.controlSocket))
        let shaped = try #require(Profile.builtIn(named: "3g")?.downlink.bandwidth).bitsPerSecond

        // The first request the instance sees; the transfer is over, so only the instance's own sampling saw it.
        var asked = Date().timeIntervalSince1970
        var history = try JSONDecoder().decode(
            HistoryReport.self, from: Data(control.send("GET", "/history").body.utf8))
        let start = MonotonicClock().now()
        while !history.points.contains(where: { $0.downlinkBitsPerSecond > 0 }), secondsSince(start) < 20 {
            Thread.sleep(forTimeInterval: 0.2)
            asked = Date().timeIntervalSince1970
            history = try JSONDecoder().decode(
                HistoryReport.self, from: Data(control.send("GET", "/history").body.utf8))
        }
        let connections = try JSONDecoder().decode(
            ConnectionList.self, from: Data(control.send("GET", "/connections").body.utf8))
        let status = try JSONDecoder().decode(StatusReport.self, from: Data(control.send("GET", "/status").body.utf8))

        let busy = history.points.filter { $0.downlinkBitsPerSecond > 0 }
        #expect(!busy.isEmpty, "\(history.points)")
        #expect(busy.allSatisfy { $0.time < asked }, "\(busy.map(\.time)) asked at \(asked)")
        #expect(history.points.contains { $0.uplinkBitsPerSecond > 0 })
        #expect(history.points.count <= 600)
        #expect(busy.allSatisfy { $0.downlinkCapacityBitsPerSecond == shaped })
        let entry = try #require(connections.connections.first, "\(connections)")
        #expect(connections.total == 1)
        #expect(entry.bytesUp == Self.sent)
        #expect(entry.bytesDown == Self.answered)
        let listener = try #require(status.listeners.first)
        #expect(listener.downlink.bandwidthBitsPerSecond == shaped)
        #expect(
            listener.uplink.bandwidthBitsPerSecond == Profile.builtIn(named: "3g")?.uplink.bandwidth?.bitsPerSecond)
    }

    @Test func aProfileWithoutARateServesNoCapacity() throws {
        let upstream = try TestServer { connection in connection.close() }
        defer { upstream.stop() }
        let linkcond = try ProfiledLinkcond(upstream: upstream.port, builtIn: "none")
        defer { linkcond.stop() }

        let json = try ControlClient(address: .unix(linkcond.controlSocket)).send("GET", "/status").body

        #expect(Profile.builtIn(named: "none")?.downlink.bandwidth == nil)
        #expect(!json.contains("bandwidthBitsPerSecond"), "\(json)")
    }
}
