import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// How `linkcond run` protects its control endpoint, and how the other commands still reach it without ceremony.
@Suite(.serialized)
struct ControlSecurityCommandTests {
    /// A fresh `XDG_RUNTIME_DIR` (mode 0700) for one test, removed afterwards.
    final class RuntimeDirectory {
        let path: String
        var environment: [String: String] {
            ["XDG_RUNTIME_DIR": path, "LINKCOND_CONTROL": "", "LINKCOND_CONTROL_TOKEN": "", "LINKCOND_NAME": ""]
        }
        var privateDirectory: String { path + "/linkcond" }

        init() throws {
            path =
                FileManager.default.temporaryDirectory.appendingPathComponent("lc-xdg-\(UUID().uuidString.prefix(8))")
                .path
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    private func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }

    @Test func runWritesAPrivateTokenFileTheCommandsFindAndRemovesItOnExit() throws {
        let runtime = try RuntimeDirectory()
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try RunningLinkcond(
            ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)", "--profile", "3g"],
            environment: runtime.environment)
        _ = try linkcond.readLine()
        let control = try linkcond.readLine()
        let port = try #require(control.split(separator: ":").last.flatMap { UInt16($0) })
        let tokenFile = runtime.privateDirectory + "/control-\(port).token"

        let tokenFileMode = mode(tokenFile)
        let directoryMode = mode(runtime.privateDirectory)
        let viaTCP = try LinkcondProcess.run(
            ["use", "edge", "--control", "http://127.0.0.1:\(port)"], environment: runtime.environment)
        let viaDefaultSocket = try LinkcondProcess.run(["status"], environment: runtime.environment)
        let withoutToken = try rawHTTP(port: port, "POST /online HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        let exit = try linkcond.stop(signal: SIGTERM)

        #expect(tokenFileMode == 0o600)
        #expect(directoryMode == 0o700)
        #expect(viaTCP.status == 0, "\(viaTCP.stderr)")
        #expect(viaDefaultSocket.status == 0, "\(viaDefaultSocket.stderr)")
        #expect(viaDefaultSocket.stdout.contains("profile   edge:"), "\(viaDefaultSocket.stdout)")
        #expect(withoutToken.hasPrefix("HTTP/1.1 401 "), "\(withoutToken)")
        #expect(exit == 0)
        #expect(!FileManager.default.fileExists(atPath: tokenFile), "the token file outlived linkcond")
        #expect(
            !FileManager.default.fileExists(atPath: runtime.privateDirectory + "/instances/3g-1.sock"),
            "the socket outlived linkcond")
    }

