import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond exec`: real programs (curl, dig, python, sh, a static C client) in the conditioned namespace, against
/// servers on the host's loopback reached through the gateway address 198.18.0.2. Tests taking a mode run in the
/// faithful tun mode and in the proxy mode (forced with --mode proxy, as root). Timing is asserted never early (and
/// never faster than the rate); how late a loaded machine runs the programs is not linkcond's decision.
@Suite(
    .serialized,
    .enabled(if: ExecEnvironment.missing == nil, "linkcond exec cannot run here: \(ExecEnvironment.missing ?? "")"))
struct ExecCommandTests {
    /// exec's ready lines go to stderr, the program's stdout being its own: the name comes after the control line,
    /// and the instance's socket and descriptor are gone once it exits.
    @Test func execNamesItselfOnStderrAfterTheControlLineAndCleansUp() throws {
        let runtime = try ControlSecurityCommandTests.RuntimeDirectory()

        let result = try LinkcondProcess.run(
            ["exec", "--profile", "3g", "--name", "exec-test", "--", "true"], environment: runtime.environment,
            timeout: 60)

        let ready = result.stderr.split(separator: "\n").filter { $0.hasPrefix("ready ") }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(ready.count == 2 && ready[0].hasPrefix("ready control http://127.0.0.1:"), "\(result.stderr)")
        #expect(ready.last == "ready name exec-test", "\(result.stderr)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: runtime.privateDirectory + "/instances")) ?? []
        #expect(left.filter { !$0.hasPrefix(".") }.isEmpty, "\(left)")
    }

    @Test func curlDownloadsByteExactAtTheProfileRateAndItsConnectTakesOneRoundTrip() throws {
        var body = [UInt8]()
        Payload(size: 1 << 20, seed: 7).forEachBlock { body += $0 }
        let server = try HTTPFileServer(body: body)
        defer { server.stop() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-\(getpid()).bin")
        defer { try? FileManager.default.removeItem(at: output) }
        let profile = try ExecEnvironment.profileFile(
            "downlink.bandwidth = 4 Mbit/s\nuplink.bandwidth = 1 Mbit/s\ndelay = 50 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(
            [
                "exec", "--profile", profile, "--control", "127.0.0.1:0", "--",
                "curl", "-sS", "-o", output.path, "-w", "%{time_connect} %{time_starttransfer} %{time_total}",
                "http://198.18.0.2:\(server.port)/file",
            ], timeout: 60)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(try Data(contentsOf: output) == Data(body))
        let times = result.stdout.split(separator: " ").compactMap { Double($0) }
        try #require(times.count == 3, "curl's timings: \(result.stdout)")
        let (connect, firstByte, total) = (times[0], times[1], times[2])
        #expect(connect >= 0.100, "connect took \(connect) s; one round trip is 100 ms")
        let transfer = total - firstByte
        let wireBytes = Double(body.count) * 1500 / 1448
        let atRate = wireBytes * 8 / 4_000_000
        #expect(transfer >= atRate * 0.97 - 0.1, "1 MiB took \(transfer) s; at 4 Mbit/s it takes \(atRate) s")
    }

    @Test(arguments: ExecEnvironment.modes)
    func digPaysTheProfilesDNSDelayThroughTheForwarder(mode: String) throws {
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

        let result = try LinkcondProcess.run(
            [
                "exec", "--mode", mode, "--profile", profile, "--control", "127.0.0.1:0",
                "--dns-upstream", "127.0.0.1:\(resolver.port)", "--",
                "dig", "+tries=1", "+time=10", "example.test",
            ], timeout: 60)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("status: NOERROR"), "dig: \(result.stdout)")
        let line = result.stdout.split(separator: "\n").first { $0.contains("Query time:") } ?? ""
        let milliseconds = line.split(separator: " ").compactMap { Int($0) }.first ?? -1
        // tun: dns.delay plus one round trip of the link, which the query's packets cross; proxy: dns.delay, as the
        // proxy's DNS forwarder charges. dig truncates to whole milliseconds and starts its clock as it sends.
        let least = mode == "tun" ? 500 : 400
        #expect(
            milliseconds >= least - 1,
            "dig's query took \(milliseconds) ms in \(mode) mode with dns.delay 400 ms and a 100 ms round trip")
    }

    @Test func aUDPClientLosesWhatTheProfileSaysWithinTheBinomialInterval() throws {
        let server = try TestDatagramServer { _ in nil }
        defer { server.stop() }
        let profile = try ExecEnvironment.profileFile("uplink.loss = 10 %\nseed = 2024\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let sent = 2000
        let client = """
            import socket, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(\(sent)):
                s.sendto(i.to_bytes(4, "big"), ("198.18.0.2", \(server.port)))
                time.sleep(0.0005)
            """

        let result = try LinkcondProcess.run(
            ["exec", "--profile", profile, "--control", "127.0.0.1:0", "--", "python3", "-c", client],
            timeout: 120)
        let deadline = Date().addingTimeInterval(5)
        while server.datagrams.count < 1700 && Date() < deadline { usleep(10_000) }
        usleep(200_000)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let received = server.datagrams.count
        // n = 2000, p = 0.9: mean 1800, σ = 13.4; the 99 % interval is mean ± 2.576 σ. The profile's seed fixes the
        // draws, so a correct link does not fall outside it one run in a hundred by chance.
        #expect((1765...1835).contains(received), "\(received) of \(sent) datagrams arrived with 10 % loss")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/iperf3"), "iperf3 is not installed"))
    func iperf3OverUDPReportsTheProfilesLossWithinTheBinomialInterval() throws {
        let reserved = try TestServer { $0.close() }
        let port = reserved.port
        reserved.stop()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/iperf3")
        server.arguments = ["-s", "--forceflush", "-B", "127.0.0.1", "-p", String(port)]
        let announcements = Pipe()
        server.standardOutput = announcements
        try server.run()
        // SIGKILL: an iperf3 started from the test runner was seen with SIGTERM blocked in its signal mask.
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        try ExecEnvironment.waitForText("Server listening", on: announcements.fileHandleForReading)
        let profile = try ExecEnvironment.profileFile("uplink.loss = 10 %\nseed = 2024\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        // iperf3 (3.12) opens a UDP test with one datagram and waits 30 s for it when the link loses it (one run in
        // ten here), so each attempt gets 10 s and there are five: all five lose it once in 100 000 runs.
        let attempt = "timeout 10 iperf3 -u -c 198.18.0.2 -p \(port) -b 2M -l 1000 -t 2 --json > \"$0\""
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-iperf3-\(UUID()).json")
            .path
        defer { try? FileManager.default.removeItem(atPath: output) }

        let result = try LinkcondProcess.run(
            [
                "exec", "--profile", profile, "--control", "127.0.0.1:0", "--", "sh", "-c",
                "for i in 1 2 3 4 5; do \(attempt) && exit 0; done; exit 1", output,
            ], timeout: 90)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "iperf3: \(json)")
        let sum = try #require((report["end"] as? [String: Any])?["sum"] as? [String: Any], "iperf3: \(json)")
        let (packets, lost) = (sum["packets"] as? Int ?? 0, sum["lost_packets"] as? Int ?? -1)
        // Binomial, p = 0.1: the 99 % interval is the mean ± 2.576 σ.
        let (mean, sigma) = (Double(packets) * 0.1, (Double(packets) * 0.09).squareRoot())
        #expect(packets >= 400, "iperf3 sent \(packets) datagrams")
        #expect(
            abs(Double(lost) - mean) <= 2.576 * sigma,
            "iperf3 reports \(lost) of \(packets) datagrams lost with 10 % loss")
    }

    @Test(arguments: ExecEnvironment.modes)
    func passesTheProgramsExitStatusThrough(mode: String) throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-exec-noexec-\(getpid())")
        try Data("#!/bin/sh\n".utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let cases: [([String], Int32)] = [
            (["true"], 0), (["sh", "-c", "exit 3"], 3), (["sh", "-c", "kill -TERM $$"], 128 + SIGTERM),
            (["linkcond-no-such-program"], 127), ([script.path], 126),
        ]

        for (program, expected) in cases {
            let result = try LinkcondProcess.run(["exec", "--mode", mode, "--control", "127.0.0.1:0", "--"] + program)
            #expect(result.status == expected, "\(program): \(result.stderr)")
        }
    }

    @Test func saysWhenTheProgramIsMissingAsAShellWould() throws {
        let result = try LinkcondProcess.run(["exec", "--control", "127.0.0.1:0", "--", "linkcond-no-such-program"])

        #expect(result.status == 127)
        #expect(result.stderr.contains("linkcond-no-such-program: command not found"), "stderr: \(result.stderr)")
    }

    @Test(arguments: ExecEnvironment.modes)
    func aChildOfAChildCrossesTheLinkToo(mode: String) throws {
        let server = try HTTPFileServer(body: Array("hello".utf8))
        defer { server.stop() }

        let (result, firstByte) = try ExecEnvironment.firstByte(
            mode: mode, profile: "delay = 100 ms\n",
            command: [
                "sh", "-c", "sh -c 'curl -sS -m 10 -w \" %{time_starttransfer}\" http://198.18.0.2:\(server.port)/'",
            ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("hello"), "stdout: \(result.stdout)")
        #expect(
            firstByte >= 0.400,
            "the grandchild's first byte came after \(firstByte) s; set-up and request take two round trips of 200 ms")
    }

    @Test(arguments: ExecEnvironment.modes)
    func theGatewaysIPv6AddressReachesTheHostsIPv6LoopbackThroughTheLink(mode: String) throws {
        let server = Process()
        let announcements = Pipe()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = [
            "python3", "-c",
            """
            import socket, sys
            s = socket.socket(socket.AF_INET6)
            s.bind(("::1", 0)); s.listen(1)
            print(s.getsockname()[1], flush=True)
            c, _ = s.accept()
            c.recv(4096)
            c.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Length: 4\\r\\n\\r\\nsix!")
            c.close()
            """,
        ]
        server.standardOutput = announcements
        try server.run()
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let port = try #require(
            UInt16(
                String(decoding: announcements.fileHandleForReading.availableData, as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)))

        let (result, firstByte) = try ExecEnvironment.firstByte(
            mode: mode, profile: "delay = 100 ms\n",
            command: [
                "curl", "-sS", "-g", "-m", "10", "-w", " %{time_starttransfer}", "http://[fd0c:1c0d::2]:\(port)/",
            ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("six!"), "stdout: \(result.stdout)")
        #expect(
            firstByte >= 0.400,
            "the first byte over IPv6 came after \(firstByte) s; set-up and request take two round trips of 200 ms")
    }

    @Test(arguments: ExecEnvironment.modes)
    func forwardMakesTheHostsLoopbackPortReachableInsideThroughTheLink(mode: String) throws {
        let server = try HTTPFileServer(body: Array("forwarded".utf8))
        defer { server.stop() }

        let (result, firstByte) = try ExecEnvironment.firstByte(
            mode: mode, profile: "delay = 100 ms\n", arguments: ["--forward", "\(server.port)"],
            command: [
                "curl", "-sS", "-m", "10", "-w", " %{time_starttransfer}", "http://127.0.0.1:\(server.port)/",
            ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("forwarded"), "stdout: \(result.stdout)")
        #expect(
            firstByte >= 0.400,
            "the first byte through --forward came after \(firstByte) s; set-up and request take two round trips of 200 ms"
        )
    }

    @Test(arguments: ExecEnvironment.modes)
    func excludedDestinationsBypassTheLink(mode: String) throws {
        let server = try HTTPFileServer(body: Array("direct".utf8))
        defer { server.stop() }

        let (result, firstByte) = try ExecEnvironment.firstByte(
            mode: mode, profile: "delay = 10 s\n", arguments: ["--exclude", "198.18.0.0/30"],
            command: [
                "curl", "-sS", "-m", "20", "-w", " %{time_starttransfer}", "http://198.18.0.2:\(server.port)/",
            ])

        // Through the link the connect alone takes 20 s, when curl gives up (status 28): its success says the
        // exchange bypassed the link, however slow the machine.
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("direct"), "stdout: \(result.stdout)")
        #expect(firstByte >= 0, "curl reported no first byte: \(result.stdout)")
    }

    @Test(arguments: ExecEnvironment.modes)
    func theHostsLoopbackIsNotTheProgramsLoopback(mode: String) throws {
        let server = try HTTPFileServer(body: Array("host".utf8))
        defer { server.stop() }

        let result = try LinkcondProcess.run([
            "exec", "--mode", mode, "--control", "127.0.0.1:0", "--",
            "curl", "-sS", "-m", "5", "http://127.0.0.1:\(server.port)/",
        ])

        #expect(
            result.status == 7,
            "curl to the host's loopback port from inside: status \(result.status), \(result.stdout)")
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

    @Test func rejectsAnUnknownModeWithExitStatusTwoBeforeStartingTheProgram() throws {
        let result = try LinkcondProcess.run(["exec", "--mode", "slirp", "--", "sh", "-c", "echo started"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--mode \"slirp\": expected auto, tun or proxy."), "stderr: \(result.stderr)")
        #expect(!result.stdout.contains("started"))
    }

    /// linkcond started with only stdin, stdout and stderr open: the program gets those three and nothing else.
    @Test func theProgramInheritsNoDescriptorOfLinkcond() throws {
        let closeOthers =
            "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done 2>/dev/null; "
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            "-c", closeOthers + "exec \"$0\" exec --control 127.0.0.1:0 -- ls /proc/self/fd",
            LinkcondProcess.executable.path,
        ]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let listed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        #expect(process.terminationStatus == 0)
        // 3, if listed, is ls's own descriptor for the directory it reads.
        #expect(
            Set(listed.split(separator: "\n")).subtracting(["0", "1", "2", "3"]).isEmpty,
            "the program's descriptors: \(listed)")
    }

    @Test func aDatagramTheProfileDelayedCountsInTheExecListenersLateness() throws {
        let server = try TestDatagramServer { _ in nil }
        defer { server.stop() }
        let profile = try ExecEnvironment.profileFile("uplink.delay = 20 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-lateness-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("control.sock").path
        let done = directory.appendingPathComponent("done").path
        let client = """
            import os, socket, time
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("198.18.0.2", \(server.port)))
            for _ in range(3000):
                if os.path.exists("\(done)"): break
                time.sleep(0.01)
            """
        let running = try RunningLinkcond([
            "exec", "--profile", profile, "--control", socket, "--", "python3", "-c", client,
        ])
        try ExecEnvironment.waitForFile(socket)

        #expect(waitUntil(seconds: 30) { server.datagrams.count == 1 })
        let json = try LinkcondProcess.run(["status", "--json", "--control", socket]).stdout
        let exec = try JSONDecoder().decode(StatusReport.self, from: Data(json.utf8)).listeners.first {
            $0.kind == "exec"
        }
        #expect(FileManager.default.createFile(atPath: done, contents: nil))

        // At least the datagram's pass; the kernel may send a packet of its own (IPv6 neighbour discovery) too.
        #expect((exec?.uplink.deliveryLateness?.writes ?? 0) >= 1, "\(json)")
        #expect(running.waitForExit() == 0)
    }

    @Test(arguments: ExecEnvironment.modes)
    func offlineRefusesNewConnectionsAndOnlineLetsThemThrough(mode: String) throws {
        let server = try HTTPFileServer(body: Array("ok".utf8))
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-offline-\(getpid())-\(mode)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("control.sock").path
        let step = { (name: String) in directory.appendingPathComponent(name).path }
        let fetch = "curl -sS -m 10 -o /dev/null http://198.18.0.2:\(server.port)/; echo \"curl=$?\""
        let script =
            "until [ -e \(step("1")) ]; do sleep 0.02; done; \(fetch); touch \(step("2")); "
            + "until [ -e \(step("3")) ]; do sleep 0.02; done; \(fetch)"
        let running = try RunningLinkcond(["exec", "--mode", mode, "--control", socket, "--", "sh", "-c", script])

        try ExecEnvironment.waitForFile(socket)
        #expect(try LinkcondProcess.run(["offline", "--control", socket]).status == 0)
        #expect(FileManager.default.createFile(atPath: step("1"), contents: nil))
        let first = try running.readLine(timeout: 30)
        try ExecEnvironment.waitForFile(step("2"))
        #expect(try LinkcondProcess.run(["online", "--control", socket]).status == 0)
        #expect(FileManager.default.createFile(atPath: step("3"), contents: nil))
        let second = try running.readLine(timeout: 30)

        // tun: the connection request is answered with a reset, so curl could not connect (7). proxy: the program's
        // connect() succeeded on its loopback and linkcond resets the connection at once: curl could not connect
        // (7) or, when the reset comes after it sent its request, its receive failed (56) or the reply was empty (52).
        let refused: Set<String> = mode == "tun" ? ["curl=7"] : ["curl=7", "curl=52", "curl=56"]
        #expect(refused.contains(first), "offline: \(first)")
        #expect(second == "curl=0", "online: \(second)")
        #expect(running.waitForExit() == 0)
    }

    @Test(arguments: ExecEnvironment.modes)
    func resetCutsTheProgramsLiveConnection(mode: String) throws {
        let server = try TestServer { connection in
            _ = try? connection.receive()
            Thread.sleep(forTimeInterval: 20)
            connection.close()
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-reset-\(getpid())-\(mode)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("control.sock").path
        let script = "curl -sS -m 15 http://198.18.0.2:\(server.port)/ 2>/dev/null; echo \"curl=$?\""
        let running = try RunningLinkcond(["exec", "--mode", mode, "-v", "--control", socket, "--", "sh", "-c", script])

        try ExecEnvironment.waitForFile(socket)
        try ExecEnvironment.waitForConnection(control: socket)
        #expect(try LinkcondProcess.run(["reset", "--control", socket]).status == 0)
        let line = try running.readLine(timeout: 30)

        #expect(line == "curl=56", "curl after reset: \(line)")
        _ = try? running.stop(signal: SIGTERM)
    }

    @Test(arguments: ExecEnvironment.modes)
    func aProfileFaultResetsTheProgramsDownloadWithinItsBytes(mode: String) throws {
        var body = [UInt8]()
        Payload(size: 1 << 20, seed: 11).forEachBlock { body += $0 }
        let server = try HTTPFileServer(body: body)
        defer { server.stop() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-cut-\(getpid())-\(mode).bin")
        defer { try? FileManager.default.removeItem(at: output) }
        let profile = try ExecEnvironment.profileFile("downlink.cut.after = 100 KiB\ndownlink.cut.mode = reset\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(
            [
                "exec", "--mode", mode, "--profile", profile, "--control", "127.0.0.1:0", "--",
                "curl", "-sS", "-o", output.path, "http://198.18.0.2:\(server.port)/file",
            ], timeout: 60)

        #expect(result.status == 56, "curl's status: \(result.status), stderr: \(result.stderr)")
        let received = try Data(contentsOf: output)
        // The gateway's reset discards what was still in flight on the emulated link, as a real reset does: the
        // program gets a prefix of at most the cut's bytes.
        #expect(received.count > 0 && received.count < 100 * 1024, "body bytes before the cut: \(received.count)")
        #expect(received == Data(body.prefix(received.count)))
    }

    @Test func sigtermToLinkcondReachesTheProgram() throws {
        let running = try RunningLinkcond([
            "exec", "--control", "127.0.0.1:0", "--", "sh", "-c",
            "trap 'echo got-term; exit 5' TERM; echo started; while true; do sleep 0.05; done",
        ])
        #expect(try running.readLine(timeout: 30) == "started")

        let status = try running.stop(signal: SIGTERM, timeout: 20)

        #expect(status == 5)
        #expect(running.remainingStdout().contains("got-term"))
    }

    /// The program (a shell) and its child (a `sleep` it waits for) are found by a marker in their command lines,
    /// on the host's /proc: inside, they have pids of their own namespace. As uid 65534, the namespaces are built
    /// in a user namespace.
    @Test(arguments: [SIGTERM, SIGKILL], [false, true])
    func nothingTheProgramStartedOutlivesLinkcondEndedBy(signal: Int32, unprivileged: Bool) throws {
        var command = [LinkcondProcess.executable.path]
        if unprivileged {
            guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                ExecEnvironment.isReachable(command[0], byUser: 65534)
            else {
                print("skipped: needs root, setpriv and a binary uid 65534 can run")
                return
            }
            command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        }
        let marker = "300.\(UInt32.random(in: 100_000...999_999))"
        let running = try RunningLinkcond(
            Array(command.dropFirst()) + [
                "exec", "--control", "127.0.0.1:0", "--", "sh", "-c",
                "sleep \(marker); echo the sleep ended",
            ],
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"],
            executable: URL(fileURLWithPath: command[0]))
        defer { for pid in ExecEnvironment.processes(withArgument: marker).keys { kill(pid, SIGKILL) } }
        #expect(
            waitUntil(seconds: 30) { ExecEnvironment.processes(withArgument: marker).values.contains("sleep") },
            "the program's sleep did not start: \(running.stderrText)")

        let status = try? running.stop(signal: signal, timeout: 20)
        let gone = waitUntil(seconds: 20) { ExecEnvironment.processes(withArgument: marker).isEmpty }

        #expect(
            gone,
            "still running after linkcond ended by signal \(signal): \(ExecEnvironment.processes(withArgument: marker))"
        )
        // SIGTERM is passed on to the shell, which it ends: linkcond reports the shell's status.
        if signal == SIGTERM { #expect(status == 128 + SIGTERM) }
    }

    @Test func theProgramSeesOnlyItsOwnProcessesAndIsNotTheNamespacesInit() throws {
        let result = try LinkcondProcess.run([
            "exec", "--control", "127.0.0.1:0", "--", "sh", "-c",
            "echo $$; ls /proc | grep -c '^[0-9]'",
        ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        // The shell is pid 2 under the namespace's init; /proc lists the init, the shell, ls and grep.
        #expect(lines.first == "2", "the program's pid: \(result.stdout)")
        #expect(lines.count == 2 && (Int(lines[1]) ?? 99) <= 4, "processes in /proc: \(result.stdout)")
    }

    @Test(arguments: ExecEnvironment.modes)
    func repeatedRunsLeaveNoNamespaceProcessOrFileBehind(mode: String) throws {
        let before = ExecEnvironment.leftovers()

        for _ in 0..<10 {
            let result = try LinkcondProcess.run(["exec", "--mode", mode, "--control", "127.0.0.1:0", "--", "true"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
        }

        let after = ExecEnvironment.leftovers()
        #expect(after.helpers.subtracting(before.helpers).isEmpty, "namespace helpers still running: \(after.helpers)")
        #expect(after.files.subtracting(before.files).isEmpty, "files left: \(after.files.subtracting(before.files))")
        #expect(
            after.namespaces.subtracting(before.namespaces).count <= 1,
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
        process.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", binary, "exec", "--control", "127.0.0.1:0", "--",
            "sh", "-c", "ip -4 addr show lc0 | grep -q 198.18.0.1 && exit 9",
        ]
        process.environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"]
        try process.run()
        process.waitUntilExit()

        #expect(process.terminationStatus == 9, "as uid 65534, linkcond exec ended with \(process.terminationStatus)")
    }

    @Test func inProxyModeCurlDownloadsByteExactAtTheProfileRateAfterTwoRoundTrips() throws {
        var body = [UInt8]()
        Payload(size: 1 << 20, seed: 5).forEachBlock { body += $0 }
        let server = try HTTPFileServer(body: body)
        defer { server.stop() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-proxy-\(getpid()).bin")
        defer { try? FileManager.default.removeItem(at: output) }
        let profile = try ExecEnvironment.profileFile(
            "downlink.bandwidth = 4 Mbit/s\nuplink.bandwidth = 1 Mbit/s\ndelay = 50 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run(
            [
                "exec", "--mode", "proxy", "--profile", profile, "--control", "127.0.0.1:0", "--",
                "curl", "-sS", "-o", output.path, "-w", "%{time_starttransfer} %{time_total}",
                "http://198.18.0.2:\(server.port)/file",
            ], timeout: 60)

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(
            result.stderr.contains("proxy mode (--mode proxy): TCP through the proxy's TCP model"),
            "stderr: \(result.stderr)")
        #expect(try Data(contentsOf: output) == Data(body))
        let times = result.stdout.split(separator: " ").compactMap { Double($0) }
        try #require(times.count == 2, "curl's timings: \(result.stdout)")
        let (firstByte, total) = (times[0], times[1])
        // The proxy's TCP model: its handshake and the request each take a round trip of 100 ms.
        #expect(firstByte >= 0.200, "the first byte came after \(firstByte) s; two round trips are 200 ms")
        let atRate = Double(body.count) * 8 / 4_000_000
        let transfer = total - firstByte
        #expect(
            transfer >= atRate * 0.97 - 0.1, "1 MiB took \(transfer) s; at 4 Mbit/s of payload it takes \(atRate) s")
    }

    /// A machine whose /dev/net/tun is 0600, as many are: an unprivileged user gets the proxy mode, and is told so.
    @Test func anUnprivilegedUserWithoutTunFallsBackToProxyModeAndIsToldSo() throws {
        let closedDevice = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-notun-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: closedDevice) }
        guard let command = try ExecEnvironment.unprivilegedWithoutTun(closedDevice: closedDevice) else { return }
        let server = try HTTPFileServer(body: Array("fallback".utf8))
        defer { server.stop() }

        let result = try ExecEnvironment.runCommand(
            command + [
                "exec", "--control", "127.0.0.1:0", "--",
                "curl", "-sS", "-m", "10", "http://198.18.0.2:\(server.port)/",
            ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout == "fallback", "stdout: \(result.stdout)")
        #expect(result.stderr.contains("/dev/net/tun is not usable ("), "stderr: \(result.stderr)")
        #expect(
            result.stderr.contains("running in proxy mode: TCP through the proxy's TCP model"),
            "stderr: \(result.stderr)")
        #expect(result.stderr.contains("other UDP and ICMP are not carried"), "stderr: \(result.stderr)")
    }

    @Test func anUnprivilegedUserWithoutTunStillAsksDNSThroughTheForwarder() throws {
        let closedDevice = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-notun-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: closedDevice) }
        guard let command = try ExecEnvironment.unprivilegedWithoutTun(closedDevice: closedDevice) else { return }
        let resolver = try TestDatagramServer { query in
            guard query.count >= 12 else { return nil }
            var answer = query
            answer[2] |= 0x80
            answer[3] = 0x80
            return answer
        }
        defer { resolver.stop() }

        let result = try ExecEnvironment.runCommand(
            command + [
                "exec", "--dns-upstream", "127.0.0.1:\(resolver.port)", "--control", "127.0.0.1:0",
                "--", "dig", "+tries=1", "+time=10", "example.test",
            ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(
            result.stdout.contains("status: NOERROR") && result.stdout.contains("SERVER: 198.18.0.2#53"),
            "dig: \(result.stdout)")
        #expect(resolver.datagrams.count == 1)
    }

    /// In proxy mode nothing but TCP and DNS leaves the namespace, and what cannot leave fails at once rather than
    /// vanishing: UDP and a raw ICMP socket get EPERM, and the host's UDP server sees nothing.
    @Test func inProxyModeOtherUDPAndRawPacketsFailWithOperationNotPermitted() throws {
        let server = try TestDatagramServer { $0 }
        defer { server.stop() }
        let client = """
            import socket
            for kind, make, to in [("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM), ("198.18.0.2", \(server.port))),
                                   ("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), ("198.18.0.2", 0))]:
                try:
                    make().sendto(b"\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00", to)
                    print(kind, "sent")
                except OSError as error:
                    print(kind, error.errno)
            """

        let result = try LinkcondProcess.run([
            "exec", "--mode", "proxy", "--control", "127.0.0.1:0", "--", "python3", "-c", client,
        ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout == "udp \(EPERM)\nraw \(EPERM)\n", "stdout: \(result.stdout)")
        usleep(200_000)
        #expect(server.datagrams.isEmpty)
    }

    /// The program's namespace holds no interface that leads anywhere but to linkcond: loopback and `lc0` (whose
    /// veth peer, in proxy mode, sits in the same namespace and forwards nothing).
    @Test(arguments: ExecEnvironment.modes)
    func theProgramsNamespaceHasNoInterfaceButLoopbackAndLinkcondsOwn(mode: String) throws {
        let result = try LinkcondProcess.run([
            "exec", "--mode", mode, "--control", "127.0.0.1:0", "--",
            "sh", "-c", "ip -o link show | cut -d: -f2 | cut -d@ -f1; sysctl -n net.ipv4.ip_forward",
        ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let expected: Set<String> = mode == "tun" ? ["lo", "lc0"] : ["lo", "lc0", "lc0p"]
        #expect(Set(lines.dropLast()) == expected, "interfaces: \(lines)")
        #expect(lines.last == "0", "forwarding: \(lines)")
    }

    /// A host that forwards (a container engine turns `ip_forward` on) does not make the program's namespace forward:
    /// a new namespace copies the host's IPv4 settings, so linkcond turns forwarding off in it.
    @Test(.enabled(if: getuid() == 0, "setting the host's forwarding needs root"), arguments: ExecEnvironment.modes)
    func theProgramsNamespaceForwardsNothingWhenTheHostForwards(mode: String) throws {
        let settings = ["/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"]
        let saved = try settings.map { try String(contentsOfFile: $0, encoding: .utf8) }
        defer {
            for (path, value) in zip(settings, saved) {
                try? value.write(toFile: path, atomically: false, encoding: .utf8)
            }
        }
        for path in settings { try "1\n".write(toFile: path, atomically: false, encoding: .utf8) }

        let result = try LinkcondProcess.run([
            "exec", "--mode", mode, "--control", "127.0.0.1:0", "--",
            "sh", "-c", "cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding",
        ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout == "0\n0\n", "forwarding inside (IPv4, IPv6): \(result.stdout)")
    }

    /// A client that honours no proxy variable and links no libc dynamically crosses the link like any other.
    @Test(
        .enabled(if: ExecEnvironment.staticCompiler != nil, "gcc with a static libc is not installed"),
        arguments: ExecEnvironment.modes)
    func aStaticallyLinkedClientCrossesTheLink(mode: String) throws {
        let server = try HTTPFileServer(body: Array("static".utf8))
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-static-client-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = try ExecEnvironment.staticClient(in: directory)
        let profile = try ExecEnvironment.profileFile("delay = 100 ms\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }

        let result = try LinkcondProcess.run([
            "exec", "--mode", mode, "--profile", profile, "--control", "127.0.0.1:0", "--",
            client, "198.18.0.2", String(server.port),
        ])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let words = result.stdout.split(separator: " ")
        try #require(words.count == 2, "client: \(result.stdout)")
        #expect(words[0].hasSuffix("static"), "response: \(words[0])")
        let milliseconds = Int(words[1].trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect(
            milliseconds >= 400,
            "the response came \(milliseconds) ms after connect() began; set-up and request take two round trips of 200 ms"
        )
    }

    @Test(arguments: ExecEnvironment.modes)
    func statusCountsConnectionsAndBytesPerDestination(mode: String) throws {
        let (small, large) = (
            try HTTPFileServer(body: [UInt8](repeating: 1, count: 3000)),
            try HTTPFileServer(body: [UInt8](repeating: 2, count: 50_000))
        )
        defer {
            small.stop()
            large.stop()
        }
        let resolver = try TestDatagramServer(reply: ExecEnvironment.answering(ExecNamespace.gatewayAddressV4))
        defer { resolver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-status-\(getpid())-\(mode)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("control.sock").path
        let (done, leave) = (
            directory.appendingPathComponent("done").path, directory.appendingPathComponent("leave").path
        )
        let fetch = { (host: String, port: UInt16) in "curl -sS -m 10 -o /dev/null http://\(host):\(port)/" }
        let script =
            "\(fetch("198.18.0.2", small.port)); \(fetch("198.18.0.2", small.port)); \(fetch("files.test", large.port)); touch \(done); "
            + "until [ -e \(leave) ]; do sleep 0.02; done"
        let running = try RunningLinkcond([
            "exec", "--mode", mode, "--control", socket, "--control-token", "token-of-the-test",
            "--dns-upstream", "127.0.0.1:\(resolver.port)", "--", "sh", "-c", script,
        ])
        defer {
            _ = FileManager.default.createFile(atPath: leave, contents: nil)
            _ = try? running.stop(signal: SIGTERM)
        }
        try ExecEnvironment.waitForFile(done)

        let json = try LinkcondProcess.run([
            "status", "--json", "--control", socket, "--control-token", "token-of-the-test",
        ])
        let text = try LinkcondProcess.run([
            "status", "--wide", "--control", socket, "--control-token", "token-of-the-test",
        ])
        let metrics = try ExecEnvironment.fetch("/metrics", control: socket, token: "token-of-the-test")

        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "status: \(json.stdout)")
        let listener = try #require((report["listeners"] as? [[String: Any]])?.first)
        let rows = Dictionary(
            uniqueKeysWithValues: (listener["destinations"] as? [[String: Any]] ?? []).map {
                ($0["destination"] as? String ?? "", $0)
            })
        let (smallRow, largeRow) = (rows["198.18.0.2:\(small.port)"], rows["198.18.0.2:\(large.port)"])
        #expect(smallRow?["connections"] as? Int == 2, "rows: \(rows)")
        #expect(largeRow?["connections"] as? Int == 1, "rows: \(rows)")
        #expect(largeRow?["host"] as? String == "files.test" && smallRow?["host"] == nil, "rows: \(rows)")
        // Each response is its body plus a header of about 90 bytes; each request is a curl GET of about 80.
        #expect((6000...6400).contains(smallRow?["bytesDown"] as? Int ?? 0), "rows: \(rows)")
        #expect((50_000...50_200).contains(largeRow?["bytesDown"] as? Int ?? 0), "rows: \(rows)")
        #expect((100...400).contains(smallRow?["bytesUp"] as? Int ?? 0), "rows: \(rows)")
        #expect(text.stdout.contains("exec destination"), "status: \(text.stdout)")
        let largeLine =
            text.stdout.split(separator: "\n").first { $0.hasPrefix("198.18.0.2:\(large.port) (files.test) ") } ?? ""
        #expect(largeLine.split(separator: " ").dropFirst(2).first == "1", "status: \(text.stdout)")
        #expect(
            metrics.contains(
                "linkcond_destination_connections_total{destination=\"198.18.0.2:\(small.port)\",kind=\"exec\""),
            "metrics: \(metrics)")
        #expect(
            metrics.contains(
                "linkcond_destination_bytes_total{destination=\"198.18.0.2:\(large.port)\",direction=\"downlink\",kind=\"exec\""
            ), "metrics: \(metrics)")
    }

    @Test(arguments: ExecEnvironment.modes)
    func recordWritesTheProgramsConnectionsAndLookupsForTheReport(mode: String) throws {
        let server = try HTTPFileServer(body: [UInt8](repeating: 7, count: 20_000))
        defer { server.stop() }
        let resolver = try TestDatagramServer(reply: ExecEnvironment.answering(ExecNamespace.gatewayAddressV4))
        defer { resolver.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-record-exec-\(UUID()).jsonl")
            .path
        defer { for file in [path, path + ".html"] { try? FileManager.default.removeItem(atPath: file) } }

        let result = try LinkcondProcess.run(
            [
                "exec", "--mode", mode, "--record", path, "--dns-upstream", "127.0.0.1:\(resolver.port)",
                "--control", "127.0.0.1:0", "--",
                "curl", "-sS", "-m", "10", "-o", "/dev/null", "http://files.test:\(server.port)/",
            ], timeout: 60)
        let report = try LinkcondProcess.run(["report", path, "--json", "-o", path + ".html"])

        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(report.status == 0, "report: \(report.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        #expect(object["connectionCount"] as? Int == 1, "report: \(report.stdout)")
        // curl asks for A and AAAA; each answered lookup is recorded.
        #expect(
            object["lookups"] as? Int == resolver.datagrams.count && resolver.datagrams.count >= 1,
            "report: \(report.stdout)")
        let host = (object["hosts"] as? [[String: Any]])?.first { $0["host"] as? String == "files.test:\(server.port)" }
        #expect((20_000...20_200).contains(host?["bytesDown"] as? Int ?? 0), "hosts: \(object["hosts"] ?? "none")")
        let log = try String(contentsOfFile: path, encoding: .utf8)
        #expect(log.contains("\"listener\":\"exec\""), "recording: \(log.prefix(2000))")
    }
}

/// What `linkcond exec` needs from this machine, and the checks its tests share.
enum ExecEnvironment {
    /// The modes tests taking a mode run in.
    static let modes = ["tun", "proxy"]

    /// Why exec cannot run here, or nil.
    static let missing: String? = {
        if getuid() != 0 {
            return
                "the faithful mode's tests run as root (CI); unprivileged runs are covered by a test that drops to uid 65534"
        }
        if access("/dev/net/tun", R_OK | W_OK) != 0 { return "/dev/net/tun is not openable" }
        if !["/usr/sbin/nft", "/sbin/nft"].contains(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            return "nft is not installed (apt-get install nftables)"
        }
        for tool in ["curl", "dig", "python3"]
        where !["/usr/bin/", "/bin/"].contains(where: { FileManager.default.isExecutableFile(atPath: $0 + tool) }) {
            return "\(tool) is not installed"
        }
        return nil
    }()

    /// Runs `command` (which prints curl's `time_starttransfer` last, after a space) under `linkcond exec` in `mode`
    /// with a profile of `profileText` and `arguments` before `--`; its result and that first-byte time in seconds.
    static func firstByte(mode: String, profile profileText: String, arguments: [String] = [], command: [String]) throws
        -> (LinkcondProcess.Result, Double)
    {
        let profile = try profileFile(profileText)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let result = try LinkcondProcess.run(
            ["exec", "--mode", mode, "--profile", profile] + arguments + ["--control", "127.0.0.1:0", "--"] + command)
        return (result, Double(result.stdout.split(separator: " ").last ?? "") ?? -1)
    }

    static func profileFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-exec-\(UUID().uuidString).profile"
        ).path
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

    /// Reads `handle` until `text` appears (or it ends, or `timeout` passes).
    static func waitForText(_ text: String, on handle: FileHandle, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = Data()
        while Date() < deadline {
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { break }
            guard poller.revents != 0 else { continue }
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            seen += chunk
            if String(decoding: seen, as: UTF8.self).contains(text) { return }
        }
        throw CLITestError(
            "\"\(text)\" did not appear within \(timeout) s; seen: \(String(decoding: seen, as: UTF8.self))")
    }

    /// Waits until the instance at `control` reports a live connection.
    static func waitForConnection(control: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let status = try LinkcondProcess.run(["status", "--wide", "--control", control])
            let exec = status.stdout.split(separator: "\n").first { $0.hasPrefix("exec ") }?.split(separator: " ") ?? []
            if exec.count > 3, let live = Int(exec[3]), live >= 1 { return }
            usleep(100_000)
        }
        throw CLITestError("no live connection within \(timeout) s")
    }

    /// The live (not zombie) processes with `argument` in one of their command-line arguments, as the host sees
    /// them (linkcond and its helpers included): each pid with its program's name.
    static func processes(withArgument argument: String) -> [pid_t: String] {
        var found: [pid_t: String] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let arguments = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains(where: { $0.contains(argument) }) { found[pid] = arguments[0] }
        }
        return found
    }

    /// Helpers still running, linkcond's temporary files, and the network namespaces processes hold.
    /// The namespace helpers of this build's binary now running (their pids), and what exec leaves in /tmp and
    /// the namespaces processes hold. Helpers of another linkcond on the machine are not counted.
    static func leftovers() -> (helpers: Set<String>, files: Set<String>, namespaces: Set<String>) {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
        let binary = LinkcondProcess.executable.resolvingSymlinksInPath().path
        var helpers = Set<String>()
        var namespaces = Set<String>()
        for pid in processes {
            if let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                String(decoding: cmdline, as: UTF8.self).contains(ExecNamespace.helperCommand),
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == binary
            {
                helpers.insert(pid)
            }
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net") {
                namespaces.insert(target)
            }
        }
        let files = Set(
            ((try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []).filter {
                $0.hasPrefix("linkcond-exec-") && !$0.hasSuffix(".profile") && !$0.contains("offline")
                    && !$0.contains("reset") && !$0.contains("noexec")
            })
        return (helpers, files, namespaces)
    }

    /// A command that runs linkcond with the arguments that follow as uid 65534 on a machine whose /dev/net/tun
    /// that user cannot open: in a private mount namespace, `closedDevice`, made here as an empty root-owned 0600
    /// file, is bound over the device. Nil (the test then passes vacuously, saying why) when not root, setpriv or
    /// unshare is missing, or the binary is out of reach.
    static func unprivilegedWithoutTun(closedDevice closed: String) throws -> [String]? {
        let binary = LinkcondProcess.executable.path
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        else {
            print("skipped: needs root, setpriv and unshare")
            return nil
        }
        guard isReachable(binary, byUser: 65534) else {
            print("skipped: \(binary) is not readable by uid 65534")
            return nil
        }
        guard FileManager.default.createFile(atPath: closed, contents: nil, attributes: [.posixPermissions: 0o600])
        else {
            throw CLITestError("cannot create \(closed)")
        }
        return [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "sh", "-c",
            "mount --bind \"$0\" /dev/net/tun && exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \"$@\"",
            closed, binary,
        ]
    }

    /// Runs `command` (a full argument list) with a minimal environment and its output captured.
    static func runCommand(_ command: [String], timeout: Double = 60) throws -> LinkcondProcess.Result {
        try LinkcondProcess.run(
            Array(command.dropFirst()), environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"],
            timeout: timeout, executable: URL(fileURLWithPath: command[0]))
    }

    /// gcc, when it can link statically (libc.a installed).
    static let staticCompiler: String? = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gcc"),
            ["/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib/aarch64-linux-gnu/libc.a", "/usr/lib/libc.a"]
                .contains(where: FileManager.default.fileExists(atPath:))
        else { return nil }
        return "/usr/bin/gcc"
    }()

    /// A statically linked HTTP client built in `directory`: `client HOST PORT` prints the response and the
    /// milliseconds from the start of connect() to the response's first byte.
    static func staticClient(in directory: URL) throws -> String {
        let binary = directory.appendingPathComponent("client").path
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("client.c")
        try Data(
            """
            #include <arpa/inet.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <time.h>
            #include <unistd.h>
            int main(int argc, char **argv) {
                struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
                inet_pton(AF_INET, argv[1], &to.sin_addr);
                struct timespec start, first;
                clock_gettime(CLOCK_MONOTONIC, &start);
                int s = socket(AF_INET, SOCK_STREAM, 0);
                if (connect(s, (struct sockaddr *)&to, sizeof to) != 0) { perror("connect"); return 1; }
                const char *request = "GET / HTTP/1.0\\r\\n\\r\\n";
                write(s, request, strlen(request));
                char buffer[4096];
                size_t total = 0;
                ssize_t n;
                int timed = 0;
                while ((n = read(s, buffer + total, sizeof buffer - 1 - total)) > 0) {
                    if (!timed) { clock_gettime(CLOCK_MONOTONIC, &first); timed = 1; }
                    total += n;
                }
                buffer[total] = 0;
                char *body = strstr(buffer, "\\r\\n\\r\\n");
                long ms = (first.tv_sec - start.tv_sec) * 1000 + (first.tv_nsec - start.tv_nsec) / 1000000;
                printf("%s %ld\\n", body ? body + 4 : "", ms);
                return timed ? 0 : 1;
            }
            """.utf8
        ).write(to: source)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: staticCompiler ?? "/usr/bin/gcc")
        process.arguments = ["-static", "-O1", "-o", binary, source.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLITestError("gcc -static failed with status \(process.terminationStatus)")
        }
        return binary
    }

    /// The body of `GET path` on the control endpoint at the Unix socket `control`, with curl.
    static func fetch(_ path: String, control: String, token: String) throws -> String {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = [
            "-sS", "-m", "10", "--unix-socket", control, "-H", "Authorization: Bearer \(token)",
            "http://linkcond\(path)",
        ]
        process.standardOutput = output
        try process.run()
        let body = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLITestError("curl \(path) exited \(process.terminationStatus)")
        }
        return body
    }

    /// A resolver's answers for a test DNS server: every A question gets `address`, any other question no record.
    static func answering(_ address: [UInt8]) -> @Sendable ([UInt8]) -> [UInt8]? {
        { query in
            guard query.count >= 17, var end = query[12...].firstIndex(of: 0).map({ $0 + 1 }), end + 4 <= query.count
            else { return nil }
            let isA = query[end] == 0 && query[end + 1] == 1
            end += 4
            var answer = Array(query[..<end])
            answer[2] |= 0x80
            answer[3] = 0x80
            answer[6] = 0
            answer[7] = isA ? 1 : 0
            answer[8...11] = [0, 0, 0, 0]
            if isA { answer += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address }
            return answer
        }
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
            let header =
                "HTTP/1.0 200 OK\r\nContent-Length: \(body.count)\r\nContent-Type: application/octet-stream\r\n\r\n"
            try? connection.send(Array(header.utf8) + body)
            connection.shutdownWrite()
            _ = try? connection.receive()
            connection.close()
        }
    }

    func stop() { server.stop() }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
