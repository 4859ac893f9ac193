import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// The control endpoint's reports are rendered off the event loop: a thousand listeners make a long text, and the
/// loop relays meanwhile.
@Suite(.serialized)
struct ControlReportWorkerTests {
    /// While the API's worker is held, each report waits and the loop still relays; once the worker is free the
    /// report comes. (Rendered on the loop, it was answered at once.)
    @Test(arguments: ["/status", "/metrics", "/connections"])
    func aReportWaitsForTheWorkerWhileTheLoopRelays(_ path: String) throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let served = try proxy.serveControl(at: .tcp(Endpoint(host: "127.0.0.1", port: 0)))
        let controlPort = try #require(served.split(separator: ":").last.flatMap { UInt16($0) })
        let gate = DispatchSemaphore(value: 0)
        try proxy.attach { state in state.control!.api.worker.parse({ gate.wait() }) {} }
        var held = true
        defer { if held { gate.signal() } }
        // Open before the report is asked for, so that every report lists it.
        let relayed = try TestConnection.connect(port: proxy.port)
        defer { relayed.close() }
        try proxy.attach { _ in }
        try proxy.attach { _ in }

        let report = try TestConnection.connect(port: controlPort)
        defer { report.close() }
        try report.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(controlPort)\r\n\r\n".utf8))
        // Two loop turns: the first may run in the batch that accepts the report's connection, before it; the second
        // runs after that batch, in which the loop read the request and, rendering on the loop, answered it.
        try proxy.attach { _ in }
        try proxy.attach { _ in }
        try relayed.send(Array("relayed meanwhile".utf8))
        let echoed = try relayed.receive(exactly: 17)
        var readable = pollfd(fd: report.fd, events: Int16(POLLIN), revents: 0)
        let waiting = poll(&readable, 1, 0) == 0

        gate.signal()
        held = false
        let answer = String(decoding: try report.readToEnd(), as: UTF8.self)

        #expect(String(decoding: echoed, as: UTF8.self) == "relayed meanwhile")
        #expect(waiting, "\(path) was answered while the worker was held: it was rendered on the loop")
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(answer.contains("127.0.0.1:\(proxy.port)"), "\(path) does not name the listener: \(answer)")
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
