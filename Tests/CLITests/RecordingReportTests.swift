import Foundation
import LoopbackPeers
import Testing

/// `linkcond run --record` with real clients (curl, plain sockets) and `linkcond report` on what it wrote.
@Suite(.serialized)
struct RecordingReportTests {
    /// Where this test's recordings and reports go.
    let scratch = ScratchDirectory("linkcond-record")
    static let artefacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/test-artefacts/report").path
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs a recording linkcond in front of `upstreamPort`, calls `clients` with its listening port, stops it
    /// with SIGTERM and returns the recording's path.
    func record(upstreamPort: Int, profile: String = "none", extra: [String] = [], _ clients: (Int) throws -> Void)
        throws -> String
    {
        let path = scratch.file("app-\(UUID()).jsonl")
        let run = try RunningLinkcond(
            [
                "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstreamPort)",
                "--profile", profile, "--control", "127.0.0.1:0", "--record", path,
            ] + extra)
        let ready = try run.readLine()
        guard ready.hasPrefix("ready tcp "),
            let port = Int(ready.split(separator: " ")[2].split(separator: ":").last ?? "")
        else {
            throw CLITestError("expected a ready line, got \"\(ready)\"")
        }
        try clients(port)
        #expect(try run.stop() == 0)
        return path
    }

    func curl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-S", "--max-time", "60"] + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        if process.terminationStatus != 0 {
            throw CLITestError("curl \(arguments) exited \(process.terminationStatus)")
        }
    }

    func makeReport(_ path: String) throws -> [String: Any] {
        let result = try LinkcondProcess.run(["report", path, "--json", "-o", path + ".html"])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        else {
            throw CLITestError("linkcond report exited \(result.status): \(result.stderr)")
        }
        return object
    }

    func rules(_ report: [String: Any]) -> [String] {
        (report["findings"] as? [[String: Any]] ?? []).compactMap { $0["rule"] as? String }
    }

    func events(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    @Test func curlThroughARecordingRunLeavesOpenSetUpBytesDeliveryCloseAndProfileEvents() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port) { port in try curl(["http://127.0.0.1:\(port)/2000"]) }
        let log = try events(path)

        #expect(log.first?["ev"] as? String == "start" && log.first?["v"] as? Int == 1)
        let kinds = Set(log.compactMap { $0["ev"] as? String })
        #expect(
            kinds.isSuperset(of: ["profile", "open", "established", "send", "deliver", "close", "end"]), "\(kinds)")
        let down = log.filter { $0["ev"] as? String == "deliver" && $0["dir"] as? String == "down" }
        #expect(down.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) } > 2000)
        let close = log.first { $0["ev"] as? String == "close" }
        #expect(close?["reset"] as? Bool == false)
        #expect(log.first { $0["ev"] as? String == "open" }?["dest"] as? String == "127.0.0.1:\(upstream.port)")
    }

    @Test func serialRequestsEachOnANewConnectionAreReportedAsMissedReuseAndDependentRoundTrips() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port, profile: "dsl") { port in
            try curl(["-H", "Connection: close"] + (1...8).map { "http://127.0.0.1:\(port)/\($0 * 100)" })
        }
        let report = try makeReport(path)

        #expect(report["connectionCount"] as? Int == 8)
        #expect(rules(report).contains("reuse-missed"), "\(rules(report))")
        #expect(rules(report).contains("dependent-round-trips"), "\(rules(report))")
        #expect(!rules(report).contains("small-writes"))
        let reuse = (report["findings"] as! [[String: Any]]).first { $0["rule"] as? String == "reuse-missed" }!
        #expect((reuse["connections"] as? [Int])?.count == 7)
        #expect((reuse["threshold"] as? String)?.contains("5 s") == true)
    }

    /// On Edge (840 ms round trip) the set-up rule's 2.5 round trips leave the server and a busy machine 0.8 s.
    @Test func parallelRequestsGiveNoFindings() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port, profile: "edge") { port in
            try curl(
                ["--parallel", "--parallel-immediate", "--parallel-max", "8"]
                    + (1...8).flatMap { ["-o", "/dev/null", "http://127.0.0.1:\(port)/\($0 * 100)"] })
        }
        let report = try makeReport(path)

        #expect(report["connectionCount"] as? Int == 8)
        #expect(rules(report).isEmpty, "\(report["findings"] ?? [])")
    }

    /// A client that writes `size` bytes `count` times, each after the echo of the previous one came back, so each
    /// write reaches linkcond as its own read whatever the machine's speed.
    func echoExchanges(port: Int, size: Int, count: Int) throws {
        let connection = try TestConnection.connect(port: UInt16(port))
        defer { connection.close() }
        for _ in 0..<count {
            try connection.send([UInt8](repeating: 0x61, count: size))
            _ = try connection.receive(exactly: size)
        }
    }

    /// A client that writes `count` pieces of `size` bytes without waiting for any reply, each after the upstream
    /// received the previous one, so each reaches linkcond as its own read whatever the machine's speed.
    func piecesWithoutReply(size: Int, count: Int) throws -> String {
        let received = DispatchSemaphore(value: 0)
        let upstream = try TestServer { connection in
            while let bytes = try? connection.receive(), !bytes.isEmpty { received.signal() }
        }
        defer { upstream.stop() }
        return try record(upstreamPort: Int(upstream.port)) { port in
            let connection = try TestConnection.connect(port: UInt16(port))
            defer { connection.close() }
            for _ in 0..<count {
                try connection.send([UInt8](repeating: 0x61, count: size))
                guard received.wait(timeout: .now() + 20) == .success else {
                    throw CLITestError("the upstream did not receive a piece")
                }
            }
        }
    }

    @Test func tenByteWritesWithoutAReplyAreReportedAsSmallWritesAndTenKilobyteWritesAreNot() throws {
        let smallReport = try makeReport(try piecesWithoutReply(size: 10, count: 30))
        let finding = (smallReport["findings"] as! [[String: Any]]).first { $0["rule"] as? String == "small-writes" }
        #expect(finding != nil, "\(rules(smallReport))")
        #expect((finding?["numbers"] as? String)?.hasPrefix("1 of 1 connections") == true, "\(finding ?? [:])")
        #expect(finding?["connections"] as? [Int] == [1])
        #expect(!rules(try makeReport(try piecesWithoutReply(size: 10_000, count: 30))).contains("small-writes"))
    }

    /// Curl's whole GET is under 100 bytes: 25 connections that each wrote one are not small writes.
    @Test func twentyFiveSingleRequestCurlConnectionsAreNotSmallWrites() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port) { port in
            for size in 1...25 { try curl(["http://127.0.0.1:\(port)/\(size * 10)"]) }
        }
        let report = try makeReport(path)

        #expect(report["connectionCount"] as? Int == 25)
        #expect(!rules(report).contains("small-writes"), "\(report["findings"] ?? [])")
        let summary = try LinkcondProcess.run(["report", path, "-o", path + ".html"])
        #expect(summary.stdout.contains("connections: #2–#25"), "\(summary.stdout)")
    }

    /// One curl fetching five URLs over one kept-alive connection misses no reuse.
    @Test func oneKeptAliveConnectionForFiveRequestsIsNotMissedReuse() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port, profile: "dsl") { port in
            try curl((1...5).map { "http://127.0.0.1:\(port)/\($0 * 100)" })
        }
        let report = try makeReport(path)

        #expect(!rules(report).contains("reuse-missed"), "\(report["findings"] ?? [])")
        #expect(!rules(report).contains("set-up-cost"), "\(report["findings"] ?? [])")
    }

    @Test func aBulkTransferWritesOneSendAndOneDeliverLinePerTwentyMillisecondsNotOnePerRead() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port) { port in
            try curl(["-o", "/dev/null", "http://127.0.0.1:\(port)/8000000"])
        }
        let down = try events(path).filter { $0["dir"] as? String == "down" }

        for kind in ["send", "deliver"] {
            let lines = down.filter { $0["ev"] as? String == kind }
            let first = lines.compactMap { $0["t"] as? Int }.min() ?? 0
            let last = lines.compactMap { $0["last"] as? Int }.max() ?? 0
            let operations = lines.reduce(0) { $0 + ($1[kind == "send" ? "reads" : "writes"] as? Int ?? 0) }
            #expect(lines.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) } > 8_000_000)
            #expect(lines.count <= (last - first) / 20_000 + 1, "\(lines.count) \(kind) lines over \(last - first) µs")
            #expect(operations >= lines.count)
        }
    }

    /// A server sends 600 KB at once into dsl's 2 Mbit/s downlink: its sender is pushed back, and the log says so.
    @Test func aDownloadFasterThanTheLinkIsRecordedWithQueueStallsThatEnd() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port, profile: "dsl") { port in
            try curl(["-o", "/dev/null", "http://127.0.0.1:\(port)/600000"])
        }
        let log = try events(path)
        let stalls = log.filter { $0["ev"] as? String == "stall" }
        let resumes = log.filter { $0["ev"] as? String == "resume" }

        #expect(!stalls.isEmpty)
        #expect(stalls.allSatisfy { $0["cause"] as? String == "queue" && $0["dir"] as? String == "down" })
        #expect(resumes.count >= stalls.count - 1)
    }

    @Test func theLogStopsAtItsSizeLimitKeepsItsBeginningAndSaysWhere() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let path = try record(upstreamPort: Int(echo.port), extra: ["--record-limit", "4KiB"]) { port in
            for _ in 0..<40 { try echoExchanges(port: port, size: 10, count: 1) }
        }
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        let log = try events(path)

        #expect(size <= 4096)
        #expect(log.first?["ev"] as? String == "start")
        #expect(log.last?["ev"] as? String == "limit")
        let summary = try LinkcondProcess.run(["report", path, "-o", path + ".html"])
        #expect(summary.status == 0)
        #expect(summary.stdout.contains("reached its size limit"))
    }

    func reportError(_ text: String) throws -> LinkcondProcess.Result {
        let path = scratch.file("bad-\(UUID()).jsonl")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try LinkcondProcess.run(["report", path, "-o", path + ".html"])
    }

    @Test func aRunThatCannotBindLeavesAnEarlierRecordingOfThatNameAsItWas() throws {
        let taken = try TestServer.echo()
        defer { taken.stop() }
        let path = scratch.file("app-\(UUID()).jsonl")
        let earlier = "{\"v\":1,\"ev\":\"start\"}\n{\"t\":5,\"ev\":\"end\"}\n"
        try earlier.write(toFile: path, atomically: true, encoding: .utf8)

        let result = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:\(taken.port)", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--record", path,
        ])

        #expect(result.status == 1)
        #expect(result.stderr.lowercased().contains("address already in use"), "stderr: \(result.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == earlier)
    }

    @Test func aRunThatCannotBindLeavesNoRecordingBehind() throws {
        let taken = try TestServer.echo()
        defer { taken.stop() }
        let path = scratch.file("app-\(UUID()).jsonl")

        let result = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:\(taken.port)", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--record", path,
        ])

        #expect(result.status == 1)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aRecordingReplacesALongerEarlierFileOfThatName() throws {
        let path = scratch.file("app-\(UUID()).jsonl")
        try String(repeating: "x", count: 1 << 20).write(toFile: path, atomically: false, encoding: .utf8)

        let run = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--record", path,
        ])
        _ = try run.readLine()
        #expect(try run.stop() == 0)

        let replaced = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!replaced.contains("x"))
        #expect(try events(path).first?["ev"] as? String == "start")
    }

    /// A recording cut off mid-line (a full disk, a kill) is reported from its complete lines, with a warning
    /// naming the file and the cut line, and exit status 0.
    @Test func aRecordingCutShortMidLineIsReportedFromItsCompleteLinesWithAWarning() throws {
        let result = try reportError(
            "{\"v\":1,\"ev\":\"start\",\"wall\":\"x\"}\n"
                + "{\"t\":5,\"ev\":\"open\",\"conn\":1,\"listener\":\"l\",\"client\":\"c\",\"dest\":\"198.18.0.1:80\"}\n"
                + "{\"t\":9,\"ev\":\"close\",\"co")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains(".jsonl:3: the last line is cut short"), "\(result.stderr)")
        #expect(result.stdout.contains("1 connections"), "\(result.stdout)")
    }

    /// Only the last line may be cut: a damaged line with complete lines after it is still refused.
    @Test func aDamagedLineBeforeTheLastIsRefusedNamingIt() throws {
        let result = try reportError(
            "{\"v\":1,\"ev\":\"start\",\"wall\":\"x\"}\n{\"t\":5,\"ev\":\"op\n{\"t\":9,\"ev\":\"end\"}\n")
        #expect(result.status == 2)
        #expect(result.stderr.contains(".jsonl:2: not a JSON object"), "\(result.stderr)")
    }

    /// A file whose only line is cut has no complete start line: it is not a recording.
    @Test func aRecordingCutInsideItsFirstLineIsRefused() throws {
        let result = try reportError("{\"v\":1,\"ev\":\"sta")
        #expect(result.status == 2)
        #expect(result.stderr.contains(".jsonl:1: "), "\(result.stderr)")
    }

    @Test func aRecordingOfAnotherFormatVersionIsRefused() throws {
        let result = try reportError("{\"v\":7,\"ev\":\"start\",\"wall\":\"x\"}\n")
        #expect(result.status == 2)
        #expect(
            result.stderr.contains(".jsonl:1: recording format version 7; this linkcond reads version 1"),
            "\(result.stderr)")
    }

    @Test func aFileThatIsNotARecordingIsRefused() throws {
        let result = try reportError("hello\n")
        #expect(result.status == 2)
        #expect(result.stderr.contains(".jsonl:1: not a JSON object"), "\(result.stderr)")
    }

    @Test(.enabled(if: chromium != nil, "needs chromium (apt-get install chromium)"))
    func theReportPageRendersEveryConnectionRowInHeadlessChromiumWithoutAnyRequest() throws {
        let upstream = try HTTPUpstream()
        defer { upstream.stop() }
        let path = try record(upstreamPort: upstream.port, profile: "dsl") { port in
            try curl(["-H", "Connection: close"] + (1...6).map { "http://127.0.0.1:\(port)/\($0 * 100)" })
        }
        _ = try makeReport(path)
        let page = try String(contentsOfFile: path + ".html", encoding: .utf8)
        try FileManager.default.createDirectory(atPath: Self.artefacts, withIntermediateDirectories: true)

        let dom = try runChromium(["--dump-dom", "file://\(path).html"])
        _ = try runChromium([
            "--screenshot=\(Self.artefacts)/report.png", "--window-size=1400,900", "file://\(path).html",
        ])

        #expect(dom.components(separatedBy: "class=\"conn\"").count - 1 == 6)
        #expect(dom.contains("Connections not reused"))
        #expect(!page.contains("src=") && !page.contains("href=") && !page.contains("url("))
        #expect(page.contains("default-src 'none'"))
        #expect(FileManager.default.fileExists(atPath: Self.artefacts + "/report.png"))
    }

    func runChromium(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.chromium!)
        process.arguments =
            [
                "--headless", "--no-sandbox", "--disable-gpu",
                "--user-data-dir=\(FileManager.default.temporaryDirectory.path)/linkcond-report-chromium",
            ] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// A recording whose writes fail (a full disk) says so once, with the file and the error, instead of ending
    /// silently with a file the report then calls cut short. The disk is a full tmpfs of one page, mounted in a
    /// mount namespace of the test's own, so nothing outside sees it.
    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            "needs root and unshare to mount a tmpfs"))
    func aRecordingOnAFullDiskLogsTheWriteErrorOnce() throws {
        let disk = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-full-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: disk) }
        let path = disk + "/app.jsonl"
        let fill =
            #"mount -t tmpfs -o size=4k,mode=0700 tmpfs "$1" && { cat /dev/zero > "$1/fill" 2>/dev/null; shift; exec "$@"; }"#
        let linkcond = try RunningLinkcond(
            [
                "--mount", "--propagation", "private", "sh", "-c", fill, "sh", disk,
                LinkcondProcess.executable.path, "run", "--listen", "127.0.0.1:0",
                "--upstream", "127.0.0.1:9", "--control", "127.0.0.1:0", "--record", path,
            ],
            executable: URL(fileURLWithPath: "/usr/bin/unshare"))
        _ = try linkcond.readReadyPort()

        #expect(try linkcond.stop() == 0)
        let errors = linkcond.stderrText.split(separator: "\n").filter { $0.contains("recording \(path)") }
        #expect(errors.count == 1, "\(linkcond.stderrText)")
        #expect(
            errors.first?.contains("recording \(path): write: ") == true
                && errors.first?.contains("the recording ends after its first") == true,
            "\(linkcond.stderrText)")
    }
}

/// An HTTP/1.1 keep-alive server on 127.0.0.1 (Tests/record/http_upstream.py), stopped by closing its stdin.
final class HTTPUpstream {
    let process = Process()
    let input = Pipe()
    let port: Int
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("record/http_upstream.py").path

    init() throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", Self.script]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var bytes = Data()
        while !bytes.contains(0x0A) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            bytes += chunk
        }
        let line = String(decoding: bytes, as: UTF8.self)
        guard let port = Int(line.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "")
        else {
            throw CLITestError("the HTTP upstream said \"\(line)\" instead of its port")
        }
        self.port = port
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