    @Test func anExplicitTokenIsUsedAsGivenAndNoTokenFileIsWritten() throws {
        let runtime = try RuntimeDirectory()
        let linkcond = try RunningLinkcond(
            ["run", "--proxy", "127.0.0.1:0", "--control-token", "chosen-by-the-test"],
            environment: runtime.environment)
        _ = try linkcond.readLine()
        let port = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })

        let withToken = try LinkcondProcess.run(
            ["status", "--control", "http://127.0.0.1:\(port)", "--control-token", "chosen-by-the-test"],
            environment: runtime.environment)
        let fromEnvironment = try LinkcondProcess.run(
            ["status", "--control", "http://127.0.0.1:\(port)"],
            environment: runtime.environment.merging(["LINKCOND_CONTROL_TOKEN": "chosen-by-the-test"]) { $1 })
        let withoutToken = try LinkcondProcess.run(
            ["status", "--control", "http://127.0.0.1:\(port)"], environment: runtime.environment)
        _ = try linkcond.stop()

        #expect(withToken.status == 0, "\(withToken.stderr)")
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        #expect(withoutToken.status == 2 && withoutToken.stderr.contains("Bearer"), "\(withoutToken.stderr)")
        #expect(!FileManager.default.fileExists(atPath: runtime.privateDirectory + "/control-\(port).token"))
    }

    @Test(.enabled(if: getuid() == 0, "needs root to hand a directory to another user"))
    func runRefusesAPrivateDirectoryThatBelongsToAnotherUser() throws {
        let runtime = try RuntimeDirectory()
        try FileManager.default.createDirectory(
            atPath: runtime.privateDirectory, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        #expect(chown(runtime.privateDirectory, 65534, 65534) == 0)

        let result = try LinkcondProcess.run(
            ["run", "--proxy", "127.0.0.1:0"], environment: runtime.environment, timeout: 20)

        #expect(result.status == 1)
        #expect(result.stderr.contains("belongs to user 65534"), "\(result.stderr)")
    }

    @Test func runRefusesAPrivateDirectoryOthersCanEnter() throws {
        let runtime = try RuntimeDirectory()
        try FileManager.default.createDirectory(
            atPath: runtime.privateDirectory, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o755])

        let result = try LinkcondProcess.run(
            ["run", "--proxy", "127.0.0.1:0"], environment: runtime.environment, timeout: 20)

        #expect(result.status == 1)
        #expect(result.stderr.contains("chmod 700"), "\(result.stderr)")
    }

    @Test(.enabled(if: getuid() == 0, "needs root to hand a socket to another user"))
    func commandsRefuseAControlSocketThatBelongsToAnotherUser() throws {
        let runtime = try RuntimeDirectory()
        let path = runtime.path + "/planted.sock"
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0 && listen(descriptor, 4) == 0)
        #expect(chown(path, 65534, 65534) == 0)

        let result = try LinkcondProcess.run(["status", "--control", path], environment: runtime.environment)

        #expect(result.status == 1)
        #expect(result.stderr.contains("belongs to user 65534"), "\(result.stderr)")
    }

    @Test func useReadsAProfileFileOnTheUsersSideAndSendsItsText() throws {
        let runtime = try RuntimeDirectory()
        let file = runtime.path + "/slow.profile"
        try "downlink.delay = 321 ms\n".write(toFile: file, atomically: true, encoding: .utf8)
        let linkcond = try RunningLinkcond(["run", "--proxy", "127.0.0.1:0"], environment: runtime.environment)
        _ = try linkcond.readLine()
        _ = try linkcond.readLine()

        let use = try LinkcondProcess.run(["use", file], environment: runtime.environment)
        let status = try LinkcondProcess.run(["status", "--json"], environment: runtime.environment)
        _ = try linkcond.stop()

        #expect(use.status == 0, "\(use.stderr)")
        #expect(status.stdout.contains("321 ms"), "\(status.stdout)")
    }

    @Test func useRefusesAProfileFileOverOneMebibyteBeforeReadingIt() throws {
        let runtime = try RuntimeDirectory()
        let file = runtime.path + "/huge.profile"
        #expect(FileManager.default.createFile(atPath: file, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.truncate(atOffset: 2 << 20)
        try handle.close()

        let use = try LinkcondProcess.run(["use", file], environment: runtime.environment)

        #expect(use.status == 2)
        #expect(use.stderr.contains("at most 1 MiB"), "\(use.stderr)")
    }

    /// A command line is world-readable (`ps`, /proc/PID/cmdline), the environment is not: a token chosen by a
    /// script reaches `run` through `LINKCOND_CONTROL_TOKEN` without other users of the machine seeing it.
    @Test func runTakesTheTokenFromTheEnvironmentSoItStaysOffTheCommandLine() throws {
        let runtime = try RuntimeDirectory()
        let token = ControlToken.random()
        let linkcond = try RunningLinkcond(
            ["run", "--proxy", "127.0.0.1:0"],
            environment: runtime.environment.merging(["LINKCOND_CONTROL_TOKEN": token]) { $1 })
        _ = try linkcond.readLine()
        let port = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })

        let commandLine = try String(
            contentsOfFile: "/proc/\(linkcond.process.processIdentifier)/cmdline", encoding: .utf8)
        let withToken = try rawHTTP(
            port: port, "GET /version HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n\r\n")
        let withoutToken = try rawHTTP(port: port, "GET /version HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        _ = try linkcond.stop()

        #expect(!commandLine.contains(token))
        #expect(withToken.hasPrefix("HTTP/1.1 200 "), "\(withToken)")
        #expect(withoutToken.hasPrefix("HTTP/1.1 401 "), "\(withoutToken)")
        #expect(!FileManager.default.fileExists(atPath: runtime.privateDirectory + "/control-\(port).token"))
    }

    /// A token anyone on the machine can guess in a few tries guards nothing; an empty one locks everyone out.
    @Test(arguments: [
        (["--control-token", ""], [String: String]()),
        (["--control-token", "short"], [:]),
        ([], ["LINKCOND_CONTROL_TOKEN": "123456789012345"]),
    ])
    func aWeakTokenIsRefusedNamingWhereItCameFrom(_ options: [String], _ environment: [String: String]) throws {
        let runtime = try RuntimeDirectory()

        let result = try LinkcondProcess.run(
            ["run", "--proxy", "127.0.0.1:0"] + options,
            environment: runtime.environment.merging(environment) { $1 })

        #expect(result.status == 2)
        #expect(
            result.stderr.contains(options.isEmpty ? "LINKCOND_CONTROL_TOKEN" : "--control-token"), "\(result.stderr)")
        #expect(result.stderr.contains("at least 16 characters"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func aProxyOffLoopbackIsRefusedWithoutAllowRemote() throws {
        let result = try LinkcondProcess.run(["run", "--proxy", "0.0.0.0:0"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--allow-remote"), "\(result.stderr)")
        #expect(result.stderr.contains("open"), "\(result.stderr)")
    }

    /// Relays that hold every descriptor leave the control endpoint its reserve: it answers while they hold
    /// them, spends no CPU spinning on failed accepts, and answers once they are free.
    @Test func outOfDescriptorsTheControlEndpointAnswersOnItsReserveWithoutSpinning() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let runtime = try RuntimeDirectory()
        let linkcond = try RunningLinkcond(
            [
                "-c", "ulimit -n 48 && exec \"$0\" \"$@\"", LinkcondProcess.executable.path, "run", "--listen",
                "127.0.0.1:0",
                "--upstream", "127.0.0.1:\(echo.port)", "--control", "127.0.0.1:0", "--control-token",
                "token-of-the-test",
            ],
            environment: runtime.environment, executable: URL(fileURLWithPath: "/bin/sh"))
        let relayPort = try #require(
            try linkcond.readLine().split(separator: " ")[2].split(separator: ":").last.flatMap { UInt16($0) })
        let controlPort = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })
        let status =
            "GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(controlPort)\r\nAuthorization: Bearer token-of-the-test\r\n\r\n"
        var held: [TestConnection] = []
        defer { for connection in held { connection.close() } }
        for _ in 0..<40 { held.append(try TestConnection.connect(port: relayPort, timeout: 10)) }
        let exhausted = waitUntil(seconds: 30) { linkcond.stderrText.contains("Too many open files") }

        let cpuBefore = try cpuSeconds(linkcond.process.processIdentifier)
        Thread.sleep(forTimeInterval: 2)
        let cpuDuringExhaustion = try cpuSeconds(linkcond.process.processIdentifier) - cpuBefore
        let answerWhileExhausted = (try? rawHTTP(port: controlPort, status)) ?? ""
        for connection in held { connection.close() }
        held.removeAll()
        var recovered = ""
        for _ in 0..<200 where !recovered.hasPrefix("HTTP/1.1 200 ") {
            recovered = (try? rawHTTP(port: controlPort, status)) ?? ""
            if !recovered.hasPrefix("HTTP/1.1 200 ") { usleep(50_000) }
        }
        _ = try linkcond.stop()

        #expect(exhausted, "the relay never ran out of descriptors: \(linkcond.stderrText)")
        #expect(
            cpuDuringExhaustion < 0.5, "linkcond used \(cpuDuringExhaustion) s of CPU in 2 s with descriptors exhausted"
        )
        #expect(answerWhileExhausted.hasPrefix("HTTP/1.1 200 "), "\(answerWhileExhausted)")
        #expect(recovered.hasPrefix("HTTP/1.1 200 "), "\(recovered)")
    }

    /// User plus system CPU time of process `pid`, from /proc.
    private func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private func rawHTTP(port: UInt16, _ text: String) throws -> String {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(10))
        defer { stream.close() }
        try stream.write(Array(text.utf8))
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }
}
