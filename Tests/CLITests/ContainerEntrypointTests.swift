import Foundation
import LinkConditioner
import Testing

/// `run --toxiproxy-without-token` and `linkcond container-entrypoint`, the image's entry point that replaces
/// Toxiproxy's: the API a container serves beyond loopback asks no token, as Toxiproxy's clients send none.
@Suite(.serialized)
struct ContainerEntrypointTests {
    /// Served on 0.0.0.0 as in a container; the requests go to 127.0.0.1 only. A token in the environment is the
    /// control endpoint's, not the Toxiproxy API's.
    @Test func anAPIWithoutATokenAnswersWithoutOneAndWarnsWhoCanReachIt() throws {
        let linkcond = try RunningLinkcond(
            [
                "run", "--toxiproxy", "0.0.0.0:0", "--allow-remote", "--toxiproxy-without-token",
                "--control", "127.0.0.1:0",
            ],
            environment: ["LINKCOND_CONTROL_TOKEN": ControlToken.random()])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let line = try linkcond.readLine()
        let port = try #require(line.split(separator: ":").last.flatMap { UInt16($0) })

        let answer = try ToxiproxyCommandTests.request(port, "GET", "/version")
        _ = try linkcond.readLine()
        let status = try linkcond.stop(signal: SIGTERM)

        #expect(line.hasPrefix("ready toxiproxy http://0.0.0.0:"), "\(line)")
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(status == 0)
        #expect(linkcond.stderrText.contains("asks no token: anyone who reaches it"), "\(linkcond.stderrText)")
    }

    @Test func withoutATokenNeedsTheToxiproxyAPIAndAllowRemote() throws {
        let alone = try LinkcondProcess.run(["run", "--toxiproxy", "0.0.0.0:0", "--toxiproxy-without-token"])
        let noAPI = try LinkcondProcess.run(["run", "--allow-remote", "--toxiproxy-without-token"])

        #expect(alone.status == 2 && noAPI.status == 2)
        #expect(alone.stderr.contains("it needs --toxiproxy HOST[:PORT] and --allow-remote"), "\(alone.stderr)")
        #expect(noAPI.stderr.contains("it needs --toxiproxy HOST[:PORT] and --allow-remote"), "\(noAPI.stderr)")
    }

    @Test func theEntrypointPassesLinkcondCommandsThrough() throws {
        let version = try LinkcondProcess.run(["container-entrypoint", "--version"])
        let profiles = try LinkcondProcess.run(["container-entrypoint", "profiles"])

        #expect(
            version.status == 0 && version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == linkcondVersion)
        #expect(profiles.status == 0 && profiles.stdout.contains("3g "), "\(profiles.stdout)")
    }

    /// Toxiproxy server's flags, as Testcontainers passes them, on loopback here so that the test reaches nothing
    /// beyond it; the control endpoint takes the container's fixed port 7474 when it is free.
    @Test func theEntrypointTakesToxiproxyServersFlags() throws {
        let linkcond = try RunningLinkcond(
            ["container-entrypoint", "-host=127.0.0.1", "-port", "0"],
            environment: ["LINKCOND_CONTROL_TOKEN": "", "LINKCOND_PROFILE": "3g"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let lines = Result { [try linkcond.readLine(timeout: 10), try linkcond.readLine(timeout: 10)] }
        _ = try? linkcond.stop(signal: SIGTERM)

        switch lines {
        case .success(let lines):
            #expect(lines[0].hasPrefix("ready toxiproxy http://127.0.0.1:"), "\(lines[0])")
            #expect(lines[1] == "ready control http://127.0.0.1:7474")
            #expect(linkcond.stderrText.contains("profile 3g"), "\(linkcond.stderrText)")
        case .failure:
            // Another program holds 7474 here: linkcond must have said so, naming the address.
            #expect(linkcond.stderrText.contains("127.0.0.1:7474"), "\(linkcond.stderrText)")
        }
    }

    @Test func theEntrypointRefusesAFlagToxiproxyServerDoesNotHave() throws {
        let result = try LinkcondProcess.run(["container-entrypoint", "-proxy-metrics"])

        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("linkcond container: flag provided but not supported"), "\(result.stderr)")
    }
}
