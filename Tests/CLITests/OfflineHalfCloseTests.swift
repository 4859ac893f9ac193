import Foundation
import LoopbackPeers
import Testing

/// `linkcond offline --blackhole` holds a new connection's request until `online`, whether or not the client
/// half-closed after it: the request and the end of stream both reach the upstream once the link is back.
@Suite(.serialized)
struct OfflineHalfCloseTests {
    @Test func aRequestAndHalfCloseSentWhileBlackholedReachTheUpstreamAfterOnlineAndAreAnswered() throws {
        let request = Array("GET /held HTTP/1.0\r\n\r\n".utf8)
        let answer = Array("answered after online".utf8)
        let upstreamSaw = LockedBox<(bytes: [UInt8], endOfStream: Bool)?>(nil)
        let upstream = try TestServer { connection in
            defer { connection.close() }
            var bytes: [UInt8] = []
            var ended = false
            while let chunk = try? connection.receive() {
                if chunk.isEmpty {
                    ended = true
                    break
                }
                bytes += chunk
            }
            upstreamSaw.value = (bytes, ended)
            if ended { try? connection.send(answer) }
        }
        defer { upstream.stop() }
        let linkcond = try ProfiledLinkcond(upstream: upstream.port, profile: "delay = 0 ms\n")
        defer { linkcond.stop() }
        let offline = try LinkcondProcess.run(["offline", "--blackhole", "--control", linkcond.controlSocket])
        try #require(offline.status == 0, "linkcond offline --blackhole: \(offline.stderr)")

        let client = try TestConnection.connect(port: linkcond.port)
        defer { client.close() }
        // Accepted (and so held) before the request and the FIN come: they arrive as the held connection's events.
        #expect(try waitUntil(seconds: 20) { try linkcond.listenerStatus().connectionsAccepted == 1 })
        try client.send(request)
        client.shutdownWrite()
        // The FIN is in linkcond's socket before `online` is even sent; the control request is read after it.
        let online = try LinkcondProcess.run(["online", "--control", linkcond.controlSocket])
        try #require(online.status == 0, "linkcond online: \(online.stderr)")

        var received: [UInt8] = []
        while let chunk = try? client.receive(), !chunk.isEmpty { received += chunk }
        #expect(received == answer, "the client got \(String(decoding: received, as: UTF8.self).debugDescription)")
        #expect(waitUntil(seconds: 20) { upstreamSaw.value != nil })
        #expect(upstreamSaw.value?.bytes == request)
        #expect(upstreamSaw.value?.endOfStream == true, "the upstream did not see the client's end of stream")
    }
}
