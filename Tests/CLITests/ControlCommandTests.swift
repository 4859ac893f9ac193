import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The commands that steer a running linkcond, run against a real `linkcond run` process.
@Suite(.serialized)
struct ControlCommandTests {
    /// A running linkcond in front of an echo server, with its control endpoint on a private socket path.
    final class Instance {
        let echo: TestServer
        let process: RunningLinkcond
        let socketPath: String
        let proxyPort: UInt16
        let controlURL: String

        init(profile: String = "none", options: [String] = []) throws {
            echo = try TestServer.echo()
            socketPath =
                FileManager.default.temporaryDirectory.appendingPathComponent("lc-\(UUID().uuidString.prefix(8)).sock")
                .path
            process = try RunningLinkcond(
                [
                    "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
                    "--profile", profile, "--control", socketPath,
                ] + options)
            proxyPort = try process.readReadyPort()
            controlURL = try process.readLine()
        }

        func linkcond(_ arguments: [String]) throws -> LinkcondProcess.Result {
            try LinkcondProcess.run(arguments + ["--control", socketPath])
        }

        func stop() {
            _ = try? process.stop()
            echo.stop()
        }
    }

    @Test func printsTheControlEndpointAsAReadyLine() throws {
        let instance = try Instance()
        defer { instance.stop() }

        #expect(instance.controlURL == "ready control \(instance.socketPath)")
    }

    @Test func useSwitchesTheProfileAndStatusShowsIt() throws {
        let instance = try Instance(profile: "3g")
        defer { instance.stop() }

        let use = try instance.linkcond(["use", "edge"])
        let status = try instance.linkcond(["status"])

        #expect(use.status == 0, "\(use.stderr)")
        #expect(status.stdout.contains("profile   edge:"), "\(status.stdout)")
    }

    @Test func setChangesOneSettingAndABadValueExitsTwoChangingNothing() throws {
        let instance = try Instance(profile: "3g")
        defer { instance.stop() }

        let good = try instance.linkcond(["set", "downlink.delay", "300", "ms"])
        let bad = try instance.linkcond(["set", "downlink.delay", "300", "parsecs"])
        let json = try instance.linkcond(["status", "--json"])

        #expect(good.status == 0)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("expected a duration"), "\(bad.stderr)")
        let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
        #expect(report.profileSummary.contains("300 ms"), "\(report.profileSummary)")
    }

