import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond dashboard` prints the URL of a running instance's dashboard with its token in the fragment.
@Suite(.serialized)
struct DashboardCommandTests {
    @Test func printsTheDashboardURLWithTheTokenInTheFragment() throws {
        let token = ControlToken.random()
        let instance = try RunningLinkcond(["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
                                            "--control", "127.0.0.1:0", "--control-token", token])
        defer { _ = try? instance.stop() }
        _ = try instance.readLine()
        let control = try instance.readLine().replacingOccurrences(of: "ready control ", with: "")
        let port = try #require(control.split(separator: ":").last)

        let result = try LinkcondProcess.run(["dashboard", "--control", control, "--control-token", token])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "http://127.0.0.1:\(port)/#token=\(token)\n")
    }

    @Test func aWrongTokenFindsNoDashboardAndExitsOne() throws {
        let instance = try RunningLinkcond(["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
                                            "--control", "127.0.0.1:0", "--control-token", ControlToken.random()])
        defer { _ = try? instance.stop() }
        _ = try instance.readLine()
        let control = try instance.readLine().replacingOccurrences(of: "ready control ", with: "")

        let result = try LinkcondProcess.run(["dashboard", "--control", control, "--control-token", "wrong"])

        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("no running linkcond"), "\(result.stderr)")
    }
}
