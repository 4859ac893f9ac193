import Foundation
import LinkConditioner
import LoopbackPeers

/// A proxy with a token-protected control endpoint on 127.0.0.1, and a download through it that runs until
/// stopped: an upstream that sends as fast as the link takes, and a client that reads everything.
///
/// Bounded: the upstream stops after `limit` seconds or when its connection fails; the client when stopped.
final class SteadyDownload: @unchecked Sendable {
    let proxy: ConditionedProxy
    let source: TestServer
    let controlPort: UInt16
    let token = ControlToken.random()
    private let client: TestConnection
    private let received = LockedBox(0)
    private let clientDone = DispatchSemaphore(value: 0)

    init(profile: Profile, limit: Double = 120) throws {
        source = try TestServer { connection in
            defer { connection.close() }
            let block = [UInt8](repeating: 0x5A, count: 16384)
            let start = MonotonicClock().now()
            while secondsSince(start) < limit, (try? connection.send(block)) != nil {}
        }
        proxy = try ConditionedProxy.inFront(of: source.port, profile: profile)
        let served = try proxy.serveControl(at: .tcp(Endpoint(host: "127.0.0.1", port: 0)), token: token)
        controlPort = UInt16(served.split(separator: ":").last!)!
        client = try TestConnection.connect(port: proxy.port, timeout: 60)
        let (client, received, done) = (client, received, clientDone)
        Thread.detachNewThread {
            while let chunk = try? client.receive(), !chunk.isEmpty { received.mutate { $0 += chunk.count } }
            done.signal()
        }
    }

    /// Bytes the client has read so far.
    var bytesReceived: Int { received.value }

    /// Waits (at most `timeout` seconds) until the client has read `count` bytes.
    func waitForBytes(_ count: Int, timeout: Double = 60) throws {
        let start = MonotonicClock().now()
        while bytesReceived < count {
            guard secondsSince(start) < timeout else {
                throw TestError("only \(bytesReceived) of \(count) bytes in \(timeout) s")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Sends one request to the control endpoint with the token and the right Host, plus `extra` header lines.
    func request(_ method: String, _ path: String, token: String? = nil, extra: [String] = []) throws -> String {
        var lines = [
            "\(method) \(path) HTTP/1.1", "Host: 127.0.0.1:\(controlPort)", "Content-Length: 0",
            "Authorization: Bearer \(token ?? self.token)",
        ]
        lines += extra
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: controlPort)!, timeout: .seconds(20))
        defer { stream.close() }
        try stream.write(Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8))
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }

    /// The body of a 200 answer to `GET path`.
    func body(of path: String) throws -> String {
        let answer = try request("GET", path)
        guard answer.hasPrefix("HTTP/1.1 200 "), let split = answer.range(of: "\r\n\r\n") else {
            throw TestError("GET \(path): \(answer.prefix(300))")
        }
        return String(answer[split.upperBound...])
    }

    func stop() {
        client.shutdownWrite()
        proxy.stop()
        clientDone.wait()
        client.close()
        source.stop()
    }
}
