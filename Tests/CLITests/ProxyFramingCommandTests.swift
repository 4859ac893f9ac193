import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The HTTP proxy of the real binary refuses every loosely framed request (`LooseHTTPFramings`, the list the
/// in-process front-end tests send too) with 400, and forwards nothing of it.
@Suite(.serialized)
struct ProxyFramingCommandTests {
    @Test func everyLooseFramingIsAnsweredBadRequestAndNothingIsForwarded() throws {
        let connections = LockedBox(0)
        let received = LockedBox<[UInt8]>([])
        let origin = try TestServer { connection in
            defer { connection.close() }
            connections.mutate { $0 += 1 }
            while let chunk = try? connection.receive(), !chunk.isEmpty { received.mutate { $0 += chunk } }
        }
        defer { origin.stop() }
        let linkcond = try RunningLinkcond(["run", "--proxy", "127.0.0.1:0"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let proxyPort = try linkcond.readReadyPort()

        var answers: [(String, String)] = []
        for (framing, rest) in LooseHTTPFramings.all {
            let client = try TestConnection.connect(port: proxyPort, timeout: 20)
            defer { client.close() }
            try client.send(Array(LooseHTTPFramings.request(rest, originPort: origin.port).utf8))
            var answer: [UInt8] = []
            while let chunk = try? client.receive(), !chunk.isEmpty { answer += chunk }
            answers.append((framing, String(decoding: answer, as: UTF8.self)))
        }
        // A well-framed request afterwards reaches the origin: the refusals were not for want of a path to it.
        let control = try TestConnection.connect(port: proxyPort, timeout: 20)
        defer { control.close() }
        try control.send(
            Array(LooseHTTPFramings.request("Content-Length: 4\r\n\r\nbody", originPort: origin.port).utf8))
        for _ in 0..<2000 where connections.value == 0 { usleep(10_000) }

        #expect(answers.count == LooseHTTPFramings.all.count)
        for (framing, answer) in answers {
            #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(framing): \(answer)")
        }
        #expect(connections.value == 1, "the origin saw \(connections.value) connections")
        #expect(
            !String(decoding: received.value, as: UTF8.self).contains("smuggled"),
            "\(String(decoding: received.value, as: UTF8.self))")
    }
}
