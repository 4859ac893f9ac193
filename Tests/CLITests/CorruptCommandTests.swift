import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `corrupt` end to end: a real UDP client through `linkcond run`, and the notice on a TCP-only listener.
@Suite(.timeLimit(.minutes(5)))
struct CorruptCommandTests {
    static let payload = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    /// How many bits `received` differs from the payload in, or nil if its length differs.
    static func flippedBits(_ received: [UInt8]) -> Int? {
        guard received.count == payload.count else { return nil }
        return zip(received, payload).map { ($0 ^ $1).nonzeroBitCount }.reduce(0, +)
    }

    @Test func tenPercentCorruptFlipsOneBitOfAsManyDatagramsAsStatusCounts() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-corrupt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = directory.appendingPathComponent("corrupt.profile").path
        try "corrupt = 10 %\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let control = directory.appendingPathComponent("control.sock").path
        let run = try RunningLinkcond([
            "run", "--udp-listen", "127.0.0.1:0", "--udp-upstream", "127.0.0.1:\(sink.port)",
            "--profile", profile, "--control", control,
        ])
        defer { _ = try? run.stop() }
        let ready = try run.readLine()
        guard ready.hasPrefix("ready udp "),
            let port = UInt16(ready.split(separator: " ")[2].split(separator: ":").last ?? "")
        else {
            throw CLITestError("expected a ready line, got \"\(ready)\"")
        }
        _ = try run.readLine()
        let status = {
            let result = try LinkcondProcess.run(["status", "--json", "--control", control])
            return try JSONDecoder().decode(StatusReport.self, from: Data(result.stdout.utf8)).listeners[0].uplink
        }
        let client = try TestDatagramSocket(timeout: 5)
        defer { client.close() }

        let sent = 2000
        for number in 0..<sent {
            try client.send(Self.payload, to: port)
            // Paced, so neither linkcond's nor the sink's receive buffer overflows.
            if number % 50 == 49 { usleep(2000) }
        }
        var uplink = try status()
        let settled = try waitUntil(seconds: 20) {
            uplink = try status()
            return uplink.datagramsDelivered + uplink.datagramsDropped + uplink.kernelDrops == sent
                && sink.datagrams.count == uplink.datagramsDelivered
        }
        #expect(settled)

        let received = sink.datagrams
        let flips = received.map(Self.flippedBits)
        let oneBit = flips.filter { $0 == 1 }.count
        #expect(flips.allSatisfy { $0 == 0 || $0 == 1 })
        #expect(uplink.datagramsCorrupted == oneBit)
        // Within 5 standard deviations of the binomial mean, over the datagrams that crossed.
        let trials = Double(received.count)
        #expect(received.count >= sent * 9 / 10)
        #expect(abs(Double(oneBit) - trials * 0.1) <= 5 * (trials * 0.1 * 0.9).squareRoot())
        #expect(try run.stop() == 0)
    }

    @Test func aTCPOnlyRunIsToldThatCorruptActsOnDatagramsOnly() throws {
        let upstream = try TestServer { _ in }
        defer { upstream.stop() }
        let linkcond = try ProfiledLinkcond(upstream: upstream.port, profile: "uplink.corrupt = 5 %\n")
        let noticed = waitUntil(seconds: 10) {
            linkcond.instance.stderrText.contains("uplink.corrupt act on datagrams only")
        }
        linkcond.stop()
        #expect(noticed)
    }
}
