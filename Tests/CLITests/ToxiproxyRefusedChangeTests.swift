import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// A Toxiproxy request that linkcond refuses changes nothing, driven against the real binary.
@Suite(.serialized)
struct ToxiproxyRefusedChangeTests {
    /// Moving a proxy onto a port another program holds is refused, and the proxy keeps listening where it did,
    /// enabled, with its upstream (it was left disabled on the new address before).
    @Test func aMoveOntoAPortInUseKeepsTheProxyWhereItWas() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let occupant = try TestServer.echo()
        defer { occupant.stop() }
        let linkcond = try RunningLinkcond(["run", "--toxiproxy", "127.0.0.1:0"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let api = ToxiproxyClient(port: try linkcond.readReadyPort())
        let created = try api.send(
            "POST", "/proxies", #"{"name":"web","listen":"127.0.0.1:0","upstream":"127.0.0.1:\#(echo.port)"}"#)
        let listen = try #require(created.object?["listen"] as? String)

        let refused = try api.send(
            "PATCH", "/proxies/web", #"{"listen":"127.0.0.1:\#(occupant.port)","upstream":"127.0.0.1:1"}"#)

        #expect(refused.status == 500, "\(refused.text)")
        #expect(
            (refused.object?["error"] as? String)?.contains("127.0.0.1:\(occupant.port)") == true, "\(refused.text)")
        let shown = try #require(try api.send("GET", "/proxies/web").object)
        #expect(shown["listen"] as? String == listen)
        #expect(shown["enabled"] as? Bool == true)
        #expect(shown["upstream"] as? String == "127.0.0.1:\(echo.port)")
        let port = try #require(listen.split(separator: ":").last.flatMap { UInt16($0) })
        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        try client.send(Array("still relayed".utf8))
        #expect(String(decoding: try client.receive(exactly: 13), as: UTF8.self) == "still relayed")
    }

    /// Enabling a disabled proxy on a port in use is refused and leaves it disabled, with its old address.
    @Test func anEnableOntoAPortInUseLeavesTheProxyDisabledAsItWas() throws {
        let occupant = try TestServer.echo()
        defer { occupant.stop() }
        let linkcond = try RunningLinkcond(["run", "--toxiproxy", "127.0.0.1:0"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let api = ToxiproxyClient(port: try linkcond.readReadyPort())
        _ = try api.send(
            "POST", "/proxies", #"{"name":"db","listen":"127.0.0.1:0","upstream":"127.0.0.1:9","enabled":false}"#)

        let refused = try api.send("PATCH", "/proxies/db", #"{"listen":"127.0.0.1:\#(occupant.port)","enabled":true}"#)

        #expect(refused.status == 500, "\(refused.text)")
        let shown = try #require(try api.send("GET", "/proxies/db").object)
        #expect(shown["listen"] as? String == "127.0.0.1:0")
        #expect(shown["enabled"] as? Bool == false)
    }
}

/// A Toxiproxy API client in raw HTTP/1.1, as its client libraries speak it: one request per connection.
struct ToxiproxyClient {
    let port: UInt16

    struct Answer {
        var status: Int
        var text: String
        var object: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] }
    }

    /// The request's bytes as a client writes them.
    func request(_ method: String, _ path: String, _ body: String = "") -> [UInt8] {
        Array(
            ("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: Go-http-client/1.1\r\n"
                + "Content-Length: \(body.utf8.count)\r\nContent-Type: application/json\r\n\r\n" + body).utf8)
    }

    func send(_ method: String, _ path: String, _ body: String = "") throws -> Answer {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(30))
        defer { stream.close() }
        try stream.write(request(method, path, body))
        return Self.answer(try stream.readToEnd())
    }

    /// The status and body of a whole answer.
    static func answer(_ bytes: [UInt8]) -> Answer {
        let text = String(decoding: bytes, as: UTF8.self)
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return Answer(status: status, text: body)
    }
}
