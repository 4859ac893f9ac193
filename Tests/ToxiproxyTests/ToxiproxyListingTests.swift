import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The listing of every proxy is rendered off the event loop and keeps Toxiproxy's bytes.
@Suite(.serialized)
struct ToxiproxyListingTests {
    /// While the API's worker is held, `GET /proxies` waits and the loop still relays; once the worker is free the
    /// listing comes. (Rendered on the loop, it was answered at once.)
    @Test func theListingWaitsForTheWorkerWhileTheLoopRelays() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let port = try api.createProxy("web", upstreamPort: echo.port)
        let gate = DispatchSemaphore(value: 0)
        try api.proxy.attach { state in state.toxiproxy!.api.worker.parse({ gate.wait() }) {} }
        var held = true
        defer { if held { gate.signal() } }

        let listing = try TestConnection.connect(port: api.port)
        defer { listing.close() }
        try listing.send(Array("GET /proxies HTTP/1.1\r\nHost: 127.0.0.1:\(api.port)\r\n\r\n".utf8))
        // Two loop turns: the first may run in the batch that accepts the listing's connection, before it; the second
        // runs after that batch, in which the loop read the request and, rendering on the loop, answered it.
        try api.proxy.attach { _ in }
        try api.proxy.attach { _ in }
        let relayed = try TestConnection.connect(port: port)
        defer { relayed.close() }
        try relayed.send(Array("relayed meanwhile".utf8))
        let echoed = try relayed.receive(exactly: 17)
        var readable = pollfd(fd: listing.fd, events: Int16(POLLIN), revents: 0)
        let waiting = poll(&readable, 1, 0) == 0

        gate.signal()
        held = false
        let answer = ToxiproxyClientAnswer(try listing.readToEnd())

        #expect(String(decoding: echoed, as: UTF8.self) == "relayed meanwhile")
        #expect(waiting, "the listing was answered while the worker was held: it was rendered on the loop")
        #expect(answer.status == 200)
        #expect(answer.body.contains(#""name":"web""#), "\(answer.body)")
    }

    /// The listing's bytes are Toxiproxy's as linkcond wrote them before: members in creation order, JSON escapes
    /// for quotes, control characters and `<`, `>`, `&`, toxics with their attributes.
    @Test func theListingKeepsItsBytes() throws {
        let api = try ToxiproxyUnderTest()
        defer { api.stop() }
        let (populated, _) = try api.send(
            "POST", "/populate",
            #"[{"name":"b<\"\n","listen":"127.0.0.1:0","upstream":"x:1","enabled":false},{"name":"a","listen":"127.0.0.1:7","upstream":"y:2","enabled":false}]"#
        )
        #expect(populated == 201)
        let (added, _) = try api.send(
            "POST", "/proxies/a/toxics",
            #"{"name":"slow","type":"latency","stream":"upstream","attributes":{"latency":5}}"#)
        #expect(added == 200)

        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: api.port)!, timeout: .seconds(20))
        defer { stream.close() }
        try stream.write(Array("GET /proxies HTTP/1.1\r\nHost: 127.0.0.1:\(api.port)\r\n\r\n".utf8))
        let answer = ToxiproxyClientAnswer(try stream.readToEnd())

        #expect(
            answer.body
                == #"{"b\u003c\"\n":{"name":"b\u003c\"\n","listen":"127.0.0.1:0","upstream":"x:1","enabled":false,"toxics":[]},"a":{"name":"a","listen":"127.0.0.1:7","upstream":"y:2","enabled":false,"toxics":[{"name":"slow","type":"latency","stream":"upstream","toxicity":1,"attributes":{"latency":5,"jitter":0}}]}}"#
                + "\n")
    }
}

/// The status and body of a whole HTTP answer.
struct ToxiproxyClientAnswer {
    var status: Int
    var body: String

    init(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
    }
}

extension TestConnection {
    /// Reads until end of stream and returns the bytes.
    func readToEnd() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while case let chunk = try receive(max: 262_144), !chunk.isEmpty { bytes += chunk }
        return bytes
    }
}
