import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Scenario times and repeat periods outside what linkcond can schedule are refused with the accepted range, and a
/// runner that fell behind (a suspended process, a tiny period) catches up without recursing once per cycle.
@Suite(.serialized)
struct ScenarioLimitTests {
    private func message(of text: String) -> String {
        do {
            _ = try Scenario(parsing: text, name: "limits")
            return "parsed"
        } catch {
            return error.description
        }
    }

    @Test func aStepTimeBeyondTheLongestScenarioIsRefusedWithTheAcceptedRange() {
        let message = message(of: "0s lte\n999999999999h edge\n")

        #expect(
            message.hasPrefix("limits.scenario:2: \"999999999999h edge\": expected a time from 0s to 8760h"),
            "\(message)")
    }

    @Test func aRepeatTimeBeyondTheLongestScenarioIsRefusedWithTheAcceptedRange() {
        let message = message(of: "0s lte\n9999999999h repeat\n")

        #expect(
            message.hasPrefix("limits.scenario:2: \"9999999999h repeat\": expected a time from 0s to 8760h"),
            "\(message)")
    }

    @Test func aRepeatPeriodShorterThanTenMillisecondsIsRefusedWithTheAcceptedRange() {
        let message = message(of: "0s lte\n0.000001ms repeat\n")

        #expect(message.contains("expected a repeat period from 10ms to 8760h"), "\(message)")
    }

    @Test func aRampLongerThanTheLongestScenarioIsRefused() {
        let message = message(of: "0s ramp bandwidth from 1 Mbit/s to 2 Mbit/s over 99999999999h\n")

        #expect(message.contains("expected a ramp duration"), "\(message)")
    }

    @Test func aTenMillisecondRepeatStillParses() throws {
        let scenario = try Scenario(parsing: "0s set delay = 1 ms\n5ms set delay = 2 ms\n10ms repeat\n")

        #expect(scenario.period == .milliseconds(10))
    }

    @Test func aRunnerGivenANanosecondPeriodKeepsRunningAndCountsOnlyWholeCyclesElapsed() throws {
        let server = try TestServer.echo()
        defer { server.stop() }
        let proxy = try ConditionedProxy.inFront(of: server.port, profile: .none)
        defer { proxy.stop() }
        var scenario = try Scenario(parsing: "0s set delay = 1 ms\n5ms set delay = 2 ms\n10ms repeat\n")
        scenario.period = .nanoseconds(1)
        let start = MonotonicClock().now()

        proxy.startScenario(scenario)
        usleep(300_000)
        let report = try #require(proxy.report().scenario)
        let elapsed = secondsSince(start)

        #expect(report.repetitions >= 1)
        #expect(
            Double(report.repetitions) <= elapsed / 0.010 + 1,
            "\(report.repetitions) cycles in \(elapsed) s of 10 ms cycles at least")
        let client = try TestConnection.connect(port: proxy.port, timeout: 5)
        defer { client.close() }
        try client.send([1, 2, 3])
        #expect(try client.receive(exactly: 3) == [1, 2, 3])
    }
}
