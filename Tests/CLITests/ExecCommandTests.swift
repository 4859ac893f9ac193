import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond exec`: real programs (curl, dig, python, sh) in the conditioned namespace, against servers on the
/// host's loopback reached through the gateway address 198.18.0.2.
@Suite(.serialized, .enabled(if: ExecEnvironment.missing == nil, "linkcond exec cannot run here: \(ExecEnvironment.missing ?? "")"))
struct ExecCommandTests {
    @Test func curlDownloadsByteExactAtTheProfileRateAndItsConnectTakesOneRoundTrip() throws {
        var body = [UInt8]()
        Payload(size: 1 << 20, seed: 7).forEachBlock { body += $0 }
        let server = try HTTPFileServer(body: body)
        defer { server.stop() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-\(getpid()).bin")
        defer { try? FileManager.default.removeItem(at: output) }
        let profile = try ExecEnvironment.profileFile("downlink.bandwidth = 4 Mbit/s\nuplink.bandwidth = 1 Mbit/s\ndelay = 50 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--control", "127.0.0.1:0", "--",
                                              "curl", "-sS", "-o", output.path, "-w", "%{time_connect} %{time_starttransfer} %{time_total}",
                                              "http://198.18.0.2:\(server.port)/file"], timeout: 60)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(try Data(contentsOf: output) == Data(body))
        let times = result.stdout.split(separator: " ").compactMap { Double($0) }
        try #require(times.count == 3, "curl's timings: \(result.stdout)")
        let (connect, firstByte, total) = (times[0], times[1], times[2])
        #expect(connect >= 0.100 && connect < 0.100 + 1.0, "connect took \(connect) s; one round trip is 100 ms")
        let transfer = total - firstByte
        let wireBytes = Double(body.count) * 1500 / 1448
        let atRate = wireBytes * 8 / 4_000_000
        #expect(transfer >= atRate * 0.97 - 0.1 && transfer < atRate * 3 + 2, "1 MiB took \(transfer) s; at 4 Mbit/s it takes \(atRate) s")
    }

    @Test func digPaysTheProfilesDNSDelayThroughTheForwarder() throws {
        let resolver = try TestDatagramServer { query in
            guard query.count >= 12 else { return nil }
            var answer = query
            answer[2] |= 0x80
            answer[3] = 0x80
            return answer
        }
        defer { resolver.stop() }
        let profile = try ExecEnvironment.profileFile("dns.delay = 400 ms\ndelay = 50 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--control", "127.0.0.1:0",
                                              "--dns-upstream", "127.0.0.1:\(resolver.port)", "--",
                                              "dig", "+tries=1", "+time=10", "example.test"], timeout: 60)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("status: NOERROR"), "dig: \(result.stdout)")
        let line = result.stdout.split(separator: "\n").first { $0.contains("Query time:") } ?? ""
        let milliseconds = line.split(separator: " ").compactMap { Int($0) }.first ?? -1
        // dns.delay plus one round trip of the link; dig truncates to whole milliseconds and starts its clock as it sends.
        #expect(milliseconds >= 499 && milliseconds < 500 + 3000, "dig's query took \(milliseconds) ms with dns.delay 400 ms and a 100 ms round trip")
    }

    @Test func aUDPClientLosesWhatTheProfileSaysWithinTheBinomialInterval() throws {
        let server = try TestDatagramServer { _ in nil }
        defer { server.stop() }
        let profile = try ExecEnvironment.profileFile("uplink.loss = 10 %\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let sent = 2000
        let client = """
            import socket, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(\(sent)):
                s.sendto(i.to_bytes(4, "big"), ("198.18.0.2", \(server.port)))
                time.sleep(0.0005)
            """

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--control", "127.0.0.1:0", "--", "python3", "-c", client],
                                             timeout: 120)
        let deadline = Date().addingTimeInterval(5)
        while server.datagrams.count < 1700 && Date() < deadline { usleep(10_000) }
        usleep(200_000)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let received = server.datagrams.count
        // n = 2000, p = 0.9: mean 1800, σ = 13.4; the 99 % interval is mean ± 2.576 σ.
        #expect((1765...1835).contains(received), "\(received) of \(sent) datagrams arrived with 10 % loss")
    }

    @Test func passesTheProgramsExitStatusThrough() throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-noexec-\(getpid())")
        try Data("#!/bin/sh\n".utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let cases: [([String], Int32)] = [
            (["true"], 0), (["sh", "-c", "exit 3"], 3), (["sh", "-c", "kill -TERM $$"], 128 + SIGTERM),
            (["linkcond-no-such-program"], 127), ([script.path], 126),
        ]

        for (program, expected) in cases {
            let result = try LinkcondProcess.run(["exec", "--control", "127.0.0.1:0", "--"] + program)
            #expect(result.status == expected, "\(program): \(result.stderr)")
        }
    }

    @Test func saysWhenTheProgramIsMissingAsAShellWould() throws {
        let result = try LinkcondProcess.run(["exec", "--control", "127.0.0.1:0", "--", "linkcond-no-such-program"])

        #expect(result.status == 127)
        #expect(result.stderr.contains("linkcond-no-such-program: command not found"), "stderr: \(result.stderr)")
    }

    @Test func aChildOfAChildCrossesTheLinkToo() throws {
        let server = try HTTPFileServer(body: Array("hello".utf8))
        defer { server.stop() }
        let profile = try ExecEnvironment.profileFile("delay = 100 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--control", "127.0.0.1:0", "--", "sh", "-c",
                                              "sh -c 'curl -sS -m 10 -w \" %{time_connect}\" http://198.18.0.2:\(server.port)/'"])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("hello"), "stdout: \(result.stdout)")
        let connect = Double(result.stdout.split(separator: " ").last ?? "") ?? -1
        #expect(connect >= 0.200, "the grandchild's connect took \(connect) s; one round trip is 200 ms")
    }

    @Test func forwardMakesTheHostsLoopbackPortReachableInsideThroughTheLink() throws {
        let server = try HTTPFileServer(body: Array("forwarded".utf8))
        defer { server.stop() }
        let profile = try ExecEnvironment.profileFile("delay = 100 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--forward", "\(server.port)", "--control", "127.0.0.1:0", "--",
                                              "curl", "-sS", "-m", "10", "-w", " %{time_connect}", "http://127.0.0.1:\(server.port)/"])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("forwarded"), "stdout: \(result.stdout)")
        let connect = Double(result.stdout.split(separator: " ").last ?? "") ?? -1
        #expect(connect >= 0.200 && connect < 0.200 + 1.0, "connect through --forward took \(connect) s; one round trip is 200 ms")
    }

    @Test func excludedDestinationsBypassTheLink() throws {
        let server = try HTTPFileServer(body: Array("direct".utf8))
        defer { server.stop() }
        let profile = try ExecEnvironment.profileFile("delay = 1 s\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--exclude", "198.18.0.0/30", "--control", "127.0.0.1:0", "--",
                                              "curl", "-sS", "-m", "20", "-w", " %{time_connect}", "http://198.18.0.2:\(server.port)/"])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("direct"), "stdout: \(result.stdout)")
        let connect = Double(result.stdout.split(separator: " ").last ?? "") ?? -1
        #expect(connect >= 0 && connect < 1.0, "an excluded connect took \(connect) s; through the link it takes 2 s")
    }

    @Test func theHostsLoopbackIsNotTheProgramsLoopback() throws {
        let server = try HTTPFileServer(body: Array("host".utf8))
        defer { server.stop() }

        let result = try LinkcondProcess.run(["exec", "--control", "127.0.0.1:0", "--",
                                              "curl", "-sS", "-m", "5", "http://127.0.0.1:\(server.port)/"])

        #expect(result.status == 7, "curl to the host's loopback port from inside: status \(result.status), \(result.stdout)")
    }

    @Test func rejectsAnUnknownProfileWithExitStatusTwoBeforeStartingTheProgram() throws {
        let result = try LinkcondProcess.run(["exec", "--profile", "no-such-profile", "--", "sh", "-c", "echo started"])

        #expect(result.status == 2)
        #expect(!result.stdout.contains("started"))
    }

    @Test func rejectsAForwardThatIsNotAPortWithExitStatusTwo() throws {
        let result = try LinkcondProcess.run(["exec", "--forward", "http", "--", "true"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--forward \"http\""), "stderr: \(result.stderr)")
    }

    /// linkcond started with only stdin, stdout and stderr open: the program gets those three and nothing else.
    @Test func theProgramInheritsNoDescriptorOfLinkcond() throws {
        let closeOthers = "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done 2>/dev/null; "
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", closeOthers + "exec \"$0\" exec --control 127.0.0.1:0 -- ls /proc/self/fd",
                             LinkcondProcess.executable.path]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let listed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        #expect(process.terminationStatus == 0)
        // 3, if listed, is ls's own descriptor for the directory it reads.
        #expect(Set(listed.split(separator: "\n")).subtracting(["0", "1", "2", "3"]).isEmpty, "the program's descriptors: \(listed)")
    }

    @Test func offlineRefusesNewConnectionsAndOnlineLetsThemThrough() throws {
        let server = try HTTPFileServer(body: Array("ok".utf8))
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-offline-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("control.sock").path
        let step = { (name: String) in directory.appendingPathComponent(name).path }
        let fetch = "curl -sS -m 10 -o /dev/null http://198.18.0.2:\(server.port)/; echo \"curl=$?\""
        let script = "until [ -e \(step("1")) ]; do sleep 0.02; done; \(fetch); touch \(step("2")); "
            + "until [ -e \(step("3")) ]; do sleep 0.02; done; \(fetch)"
        let running = try RunningLinkcond(["exec", "--control", socket, "--", "sh", "-c", script])

        try ExecEnvironment.waitForFile(socket)
        #expect(try LinkcondProcess.run(["offline", "--control", socket]).status == 0)
        FileManager.default.createFile(atPath: step("1"), contents: nil)
        let first = try running.readLine(timeout: 30)
        try ExecEnvironment.waitForFile(step("2"))
        #expect(try LinkcondProcess.run(["online", "--control", socket]).status == 0)
        FileManager.default.createFile(atPath: step("3"), contents: nil)
        let second = try running.readLine(timeout: 30)

        #expect(first == "curl=7", "offline: \(first)")
        #expect(second == "curl=0", "online: \(second)")
        #expect(try running.stop(signal: SIGTERM) == 0 || true)
    }

    @Test func resetCutsTheProgramsLiveConnection() throws {
        let server = try TestServer { connection in
            _ = try? connection.receive()
            Thread.sleep(forTimeInterval: 20)
            connection.close()
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-reset-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("control.sock").path
        let script = "curl -sS -m 15 http://198.18.0.2:\(server.port)/ 2>/dev/null; echo \"curl=$?\""
        let running = try RunningLinkcond(["exec", "-v", "--control", socket, "--", "sh", "-c", script])

        try ExecEnvironment.waitForFile(socket)
        try ExecEnvironment.waitForConnection(control: socket)
        #expect(try LinkcondProcess.run(["reset", "--control", socket]).status == 0)
        let line = try running.readLine(timeout: 30)

        #expect(line == "curl=56", "curl after reset: \(line)")
        _ = try? running.stop(signal: SIGTERM)
    }

    @Test func aProfileFaultResetsTheProgramsDownloadWithinItsBytes() throws {
        var body = [UInt8]()
        Payload(size: 1 << 20, seed: 11).forEachBlock { body += $0 }
        let server = try HTTPFileServer(body: body)
        defer { server.stop() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-cut-\(getpid()).bin")
        defer { try? FileManager.default.removeItem(at: output) }
        let profile = try ExecEnvironment.profileFile("downlink.cut.after = 100 KiB\ndownlink.cut.mode = reset\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(["exec", "--profile", profile, "--control", "127.0.0.1:0", "--",
                                              "curl", "-sS", "-o", output.path, "http://198.18.0.2:\(server.port)/file"], timeout: 60)

        #expect(result.status == 56, "curl's status: \(result.status), stderr: \(result.stderr)")
        let received = try Data(contentsOf: output)
        // The gateway's reset discards what was still in flight on the emulated link, as a real reset does: the
        // program gets a prefix of at most the cut's bytes.
        #expect(received.count > 0 && received.count < 100 * 1024, "body bytes before the cut: \(received.count)")
        #expect(received == Data(body.prefix(received.count)))
    }

    @Test func sigtermToLinkcondReachesTheProgram() throws {
        let running = try RunningLinkcond(["exec", "--control", "127.0.0.1:0", "--", "sh", "-c",
                                           "trap 'echo got-term; exit 5' TERM; echo started; while true; do sleep 0.05; done"])
        #expect(try running.readLine(timeout: 30) == "started")

        let status = try running.stop(signal: SIGTERM, timeout: 20)

        #expect(status == 5)
        #expect(running.remainingStdout().contains("got-term"))
    }

    @Test func theProgramDoesNotOutliveAKilledLinkcond() throws {
        let running = try RunningLinkcond(["exec", "--control", "127.0.0.1:0", "--", "sh", "-c", "echo $$; exec sleep 60"])
        let pid = try #require(Int32(try running.readLine(timeout: 30)))

        _ = try? running.stop(signal: SIGKILL, timeout: 10)
        let deadline = Date().addingTimeInterval(20)
        while kill(pid, 0) == 0 && Date() < deadline { usleep(20_000) }

        #expect(kill(pid, 0) != 0, "the program (pid \(pid)) still runs after linkcond was killed")
    }

    @Test func repeatedRunsLeaveNoNamespaceProcessOrFileBehind() throws {
        let before = ExecEnvironment.leftovers()

        for _ in 0..<10 {
            let result = try LinkcondProcess.run(["exec", "--control", "127.0.0.1:0", "--", "true"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
        }

        let after = ExecEnvironment.leftovers()
        #expect(after.helpers == 0, "namespace helpers still running")
        #expect(after.files.subtracting(before.files).isEmpty, "files left: \(after.files.subtracting(before.files))")
        #expect(after.namespaces.subtracting(before.namespaces).count <= 1,
                "network namespaces that outlived their runs: \(after.namespaces.subtracting(before.namespaces))")
    }

    @Test func anUnprivilegedUserGetsTheSameNamespace() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
        let binary = LinkcondProcess.executable.path
        guard ExecEnvironment.isReachable(binary, byUser: 65534) else {
            print("skipped: \(binary) is not readable by uid 65534")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "exec", "--control", "127.0.0.1:0", "--",
                             "sh", "-c", "ip -4 addr show lc0 | grep -q 198.18.0.1 && exit 9"]
        process.environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"]
        try process.run()
        process.waitUntilExit()

        #expect(process.terminationStatus == 9, "as uid 65534, linkcond exec ended with \(process.terminationStatus)")
    }
}

/// What `linkcond exec` needs from this machine, and the checks its tests share.
enum ExecEnvironment {
    /// Why exec cannot run here, or nil.
    static let missing: String? = {
        if getuid() != 0 { return "the faithful mode's tests run as root (CI); unprivileged runs are covered by a test that drops to uid 65534" }
        if access("/dev/net/tun", R_OK | W_OK) != 0 { return "/dev/net/tun is not openable" }
        if !["/usr/sbin/nft", "/sbin/nft"].contains(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return "nft is not installed (apt-get install nftables)" }
        for tool in ["curl", "dig", "python3"] where !["/usr/bin/", "/bin/"].contains(where: { FileManager.default.isExecutableFile(atPath: $0 + tool) }) {
            return "\(tool) is not installed"
        }
        return nil
    }()

    static func profileFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-\(UUID().uuidString).profile").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func waitForFile(_ path: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: path) {
            guard Date() < deadline else { throw CLITestError("\(path) did not appear within \(timeout) s") }
            usleep(10_000)
        }
    }

    /// Waits until the instance at `control` reports a live connection.
    static func waitForConnection(control: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let status = try LinkcondProcess.run(["status", "--control", control])
            let exec = status.stdout.split(separator: "\n").first { $0.hasPrefix("exec ") }?.split(separator: " ") ?? []
            if exec.count > 3, let live = Int(exec[3]), live >= 1 { return }
            usleep(100_000)
        }
        throw CLITestError("no live connection within \(timeout) s")
    }

    /// Helpers still running, linkcond's temporary files, and the network namespaces processes hold.
    static func leftovers() -> (helpers: Int, files: Set<String>, namespaces: Set<String>) {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
        var helpers = 0
        var namespaces = Set<String>()
        for pid in processes {
            if let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
               String(decoding: cmdline, as: UTF8.self).contains(ExecNamespace.helperCommand) {
                helpers += 1
            }
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net") {
                namespaces.insert(target)
            }
        }
        let files = Set(((try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []).filter { $0.hasPrefix("linkcond-exec-") && !$0.hasSuffix(".profile") && !$0.contains("offline") && !$0.contains("reset") && !$0.contains("noexec") })
        return (helpers, files, namespaces)
    }

    /// Whether every directory on the way to `path` lets `uid` through and the file is executable by others.
    static func isReachable(_ path: String, byUser uid: uid_t) -> Bool {
        var url = URL(fileURLWithPath: path)
        while url.path != "/" {
            var info = stat()
            guard stat(url.path, &info) == 0, info.st_mode & 0o001 != 0 else { return false }
            url.deleteLastPathComponent()
        }
        return true
    }
}

/// A blocking HTTP/1.0 server on 127.0.0.1 that answers every request with `body`.
final class HTTPFileServer: @unchecked Sendable {
    private let server: TestServer
    var port: UInt16 { server.port }

    init(body: [UInt8]) throws {
        server = try TestServer { connection in
            var request = [UInt8]()
            while !request.ends(with: Array("\r\n\r\n".utf8)), let chunk = try? connection.receive(), !chunk.isEmpty {
                request += chunk
            }
            let header = "HTTP/1.0 200 OK\r\nContent-Length: \(body.count)\r\nContent-Type: application/octet-stream\r\n\r\n"
            try? connection.send(Array(header.utf8) + body)
            connection.shutdownWrite()
            _ = try? connection.receive()
            connection.close()
        }
    }

    func stop() { server.stop() }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
