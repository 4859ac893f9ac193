import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond run` out of file descriptors (`ulimit -n 64`): data listeners close new clients at once on a reserve
/// descriptor instead of leaving them queued (or spinning), say so once per episode, the control endpoint and the
/// Toxiproxy API still answer, and everything serves again once descriptors are free.
@Suite(.serialized)
struct DescriptorExhaustionTests {
    /// A `linkcond run` started by a shell that lowered its descriptor limit first.
    final class LimitedLinkcond {
        let process = Process()
        private let stdout = Pipe()
        private let stderr = Pipe()
        private let stderrData = LockedData()
        private let stderrDone = DispatchSemaphore(value: 0)
        private var pending = Data()

        init(descriptorLimit: Int, arguments: [String]) throws {
            let quoted = ([LinkcondProcess.executable.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \(quoted)"]
            process.standardOutput = stdout
            process.standardError = stderr
            try process.run()
            let handle = stderr.fileHandleForReading
            let box = stderrData
            let done = stderrDone
            Thread.detachNewThread {
                while case let chunk = handle.availableData, !chunk.isEmpty { box.data += chunk }
                done.signal()
            }
        }

        /// The ready lines, until the control endpoint's (the last one).
        func readyLines() throws -> [String] {
            var lines: [String] = []
            let handle = stdout.fileHandleForReading
            while lines.last?.hasPrefix("ready control") != true {
                if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                    continue
                }
                let chunk = handle.availableData
                if chunk.isEmpty { throw CLITestError("linkcond ended before its ready lines: \(lines)") }
                pending.append(chunk)
            }
            return lines
        }

        /// What the process has written on stderr so far.
        var stderrSoFar: String { String(decoding: stderrData.data, as: UTF8.self) }

        /// User plus system CPU time the process has used, from /proc.
        var cpuSeconds: Double {
            guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return 0 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
            return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        /// Stops the process with SIGTERM and returns what it wrote on stderr.
        func stop() -> String {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            _ = stderrDone.wait(timeout: .now() + 5)
            return String(decoding: stderrData.data, as: UTF8.self)
        }
    }

    /// A profile file that holds every new connection (`fault = blackhole`); the caller removes it.
    private static func blackholeProfile() throws -> URL {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-blackhole-\(UUID().uuidString.prefix(8)).profile")
        try "fault = blackhole\n".write(to: profile, atomically: true, encoding: .utf8)
        return profile
    }

    private static func port(of line: String) -> UInt16? {
        line.split(separator: " ").dropFirst(2).first?.split(separator: ":").last.flatMap { UInt16($0) }
    }

    @Test func theDNSForwarderClosesClientsWhileDescriptorsAreExhaustedAndServesOnceTheyAreFree() throws {
        let upstreamConnections = LockedBox(0)
        let upstream = try TestServer { connection in
            upstreamConnections.mutate { $0 += 1 }
            _ = try? connection.drain()
            connection.close()
        }
        defer { upstream.stop() }
        let profile = try Self.blackholeProfile()
        defer { try? FileManager.default.removeItem(at: profile) }
        let linkcond = try LimitedLinkcond(
            descriptorLimit: 64,
            arguments: [
                "run", "--profile", profile.path, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstream.port)",
                "--dns", "127.0.0.1:0", "--dns-upstream", "127.0.0.1:\(upstream.port)", "--control", "127.0.0.1:0",
            ])
        var stderr = ""
        defer { if stderr.isEmpty { _ = linkcond.stop() } }
        let ready = try linkcond.readyLines()
        let relayPort = try #require(ready.first { $0.hasPrefix("ready tcp") }.flatMap(Self.port(of:)))
        let dnsPort = try #require(ready.first { $0.hasPrefix("ready dns") }.flatMap(Self.port(of:)))

        var held = try (0..<100).map { _ in try TestConnection.connect(port: relayPort, timeout: 5) }
        // The DNS clients come once the relay's accepts have run linkcond out of descriptors: a listener takes one
        // client a turn, so DNS clients arriving earlier would share the last free descriptors with the relay's.
        let exhausted = waitUntil(seconds: 30) {
            linkcond.stderrSoFar.split(separator: "\n").contains {
                $0.contains("accept on 127.0.0.1:\(relayPort)") && $0.contains("closing new connections")
            }
        }
        #expect(exhausted, "the relay's listener never ran out of descriptors: \(linkcond.stderrSoFar)")
        let dnsClients = try (0..<3).map { _ in try TestConnection.connect(port: dnsPort, timeout: 5) }
        // Each is accepted on the reserve descriptor and closed at once: none waits in the kernel's queue.
        let endings = dnsClients.map { client in
            do { return "closed after \(try client.drain().count) bytes" } catch { return "\(error)" }
        }
        usleep(200_000)
        let window = 2.0
        let cpuBefore = linkcond.cpuSeconds
        usleep(UInt32(window * 1e6))
        let cpuUsed = linkcond.cpuSeconds - cpuBefore
        let connectedWhileExhausted = upstreamConnections.value
        // A reset, not a FIN: a blackholed connection whose client only closed its side is held until online.
        for connection in held { connection.closeWithReset() }
        held.removeAll()
        for client in dnsClients { client.close() }
        var laterClients: [TestConnection] = []
        let deadline = Date().addingTimeInterval(10)
        while upstreamConnections.value < 3 && Date() < deadline {
            if let client = try? TestConnection.connect(port: dnsPort, timeout: 5) { laterClients.append(client) }
            usleep(50_000)
        }
        let connectedAfterRelease = upstreamConnections.value
        for client in laterClients { client.close() }
        stderr = linkcond.stop()

        #expect(cpuUsed < window / 2, "linkcond used \(cpuUsed) s of CPU in \(window) s while out of descriptors")
        #expect(connectedWhileExhausted == 0)
        #expect(endings.allSatisfy { $0.hasPrefix("closed") || $0.contains("reset") }, "\(endings)")
        #expect(
            connectedAfterRelease >= 3,
            "only \(connectedAfterRelease) DNS connections reached the upstream after descriptors were freed")
        let dnsLines = stderr.split(separator: "\n").filter { $0.contains("accept on 127.0.0.1:\(dnsPort)") }
        let pauses = dnsLines.filter { $0.contains("closing new connections") }
        let resumes = dnsLines.filter { $0.contains("accepting again") }
        // One line when an episode starts and one when it ends, however many attempts failed in between. Freeing
        // the descriptors may start a short second episode while the backlogs drain, still open when linkcond stops.
        #expect(!pauses.isEmpty && !resumes.isEmpty && pauses.count <= resumes.count + 1, "\(dnsLines)")
        let firstAttempts = resumes.first?.split(separator: " ").reversed().dropFirst(2).first.flatMap { Int($0) } ?? 0
        #expect(firstAttempts >= 3, "the first episode logged once for \(firstAttempts) failed attempts: \(dnsLines)")
    }

    /// Under `blackhole`, a client that sent its request and closed its side is held until `online`; when an
    /// accept finds descriptors exhausted, those held clients are reset first, since they may be gone for good.
    @Test func theRelayResetsHeldClientsThatClosedTheirSideWhenDescriptorsRunOut() throws {
        let upstream = try TestServer.echo()
        defer { upstream.stop() }
        let profile = try Self.blackholeProfile()
        defer { try? FileManager.default.removeItem(at: profile) }
        let linkcond = try LimitedLinkcond(
            descriptorLimit: 64,
            arguments: [
                "run", "--profile", profile.path, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstream.port)",
                "--control", "127.0.0.1:0",
            ])
        defer { _ = linkcond.stop() }
        let relayPort = try #require(
            try linkcond.readyLines().first { $0.hasPrefix("ready tcp") }.flatMap(Self.port(of:)))
        let finished = try (0..<20).map { _ in try TestConnection.connect(port: relayPort, timeout: 5) }
        defer { for client in finished { client.close() } }
        for client in finished {
            try client.send(Array("request".utf8))
            client.shutdownWrite()
        }

        var held: [TestConnection] = []
        defer { for connection in held { connection.close() } }
        let gaveUp = waitUntil(seconds: 30) {
            if held.count < 100, let client = try? TestConnection.connect(port: relayPort, timeout: 5) {
                held.append(client)
            }
            return linkcond.stderrSoFar.contains("whose clients had closed their side")
        }

        #expect(gaveUp, "no held client was given up: \(linkcond.stderrSoFar)")
        // A reset, not the receive timeout a client still held would meet.
        let ending = Result { try finished[0].receive() }
        #expect("\(ending)".contains("Connection reset by peer"), "the first client that closed its side: \(ending)")
    }

    @Test func theTCPRelayGivesUpItsKeptSplicePipesWhenDescriptorsRunOut() throws {
        let upstream = try TestServer.echo()
        defer { upstream.stop() }
        let profile = try ExecEnvironment.profileFile("# nothing shaped: unshaped directions splice\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let linkcond = try LimitedLinkcond(
            descriptorLimit: 64,
            arguments: [
                "run", "--profile", profile, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstream.port)",
                "--control", "127.0.0.1:0",
            ])
        var stderr = ""
        defer { if stderr.isEmpty { _ = linkcond.stop() } }
        let relayPort = try #require(
            try linkcond.readyLines().first { $0.hasPrefix("ready tcp") }.flatMap(Self.port(of:)))
        let pid = linkcond.process.processIdentifier
        func pipeEnds() -> Int {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return names.filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix(
                    "pipe:[") == true
            }.count
        }
        func echoOnce() throws {
            let client = try TestConnection.connect(port: relayPort, timeout: 10)
            defer { client.close() }
            try client.send(SplicePipeReuseTests.burst)
            _ = try client.receive(exactly: SplicePipeReuseTests.burst.count)
        }
        let pipeEndsAtStart = pipeEnds()

        for _ in 0..<3 { try echoOnce() }
        let keptAfterEchoes = waitUntil(seconds: 30) { pipeEnds() > pipeEndsAtStart }
        let held = try (0..<60).map { _ in try TestConnection.connect(port: relayPort, timeout: 5) }
        let released = waitUntil(seconds: 30) { linkcond.stderrSoFar.contains("descriptors exhausted: closed") }
        for connection in held { connection.close() }
        var servedAgain = false
        for _ in 0..<100 where !servedAgain {
            servedAgain = (try? echoOnce()) != nil
            if !servedAgain { usleep(100_000) }
        }

        stderr = linkcond.stop()

        #expect(keptAfterEchoes, "no pipe kept after the echoes")
        #expect(released, "no kept pipe was closed when descriptors ran out: \(stderr)")
        #expect(servedAgain)
    }

    /// Relays hold every descriptor but the reserve: a new relay client is closed at once (not left in the kernel's
    /// queue), and the Toxiproxy API and the control endpoint still answer, again and again.
    @Test func theControlEndpointAndTheToxiproxyAPIAnswerWhileRelaysHoldEveryDescriptor() throws {
        let profile = try ExecEnvironment.profileFile("fault = blackhole\n")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let linkcond = try LimitedLinkcond(
            descriptorLimit: 64,
            arguments: [
                "run", "--profile", profile, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
                "--toxiproxy", "127.0.0.1:0", "--control", "127.0.0.1:0",
            ])
        var stderr = ""
        defer { if stderr.isEmpty { _ = linkcond.stop() } }
        let ready = try linkcond.readyLines()
        let relayPort = try #require(ready.first { $0.hasPrefix("ready tcp") }.flatMap(Self.port(of:)))
        let apiPort = try #require(ready.first { $0.hasPrefix("ready toxiproxy") }.flatMap(Self.port(of:)))
        let control = try #require(
            ready.first { $0.hasPrefix("ready control") }?.split(separator: " ").last.map(String.init))

        let held = try (0..<100).map { _ in try TestConnection.connect(port: relayPort, timeout: 5) }
        defer { for connection in held { connection.close() } }
        let exhausted = waitUntil(seconds: 30) { linkcond.stderrSoFar.contains("accept on 127.0.0.1:\(relayPort)") }
        let late = try TestConnection.connect(port: relayPort, timeout: 10)
        let lateEnding: String
        do { lateEnding = "closed after \(try late.drain().count) bytes" } catch { lateEnding = "\(error)" }
        late.close()
        let versions = try (0..<20).map { _ in try SelfLoopTests.request(port: apiPort, "GET", "/version").status }
        let statuses = try (0..<5).map { _ in try LinkcondProcess.run(["status", "--json", "--control", control]) }
        stderr = linkcond.stop()

        #expect(exhausted, "the relay never ran out of descriptors: \(stderr)")
        #expect(lateEnding.hasPrefix("closed") || lateEnding.contains("reset"), "\(lateEnding)")
        #expect(versions.allSatisfy { $0 == 200 }, "\(versions)")
        #expect(statuses.allSatisfy { $0.status == 0 }, "\(statuses.map(\.stderr))")
        let turnedAway =
            statuses.last.map { SelfLoopTests.listenerCounts("connectionsTurnedAway", in: $0.stdout).reduce(0, +) } ?? 0
        #expect(turnedAway >= 1, "\(statuses.last?.stdout ?? "")")
    }
}
