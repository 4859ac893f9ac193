import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What clients of the control endpoint that never read their answers can make linkcond hold: at most 16 MiB of
/// answers together, as for the Toxiproxy API (ToxiproxyBoundsTests). Driven against the real binary.
@Suite(.serialized)
struct ControlBoundsTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// Clients that ask for `/metrics` of 1000 listeners (3.3 MB, more than the kernel's send buffer takes) and
    /// never read it leave linkcond's memory within a bound: the answers they hold are closed to make room once they
    /// pass 16 MiB together. Another client still gets the whole report. Each held answer lasts the endpoint's 10 s
    /// exchange timeout, so the bound is reached if 6 reports are rendered within 10 s (one takes 0.6 s in a debug
    /// build here); the address sanitizer's build may be too slow for that, and its resident size says nothing of
    /// the bound, so the test does not run under it. The log line tells the bound apart: as the exchange timeout also
    /// ends held answers, memory grew by 22 MiB with the bound and 34 MiB without it here, both within the check.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil, "not under the address sanitizer"))
    func unreadReportsLeaveMemoryBoundedAndOthersServed() throws {
        let relays = (0..<Self.listeners).flatMap { _ in ["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"] }
        let linkcond = try RunningLinkcond(
            ["run", "--control", "127.0.0.1:0"] + relays, environment: ["LINKCOND_CONTROL_TOKEN": Self.token])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        var controlLine = ""
        // Binding 1000 listeners takes seconds in a debug build, more on a busy machine: wait for it generously.
        for _ in 0...Self.listeners where !controlLine.contains("control") {
            controlLine = try linkcond.readLine(timeout: 90)
        }
        let controlPort = try #require(controlLine.split(separator: ":").last.flatMap { UInt16($0) }, "\(controlLine)")
        let request = Array(
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(controlPort)\r\nAuthorization: Bearer \(Self.token)\r\n\r\n"
                .utf8)
        let before = try Self.exchange(request, port: controlPort)
        #expect(before.hasPrefix("HTTP/1.1 200 "), "\(before.prefix(200))")
        let baseline = try residentBytes(of: linkcond.process.processIdentifier)

        let unread = try (0..<Self.unreadClients).map { _ in
            let connection = try TestConnection.connect(port: controlPort, receiveBuffer: 4096)
            try connection.send(request)
            return connection
        }
        defer { for connection in unread { connection.close() } }
        // The endpoint renders reports in the order it read their requests, so this one comes after every unread one.
        let after = try Self.exchange(request, port: controlPort)
        let grown = try residentBytes(of: linkcond.process.processIdentifier) - baseline

        #expect(before.utf8.count * Self.unreadClients > 48 << 20, "a report of \(before.utf8.count) bytes")
        #expect(after.hasPrefix("HTTP/1.1 200 ") && after.hasSuffix("\n"), "\(after.suffix(200))")
        #expect(
            abs(after.utf8.count - before.utf8.count) < before.utf8.count / 10,
            "\(after.utf8.count) bytes after, \(before.utf8.count) before")
        #expect(
            linkcond.stderrText.contains(
                "control endpoint: answers unread by their clients hold 16 MiB; closing the one waiting longest"),
            "\(linkcond.stderrText)")
        #expect(grown < 40 << 20, "resident memory grew by \(grown >> 20) MiB")
    }

    static let unreadClients = 16
    static let listeners = 1000

    /// One request's whole answer from 127.0.0.1:`port`.
    static func exchange(_ request: [UInt8], port: UInt16) throws -> String {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(60))
        defer { stream.close() }
        try stream.write(request)
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }
}
