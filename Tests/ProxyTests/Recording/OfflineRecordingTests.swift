import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What a recording says about a connection made while offline: the profile change, the stall and its end.
struct OfflineRecordingTests {
    @Test func aConnectionHeldWhileOfflineIsRecordedAsAnOfflineStallThatEndsWhenTheLinkComesBack() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-offline-\(UUID()).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = ProxyOptions()
        options.recording = RecordingOptions(path: path)
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none, options: options)

        proxy.goOffline(.blackhole)
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        try client.send(Array("hello".utf8))
        let reachedProxy = Date().addingTimeInterval(20)
        while proxy.status()[0].connectionsAccepted == 0 && Date() < reachedProxy { usleep(10_000) }
        proxy.goOnline()
        #expect(try client.receive(exactly: 5) == Array("hello".utf8))
        proxy.stop()
        let recording = try Recording(contentsOf: path)

        #expect(recording.phases.map(\.offline) == [nil, "blackhole", nil])
        let stall = try #require(recording.connections.first?.stalls.first)
        #expect(stall.cause == "offline")
        #expect(stall.up)
        #expect(stall.end != nil && stall.end! >= recording.phases[2].start)
    }
}
