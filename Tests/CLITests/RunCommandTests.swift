import Foundation
import LoopbackPeers
import Testing

/// The `linkcond run` contract as a test suite in another language would rely on it.
@Suite(.serialized)
struct RunCommandTests {
    @Test func printsExactlyOneReadyLinePerListenerWithTheRealPortAndRelays() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)", "--profile", "3g",
        ])

        let line = try linkcond.readLine()
        let fields = line.split(separator: " ")
        #expect(fields.count == 4, "ready line: \(line)")
        #expect(fields.first == "ready" && fields.dropFirst().first == "tcp")
        #expect(fields.last.map(String.init) == "127.0.0.1:\(echo.port)")
        let port = try #require(fields.dropFirst(2).first?.split(separator: ":").last.flatMap { UInt16($0) })
        #expect(port != 0)
        let control = try linkcond.readLine()
        #expect(control.hasPrefix("ready control http://127.0.0.1:"), "control line: \(control)")

        let client = try TestConnection.connect(port: port)
        defer { client.close() }
        try client.send(Array("ping".utf8))
        #expect(try client.receive(exactly: 4) == Array("ping".utf8))
        #expect(try linkcond.stop(signal: SIGTERM) == 0)
        let rest = linkcond.remainingStdout()
        #expect(
            rest.hasPrefix("ready name 3g-") && rest.filter { $0 == "\n" }.count == 1,
            "stdout must carry nothing but the ready lines: \(rest)")
    }

    @Test func servesSeveralListenersInOneProcess() throws {
        let first = try TestServer.echo()
        let second = try TestServer.echo()
        defer {
            first.stop()
            second.stop()
        }
        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(first.port)",
            "--listen", "[::1]:0", "--upstream", "localhost:\(second.port)",
        ])

        let lines = [try linkcond.readLine(), try linkcond.readLine()]

        #expect(lines[0].hasPrefix("ready tcp 127.0.0.1:") && lines[0].hasSuffix(" 127.0.0.1:\(first.port)"))
        #expect(lines[1].hasPrefix("ready tcp [::1]:") && lines[1].hasSuffix(" localhost:\(second.port)"))
        #expect(try linkcond.stop(signal: SIGINT) == 0)
    }

    @Test func closesLiveConnectionsAndExitsZeroOnSIGINT() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try RunningLinkcond(["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)"])
        let port = try #require(
            try linkcond.readLine().split(separator: " ")[2].split(separator: ":").last.flatMap { UInt16($0) })
        let client = try TestConnection.connect(port: port, timeout: 5)
        defer { client.close() }
        try client.send([1])
        _ = try client.receive(exactly: 1)

        let status = try linkcond.stop(signal: SIGINT)
        let afterStop = Result { try client.receive() }

        #expect(status == 0)
        switch afterStop {
        case .success(let bytes): #expect(bytes.isEmpty)
        case .failure(let error): #expect("\(error)".contains("reset"))
        }
    }

    @Test func rejectsAListenWithoutItsUpstreamWithExitStatusTwo() throws {
        let result = try LinkcondProcess.run(["run", "--listen", "127.0.0.1:0"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--upstream"))
        #expect(result.stdout.isEmpty)
    }

    @Test func startsASOCKS5AndHTTPProxyOnLoopbackWhenNoListenerIsGiven() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try RunningLinkcond(["run"])

        let line = try linkcond.readLine()
        let port = try #require(line.split(separator: ":").last.flatMap { UInt16($0) })
        let client = try TestConnection.connect(port: port, timeout: 5)
        defer { client.close() }
        try client.send(Array("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\n\r\nping".utf8))
        let established = try client.receive(exactly: "HTTP/1.1 200 Connection established\r\n\r\n".utf8.count)

        #expect(line.hasPrefix("ready proxy 127.0.0.1:"), "ready line: \(line)")
        #expect(String(decoding: established, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(try client.receive(exactly: 4) == Array("ping".utf8))
        #expect(try linkcond.stop(signal: SIGTERM) == 0)
        #expect(linkcond.stderrText.contains("ALL_PROXY=socks5h://127.0.0.1:\(port)"))
        #expect(linkcond.stderrText.contains("https_proxy=http://127.0.0.1:\(port)"))
        #expect(linkcond.stderrText.contains("curl --socks5-hostname 127.0.0.1:\(port)"))
        #expect(!linkcond.stderrText.contains("open relay"))
    }

    /// The HTTP proxy variables the banner prints, set as a user copies them, take curl's plain-HTTP request
    /// through the proxy: the captive portal answers it (302), where a request that went around the proxy would
    /// find no host at all. curl reads only the lower-case `http_proxy`.
    @Test func curlGivenTheBannersHTTPProxyVariablesFetchesThroughTheProxy() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-banner-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = directory.appendingPathComponent("portal.profile")
        try "captive-portal = redirect\n".write(to: profile, atomically: true, encoding: .utf8)
        let linkcond = try RunningLinkcond(["run", "--profile", profile.path])
        _ = try linkcond.readReadyPort()
        let isVariables: (Substring) -> Bool = { line in line.contains("=http://") && !line.contains("curl") }
        _ = waitUntil(seconds: 20) { linkcond.stderrText.split(separator: "\n").contains(where: isVariables) }
        let line = try #require(
            linkcond.stderrText.split(separator: "\n").first(where: isVariables),
            "no HTTP proxy variables on stderr: \(linkcond.stderrText)")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.lowercased().hasSuffix("_proxy") }
        for assignment in line.split(separator: " ") {
            let parts = assignment.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { environment[String(parts[0])] = String(parts[1]) }
        }

        let curl = Process()
        let output = Pipe()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://banner.linkcond.invalid/"]
        curl.environment = environment
        curl.standardOutput = output
        try curl.run()
        let code = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()

        #expect(code == "302", "curl with \(line.trimmingCharacters(in: .whitespaces)) answered \(code)")
        #expect(try linkcond.stop(signal: SIGTERM) == 0)
    }

    @Test func warnsThatAProxyOffLoopbackIsAnOpenRelay() throws {
        let linkcond = try RunningLinkcond(["run", "--proxy", "0.0.0.0:0", "--allow-remote"])

        let line = try linkcond.readLine()
        _ = try linkcond.stop(signal: SIGTERM)

        #expect(line.hasPrefix("ready proxy 0.0.0.0:"))
        #expect(linkcond.stderrText.contains("open relay"))
        #expect(linkcond.stderrText.contains("--proxy-user"))
    }

    @Test func rejectsAProxyUserWithoutAPasswordAndABadExcludeWithExitStatusTwo() throws {
        let noColon = try LinkcondProcess.run(["run", "--proxy-user", "ann"])
        let badExclude = try LinkcondProcess.run(["run", "--exclude", "10.0.0.0/99"])

        #expect(noColon.status == 2 && noColon.stderr.contains("USER:PASS"))
        #expect(badExclude.status == 2 && badExclude.stderr.contains("--exclude"))
    }

    @Test func rejectsAnUnknownProfileWithExitStatusTwo() throws {
        let result = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--profile", "4g-ultra",
        ])

        #expect(result.status == 2)
        #expect(result.stderr.contains("4g-ultra"))
    }

    @Test func rejectsABadProfileFileNamingItsLine() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).profile")
        try "description = broken\ndelay = 100 mss\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--profile", file.path,
        ])

        #expect(result.status == 2)
        #expect(result.stderr.contains("\(file.lastPathComponent):2"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func failsWithStatusOneWhenTheListenAddressIsTaken() throws {
        let taken = try TestServer.echo()
        defer { taken.stop() }

        let result = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:\(taken.port)", "--upstream", "127.0.0.1:9",
        ])

        #expect(result.status == 1)
        #expect(result.stderr.lowercased().contains("address already in use"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
