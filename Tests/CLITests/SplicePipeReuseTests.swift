import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The splice pipes of `linkcond run`, counted in its own /proc/PID/fd: pipes are reused across connections, and
/// a connection holds one only while it has bytes to move.
@Suite(.serialized)
struct SplicePipeReuseTests {
    /// A `linkcond run` relaying to `upstream` under `none`, with its pipe descriptor count.
    private final class Relay {
        let linkcond: DescriptorExhaustionTests.LimitedLinkcond
        let port: UInt16
        let profile: String

        init(upstream: UInt16) throws {
            profile = try ExecEnvironment.profileFile("# nothing shaped: unshaped directions splice\n")
            linkcond = try DescriptorExhaustionTests.LimitedLinkcond(
                descriptorLimit: 1024,
                arguments: [
                    "run", "--profile", profile, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstream)",
                    "--control", "127.0.0.1:0",
                ])
            let ready = try linkcond.readyLines()
            port = try #require(
                ready.first { $0.hasPrefix("ready tcp") }.flatMap { line in
                    line.split(separator: " ").dropFirst(2).first?.split(separator: ":").last.flatMap { UInt16($0) }
                })
        }

        /// Pipe ends linkcond has open now.
        var pipeEnds: Int {
            let directory = "/proc/\(linkcond.process.processIdentifier)/fd"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return names.filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)"))?.hasPrefix("pipe:[")
                    == true
            }.count
        }

        func stop() {
            _ = linkcond.stop()
            try? FileManager.default.removeItem(atPath: profile)
        }
    }

    /// A burst long enough to go through a pipe: shorter ones are copied straight through and take none.
    static let burst = [UInt8](repeating: 7, count: 64 * 1024)

    private func echo(through port: UInt16, keepOpen: Bool = false) throws -> TestConnection {
        let client = try TestConnection.connect(port: port, timeout: 30)
        try client.send(Self.burst)
        _ = try client.receive(exactly: Self.burst.count)
        if !keepOpen { client.close() }
        return client
    }

    @Test func connectionsOneAfterAnotherReuseTheKeptPipes() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        let relay = try Relay(upstream: server.port)
        defer { relay.stop() }
        let atStart = relay.pipeEnds

        for _ in 0..<10 { _ = try echo(through: relay.port) }
        let settled = waitUntil(seconds: 30) { relay.pipeEnds <= atStart + 4 }
        let kept = relay.pipeEnds - atStart

        #expect(
            settled && kept >= 2,
            "ten connections left \(kept) pipe ends: one or two pipes, taken by each in turn, kept for the next")
    }

    @Test func idleConnectionsHoldNoPipeWhetherOrNotTheyEverSent() throws {
        let accepted = LockedBox(0)
        let server = try TestServer { connection in
            accepted.mutate { $0 += 1 }
            while let bytes = try? connection.receive(), !bytes.isEmpty { try? connection.send(bytes) }
            connection.close()
        }
        defer { server.stop() }
        let relay = try Relay(upstream: server.port)
        defer { relay.stop() }
        let atStart = relay.pipeEnds

        let silent = try (0..<10).map { _ in try TestConnection.connect(port: relay.port, timeout: 30) }
        defer { for connection in silent { connection.close() } }
        let talked = try (0..<10).map { _ in try echo(through: relay.port, keepOpen: true) }
        defer { for connection in talked { connection.close() } }
        #expect(waitUntil(seconds: 30) { accepted.value == 20 })
        let settled = waitUntil(seconds: 30) { relay.pipeEnds <= atStart + 4 }

        #expect(
            settled,
            "20 idle connections hold \(relay.pipeEnds - atStart) pipe ends; at most the two kept pipes expected")
    }
}
