import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond run --toxiproxy` and the `toxiproxy-server` personality, as scripts and containers start them.
@Suite(.serialized)
struct ToxiproxyCommandTests {
    @Test func theToxiproxyLineComesAfterTheListenersAndBeforeTheControlLine() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
            "--toxiproxy", "127.0.0.1:0",
        ])

        let lines = [try linkcond.readLine(), try linkcond.readLine(), try linkcond.readLine()]

        #expect(lines[0].hasPrefix("ready tcp 127.0.0.1:"))
        #expect(lines[1].hasPrefix("ready toxiproxy http://127.0.0.1:") && !lines[1].hasSuffix(":0"), "\(lines[1])")
        #expect(lines[2].hasPrefix("ready control http://127.0.0.1:"))
        #expect(try linkcond.stop(signal: SIGTERM) == 0)
        let rest = linkcond.remainingStdout()
        #expect(rest.hasPrefix("ready name toxiproxy-") && rest.filter { $0 == "\n" }.count == 1, "\(rest)")
    }

    @Test func aHostAloneGetsToxiproxysPort() throws {
        let linkcond = try RunningLinkcond(["run", "--toxiproxy", "127.0.0.1"])
        let line = Result { try linkcond.readLine(timeout: 10) }

        switch line {
        case .success(let text):
            #expect(text == "ready toxiproxy http://127.0.0.1:8474")
            #expect(try linkcond.stop(signal: SIGTERM) == 0)
        case .failure:
            // Another program holds 8474 here: linkcond must have said so, naming the port.
            #expect(try linkcond.stop(signal: SIGTERM) == 1)
            #expect(linkcond.stderrText.contains("127.0.0.1:8474"), "\(linkcond.stderrText)")
        }
    }

    @Test func anAPIBeyondLoopbackNeedsAllowRemoteAndAToken() throws {
        let result = try LinkcondProcess.run(["run", "--toxiproxy", "0.0.0.0:0"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--allow-remote and --control-token"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    /// A config path that is a directory is named as one, where the API's JSON answer to an empty body ("EOF") was
    /// printed before.
    @Test func aConfigThatIsADirectoryIsNamedAsOne() throws {
        let directory = FileManager.default.temporaryDirectory.path

        let result = try LinkcondProcess.run([
            "run", "--toxiproxy", "127.0.0.1:0", "--toxiproxy-config", directory,
            "--control", "127.0.0.1:0",
        ])

        #expect(result.status == 1)
        #expect(
            result.stderr.contains("config file \(directory): is a directory, not a Toxiproxy config file"),
            "\(result.stderr)")
    }

    @Test func toxiproxyServerTakesTheServersFlagsAndItsConfigFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-toxiproxy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = directory.appendingPathComponent("toxiproxy-server")
        try FileManager.default.createSymbolicLink(at: server, withDestinationURL: LinkcondProcess.executable)
        let config = directory.appendingPathComponent("toxiproxy.json")
        try Data(#"[{"name":"redis","listen":"127.0.0.1:0","upstream":"127.0.0.1:6379"}]"#.utf8).write(to: config)

        let linkcond = try RunningLinkcond(
            ["-host=127.0.0.1", "-port", "0", "-config", config.path], executable: server)
        let line = try linkcond.readLine()
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let port = try #require(line.split(separator: ":").last.flatMap { UInt16($0) })
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(20))
        defer { stream.close() }
        try stream.write(Array("GET /proxies/redis HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8))
        let answer = String(decoding: try stream.readToEnd(), as: UTF8.self)

        #expect(line.hasPrefix("ready toxiproxy http://127.0.0.1:"))
        #expect(answer.hasPrefix("HTTP/1.1 200 ") && answer.contains(#""upstream":"127.0.0.1:6379""#), "\(answer)")
    }

    /// A Toxiproxy proxy is a TCP listener, and `status` says whose: `toxiproxy NAME` in the table, and in the
    /// JSON its kind stays `tcp` with the proxy's name beside it.
    @Test func statusNamesAToxiproxyProxysListener() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let socketPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-\(UUID().uuidString.prefix(8)).sock"
        ).path
        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
            "--toxiproxy", "127.0.0.1:0", "--control", socketPath,
        ])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let tcpPort = try linkcond.readReadyPort()
        let apiPort = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })
        let created = try Self.request(
            apiPort, "POST", "/proxies",
            #"{"name":"redis-primary","listen":"127.0.0.1:0","upstream":"127.0.0.1:\#(echo.port)"}"#)
        let proxyListen = try #require(created.split(separator: "\"").drop { $0 != "listen" }.dropFirst(2).first)

        let text = try LinkcondProcess.run(["status", "--control", socketPath])
        let json = try LinkcondProcess.run(["status", "--json", "--control", socketPath])

        #expect(created.hasPrefix("HTTP/1.1 201 "), "\(created)")
        let rows = text.stdout.split(separator: "\n")
        #expect(
            rows.contains { $0.hasPrefix("toxiproxy redis-primary ") && $0.contains(" \(proxyListen) ") },
            "\(text.stdout)")
        #expect(rows.contains { $0.hasPrefix("tcp ") && $0.contains("127.0.0.1:\(tcpPort)") }, "\(text.stdout)")
        let listeners = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).listeners
        let proxy = try #require(listeners.first { $0.address == proxyListen })
        #expect(proxy.kind == "tcp")
        #expect(proxy.toxiproxy == "redis-primary")
        #expect(listeners.first { $0.address == "127.0.0.1:\(tcpPort)" }?.toxiproxy == nil)
        #expect(json.stdout.contains(#""toxiproxy" : "redis-primary""#), "\(json.stdout)")
    }

    /// A config file is the API's client too: a proxy in it that would listen on every interface stops the start,
    /// naming the proxy and the option that allows it, and nothing listens there.
    @Test func aConfigProxyBeyondLoopbackNeedsAllowRemote() throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-toxiproxy-open-\(getpid()).json")
        try Data(#"[{"name":"redis","listen":"0.0.0.0:0","upstream":"127.0.0.1:6379"}]"#.utf8).write(to: config)
        defer { try? FileManager.default.removeItem(at: config) }

        let result = try LinkcondProcess.run([
            "run", "--toxiproxy", "127.0.0.1:0", "--toxiproxy-config", config.path,
            "--control", "127.0.0.1:0",
        ])

        #expect(result.status == 1)
        #expect(
            result.stderr.contains(
                #"config \#(config.path): proxy "redis": listen "0.0.0.0:0" is not a loopback address"#),
            "\(result.stderr)")
        #expect(result.stderr.contains("--allow-remote"), "\(result.stderr)")
    }

    /// `--allow-remote` reaches the API: its proxies may then listen beyond loopback (created disabled, so that
    /// this test listens on loopback only).
    @Test func allowRemoteLetsTheAPIsProxiesListenBeyondLoopback() throws {
        let linkcond = try RunningLinkcond([
            "run", "--toxiproxy", "127.0.0.1:0", "--allow-remote", "--control", "127.0.0.1:0",
        ])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let apiPort = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })

        let created = try Self.request(
            apiPort, "POST", "/proxies",
            #"{"name":"db","listen":"0.0.0.0:0","upstream":"127.0.0.1:9","enabled":false}"#)

        #expect(created.hasPrefix("HTTP/1.1 201 "), "\(created)")
    }

    /// A token in `LINKCOND_CONTROL_TOKEN` serves `toxiproxy-server -host 0.0.0.0 -allow-remote` without putting
    /// it on the command line, where every user reads it.
    @Test func toxiproxyServerTakesItsTokenFromTheEnvironment() throws {
        let (directory, server) = try Self.toxiproxyServerLink()
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = ControlToken.random()

        let linkcond = try RunningLinkcond(
            ["-host", "0.0.0.0", "-port", "0", "-allow-remote"],
            environment: ["LINKCOND_CONTROL_TOKEN": token], executable: server)
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let line = try linkcond.readLine()
        let port = try #require(line.split(separator: ":").last.flatMap { UInt16($0) })
        let without = try Self.request(port, "GET", "/version")
        let with = try Self.request(port, "GET", "/version", headers: ["Authorization: Bearer \(token)"])

        #expect(line.hasPrefix("ready toxiproxy http://0.0.0.0:"), "\(line)")
        #expect(without.hasPrefix("HTTP/1.1 401 "), "\(without)")
        #expect(with.hasPrefix("HTTP/1.1 200 "), "\(with)")
    }

    /// `toxiproxy-server -token` warns that every user reads the token, naming the flag the user typed, not the
    /// `run` option it stands for.
    @Test func toxiproxyServerWarnsAboutATokenOnItsCommandLineByItsOwnFlag() throws {
        let (directory, server) = try Self.toxiproxyServerLink()
        defer { try? FileManager.default.removeItem(at: directory) }

        let linkcond = try RunningLinkcond(
            ["-host", "127.0.0.1", "-port", "0", "-token", ControlToken.random()],
            environment: ["LINKCOND_CONTROL_TOKEN": ""], executable: server)
        let line = try linkcond.readLine()
        let status = try linkcond.stop(signal: SIGTERM)

        #expect(line.hasPrefix("ready toxiproxy http://127.0.0.1:"), "\(line)")
        #expect(status == 0)
        #expect(
            linkcond.stderrText.contains("-token on the command line is readable by every user"),
            "\(linkcond.stderrText)")
        #expect(!linkcond.stderrText.contains("--control-token"), "\(linkcond.stderrText)")
    }

    @Test func toxiproxyServerRefusesAShortTokenByItsOwnFlag() throws {
        let (directory, server) = try Self.toxiproxyServerLink()
        defer { try? FileManager.default.removeItem(at: directory) }

        let result = try LinkcondProcess.run(
            ["-host", "127.0.0.1", "-port", "0", "-token=short"],
            environment: ["LINKCOND_CONTROL_TOKEN": ""], executable: server)

        #expect(result.status == 2)
        #expect(result.stderr.contains("-token is 5 characters"), "\(result.stderr)")
        #expect(!result.stderr.contains("--control-token"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    /// Without a token `toxiproxy-server` off loopback says so in its own flags, naming the environment variable.
    @Test func toxiproxyServerBeyondLoopbackWithoutATokenNamesTheEnvironmentVariable() throws {
        let (directory, server) = try Self.toxiproxyServerLink()
        defer { try? FileManager.default.removeItem(at: directory) }

        let result = try LinkcondProcess.run(
            ["-host", "0.0.0.0", "-port", "0", "-allow-remote"],
            environment: ["LINKCOND_CONTROL_TOKEN": ""], executable: server)

        #expect(result.status == 2)
        #expect(
            result.stderr.hasPrefix("toxiproxy-server: -host 0.0.0.0 is reachable from other hosts"), "\(result.stderr)"
        )
        #expect(result.stderr.contains("LINKCOND_CONTROL_TOKEN"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func toxiproxyServerRefusesAFlagItDoesNotKnow() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-toxiproxy-flag-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = directory.appendingPathComponent("toxiproxy-server")
        try? FileManager.default.createSymbolicLink(at: server, withDestinationURL: LinkcondProcess.executable)
        let process = Process()
        process.executableURL = server
        process.arguments = ["-proxy-metrics"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice

        try process.run()
        process.waitUntilExit()

        #expect(process.terminationStatus == 2)
    }

    /// A `toxiproxy-server` symlink to the linkcond under test, in a fresh directory the caller removes.
    static func toxiproxyServerLink() throws -> (directory: URL, server: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-toxiproxy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let server = directory.appendingPathComponent("toxiproxy-server")
        try FileManager.default.createSymbolicLink(at: server, withDestinationURL: LinkcondProcess.executable)
        return (directory, server)
    }

    /// One request to the Toxiproxy API on 127.0.0.1:`port`, as Go's client sends it; the whole answer.
    static func request(_ port: UInt16, _ method: String, _ path: String, _ body: String = "", headers: [String] = [])
        throws -> String
    {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(20))
        defer { stream.close() }
        let head =
            [
                "\(method) \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "User-Agent: Go-http-client/1.1",
                "Content-Length: \(body.utf8.count)",
            ] + headers
        try stream.write(Array((head.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8))
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }
}