    /// `-5` is a value here, not an option: the profile format answers it, and the running profile is unchanged.
    @Test func setANegativeValueIsRefusedAsNegativeAndChangesNothing() throws {
        let instance = try Instance(profile: "3g")
        defer { instance.stop() }

        let bad = try instance.linkcond(["set", "downlink.delay", "-5", "ms"])
        let typo = try instance.linkcond(["set", "downlink.delay", "5", "ms", "--contol", "x"])
        let json = try instance.linkcond(["status", "--json"])

        #expect(bad.status == 2)
        #expect(bad.stderr.contains("\"downlink.delay = -5 ms\": negative value: expected a duration"), "\(bad.stderr)")
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("--contol"), "\(typo.stderr)")
        let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
        #expect(report.profileSummary.contains("100 ms delay"), "\(report.profileSummary)")
    }

    @Test func setRefusesADirectionOnAConnectionWideFaultAndChangesNothing() throws {
        let instance = try Instance(profile: "3g")
        defer { instance.stop() }

        let bad = try instance.linkcond(["set", "downlink.connect.stall", "5", "s"])
        let json = try instance.linkcond(["status", "--json"])

        #expect(bad.status == 2)
        #expect(bad.stderr.contains("connect.stall concerns the whole connection"), "\(bad.stderr)")
        let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
        #expect(!report.profileSummary.contains("stall"), "\(report.profileSummary)")
    }

    @Test func offlineResetsNewConnectionsAndOnlineRestoresThem() throws {
        let instance = try Instance()
        defer { instance.stop() }

        let offline = try instance.linkcond(["offline"])
        let refused = try TestConnection.connect(port: instance.proxyPort, timeout: 2)
        let whileOffline = Result { try refused.receive() }
        refused.close()
        let online = try instance.linkcond(["online"])
        let client = try TestConnection.connect(port: instance.proxyPort, timeout: 5)
        defer { client.close() }
        try client.send([5])

        #expect(offline.status == 0 && online.status == 0)
        if case .success = whileOffline { Issue.record("a connection made while offline was not reset") }
        #expect(try client.receive(exactly: 1) == [5])
    }

    @Test func resetClosesLiveConnections() throws {
        let instance = try Instance()
        defer { instance.stop() }
        let client = try TestConnection.connect(port: instance.proxyPort, timeout: 5)
        defer { client.close() }
        try client.send([1])
        _ = try client.receive(exactly: 1)

        let reset = try instance.linkcond(["reset"])
        let afterReset = Result { try client.receive() }

        #expect(reset.stdout.contains("reset 1 connection"), "\(reset.stdout)")
        if case .success(let bytes) = afterReset { #expect(bytes.isEmpty) }
    }

    @Test func scenarioPlaysAShippedScenarioAndStopStopsIt() throws {
        let instance = try Instance()
        defer { instance.stop() }

        let play = try instance.linkcond(["scenario", "flapping-link"])
        let playing = try instance.linkcond(["status"])
        let stop = try instance.linkcond(["scenario", "--stop"])

        #expect(play.status == 0)
        #expect(playing.stdout.contains("scenario  flapping-link"), "\(playing.stdout)")
        #expect(playing.stdout.contains("profile   dsl:"), "\(playing.stdout)")
        #expect(stop.stdout.contains("scenario stopped"))
    }

    @Test func aScenarioWithAnErrorIsRejectedWithItsLine() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).scenario")
        try "0s lte\n10s warp-speed\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try LinkcondProcess.run(["scenario", "--check", file.path])

        #expect(result.status == 2)
        #expect(result.stderr.contains("\(file.lastPathComponent):2"), "\(result.stderr)")
    }

    @Test func commandsWithoutARunningInstanceSaySoAndExitOne() throws {
        let result = try LinkcondProcess.run([
            "status", "--control", "/tmp/linkcond-nobody-\(UUID().uuidString.prefix(6)).sock",
        ])

        #expect(result.status == 1)
        #expect(result.stderr.contains("no running linkcond"), "\(result.stderr)")
    }

    @Test func malformedControlRequestsGetA4xxAndChangeNothing() throws {
        let instance = try Instance(profile: "edge")
        defer { instance.stop() }
        let client = ControlClient(address: .unix(instance.socketPath))

        let unknownPath = try client.send("GET", "/teapot")
        let wrongMethod = try client.send("DELETE", "/status")
        let badSetting = try client.send("POST", "/settings", body: "downlink.delay = 10 ms\nloss = lots\n")
        let notKeyValue = try client.send("POST", "/settings", body: "delay 10ms\n")
        let badProfile = try client.send("PUT", "/profile", body: "no-such-profile")
        let badOffline = try client.send("POST", "/offline", body: "sideways")
        let garbage = try rawRequest(instance.socketPath, "\u{01}\u{02} nonsense\r\n\r\n")
        let hugeHeader = try rawRequest(
            instance.socketPath, "GET /status HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000) + "\r\n\r\n")
        let profile = try client.send("GET", "/profile")

        #expect(unknownPath.status == 404)
        #expect(wrongMethod.status == 405)
        #expect(badSetting.status == 400 && badSetting.body.contains("loss"))
        #expect(notKeyValue.status == 400)
        #expect(badProfile.status == 400)
        #expect(badOffline.status == 400)
        #expect(garbage.hasPrefix("HTTP/1.1 400"))
        #expect(hugeHeader.hasPrefix("HTTP/1.1 431"))
        #expect(profile.body.contains("downlink.delay = 400 ms"), "profile changed by a bad request: \(profile.body)")
    }

    @Test func concurrentControlRequestsAreAllAnswered() throws {
        let instance = try Instance()
        defer { instance.stop() }
        let client = ControlClient(address: .unix(instance.socketPath))
        let failures = LockedBox<[String]>([])

        DispatchQueue.concurrentPerform(iterations: 40) { index in
            do {
                let response =
                    index % 2 == 0
                    ? try client.send("GET", "/status")
                    : try client.send("POST", "/settings", body: "delay = \(index) ms\n")
                if response.status != 200 { failures.mutate { $0.append("request \(index): \(response.status)") } }
            } catch {
                failures.mutate { $0.append("request \(index): \(error)") }
            }
        }

        #expect(failures.value.isEmpty, "\(failures.value)")
    }

    private func rawRequest(_ path: String, _ text: String) throws -> String {
        let stream = try BlockingStream.connect(to: SocketAddress(unixPath: path)!, timeout: .seconds(5))
        defer { stream.close() }
        try stream.write(Array(text.utf8))
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }
}
