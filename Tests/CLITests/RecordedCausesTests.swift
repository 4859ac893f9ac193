import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What `run --record` writes beyond TCP bytes, and what `linkcond report --json` makes of it: UDP relay flows with
/// their datagrams and drops, stalls caused by connection faults, and stalls behind segments lost inside the TCP
/// model.
@Suite(.serialized)
struct RecordedCausesTests {
    let recordings = RecordingReportTests()

    /// A profile file holding `text`, in the test's scratch directory.
    func profileFile(_ text: String) throws -> String {
        let path = recordings.scratch.file("causes-\(UUID()).profile")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs a recording UDP relay in front of `upstream` under `profile`, calls `client` with the relay's port and a
    /// `linkcond status --json` reader, stops it and returns the recording's path.
    func recordUDP(upstream: UInt16, profile: String, _ client: (UInt16, () throws -> StatusReport) throws -> Void)
        throws -> String
    {
        let path = recordings.scratch.file("udp-\(UUID()).jsonl")
        let control = recordings.scratch.file("udp-\(UUID()).sock")
        let run = try RunningLinkcond([
            "run", "--udp-listen", "127.0.0.1:0", "--udp-upstream", "127.0.0.1:\(upstream)",
            "--profile", profile, "--control", control, "--record", path,
        ])
        let ready = try run.readLine()
        guard ready.hasPrefix("ready udp "),
            let port = UInt16(ready.split(separator: " ")[2].split(separator: ":").last ?? "")
        else {
            _ = try? run.stop()
            throw CLITestError("expected a ready line, got \"\(ready)\"")
        }
        _ = try run.readLine()
        let status = {
            let result = try LinkcondProcess.run(["status", "--json", "--control", control])
            return try JSONDecoder().decode(StatusReport.self, from: Data(result.stdout.utf8))
        }
        do {
            try client(port, status)
        } catch {
            _ = try? run.stop()
            throw error
        }
        #expect(try run.stop() == 0)
        return path
    }

    @Test func aUDPFlowIsRecordedWithItsDatagramsAndItsFaultDropsAndReportedAsAFlow() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let profile = try profileFile("uplink.cut.after = 300 B\n")
        let client = try TestDatagramSocket(timeout: 5)
        defer { client.close() }

        let path = try recordUDP(upstream: echo.port, profile: profile) { port, status in
            for _ in 0..<3 {
                try client.send([UInt8](repeating: 1, count: 100), to: port)
                _ = client.receive()
            }
            for _ in 0..<2 { try client.send([UInt8](repeating: 2, count: 100), to: port) }
            let counted = try waitUntil(seconds: 10) { try status().listeners[0].uplink.faultDrops == 2 }
            #expect(counted)
        }
        let log = try recordings.events(path)
        let report = try recordings.makeReport(path)

        let open = try #require(log.first { $0["ev"] as? String == "open" })
        #expect(open["proto"] as? String == "udp" && open["dest"] as? String == "127.0.0.1:\(echo.port)")
        let sentUp = log.filter { $0["ev"] as? String == "send" && $0["dir"] as? String == "up" }.reduce(0) {
            $0 + ($1["reads"] as? Int ?? 0)
        }
        #expect(sentUp == 3, "the cut flow's datagrams are drops, not sends")
        let drops = log.filter { $0["ev"] as? String == "drop" }
        #expect(drops.reduce(0) { $0 + ($1["datagrams"] as? Int ?? 0) } == 2)
        #expect(drops.allSatisfy { $0["cause"] as? String == "fault" && $0["dir"] as? String == "up" })
        #expect(report["flowCount"] as? Int == 1 && report["connectionCount"] as? Int == 0)
        #expect(report["datagramsUp"] as? Int == 3 && report["datagramsDown"] as? Int == 3)
        let dropTotals = report["datagramDrops"] as? [[String: Any]] ?? []
        #expect(
            dropTotals.count == 1 && dropTotals.first?["cause"] as? String == "fault"
                && dropTotals.first?["datagrams"] as? Int == 2)
        let page = try String(contentsOfFile: path + ".html", encoding: .utf8)
        #expect(page.contains("#1 udp 127.0.0.1:\(echo.port)") && page.contains("class=\"drop\""))
    }

    @Test func datagramsTheLinkLosesAreRecordedAsLossDrops() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let profile = try profileFile("uplink.loss = 100 %\n")
        let client = try TestDatagramSocket(timeout: 5)
        defer { client.close() }

        let path = try recordUDP(upstream: echo.port, profile: profile) { port, status in
            for _ in 0..<4 { try client.send([UInt8](repeating: 3, count: 50), to: port) }
            let lost = try waitUntil(seconds: 10) { try status().listeners[0].uplink.datagramsDropped == 4 }
            #expect(lost)
        }
        let report = try recordings.makeReport(path)

        let dropTotals = report["datagramDrops"] as? [[String: Any]] ?? []
        #expect(
            dropTotals.count == 1 && dropTotals.first?["cause"] as? String == "loss"
                && dropTotals.first?["datagrams"] as? Int == 4,
            "\(dropTotals)")
        #expect(echo.datagrams.isEmpty)
    }

    @Test func aConnectStallAndASlowFirstByteAreRecordedAsFaultStallsThatEnd() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let profile = try profileFile("connect.stall = 1 s\ndownlink.first-byte.delay = 500 ms\n")

        let path = try recordings.record(upstreamPort: upstream.port, profile: profile) { port in
            try recordings.curl(["-o", "/dev/null", "http://127.0.0.1:\(port)/2000"])
        }
        let log = try recordings.events(path)
        let report = try recordings.makeReport(path)

        let stalls = log.filter { $0["ev"] as? String == "stall" && $0["cause"] as? String == "fault" }
        let resumes = log.filter { $0["ev"] as? String == "resume" && $0["cause"] as? String == "fault" }
        #expect(
            stalls.contains { $0["dir"] as? String == "up" } && stalls.contains { $0["dir"] as? String == "down" },
            "\(stalls)")
        #expect(resumes.count == stalls.count)
        let connectStall = try #require(stalls.first { $0["dir"] as? String == "up" })
        let connectResume = try #require(resumes.first { $0["dir"] as? String == "up" })
        let held = (connectResume["t"] as? Int ?? 0) - (connectStall["t"] as? Int ?? 0)
        #expect(held >= 1_000_000, "the connect stall held the client \(held) µs for 1 s asked")
        let fault = (report["stalls"] as? [[String: Any]] ?? []).first { $0["cause"] as? String == "fault" }
        #expect((fault?["time"] as? Int ?? 0) >= 1_500_000, "\(String(describing: fault))")
        let page = try String(contentsOfFile: path + ".html", encoding: .utf8)
        #expect(page.contains("data-cause=\"fault\""))
    }

    @Test func segmentsLostInsideTheTCPModelAreRecordedAsLossStallsThatEnd() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let profile = try profileFile("bandwidth = 20 Mbit/s\ndelay = 10 ms\ndownlink.loss = 5 %\nseed = 7\n")

        let path = try recordings.record(upstreamPort: upstream.port, profile: profile) { port in
            try recordings.curl(["-o", "/dev/null", "http://127.0.0.1:\(port)/400000"])
        }
        let log = try recordings.events(path)
        let report = try recordings.makeReport(path)

        let stalls = log.filter { $0["ev"] as? String == "stall" && $0["cause"] as? String == "loss" }
        let resumes = log.filter { $0["ev"] as? String == "resume" && $0["cause"] as? String == "loss" }
        #expect(!stalls.isEmpty, "5 % loss over about 280 segments blocked the receiver at least once")
        #expect(stalls.allSatisfy { $0["dir"] as? String == "down" })
        #expect(resumes.count == stalls.count, "every hole was repaired before the download ended")
        let loss = (report["stalls"] as? [[String: Any]] ?? []).first { $0["cause"] as? String == "loss" }
        #expect(loss?["stalls"] as? Int == stalls.count)
    }
}
