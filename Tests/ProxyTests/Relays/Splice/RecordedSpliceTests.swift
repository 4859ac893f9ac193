import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Recording a pass-through connection: the bytes still move by splice, and the log still counts every one of them,
/// since each splice's count is a read or a write.
struct RecordedSpliceTests {
    @Test func aRecordedPassThroughDownloadSplicesAndItsLogCountsEveryByteReadAndDelivered() throws {
        let payload = Payload(size: 4 << 20, seed: 0x2EC0)
        let server = try TestServer.sending(payload)
        defer { server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-splice-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = ProxyOptions()
        options.recording = RecordingOptions(path: path)
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none, options: options)

        let client = try TestConnection.connect(port: proxy.port, timeout: 60)
        client.shutdownWrite()
        let received = try client.drain()
        client.close()
        let downlink = proxy.status()[0].downlink
        let pipesKept = proxy.report().splicePipesKept ?? 0
        proxy.stop()
        let recording = try Recording(contentsOf: path)

        #expect(received.count == payload.size)
        #expect(received.checksum == payload.digest.value)
        #expect(downlink.bytesSpliced == payload.size)
        #expect(pipesKept >= 1, "no pipe was taken for 4 MiB")
        let connection = try #require(recording.connections.first)
        let down = { (activities: [Recording.Activity]) in activities.filter { !$0.up } }
        #expect(down(connection.sends).reduce(0) { $0 + $1.bytes } == payload.size)
        #expect(down(connection.deliveries).reduce(0) { $0 + $1.bytes } == payload.size)
        #expect(down(connection.sends).reduce(0) { $0 + $1.operations } >= 1)
    }
}
