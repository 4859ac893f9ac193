import Foundation
import LinkConditioner
import Testing

struct ScenarioTraceTests {
    @Test func relativeTracePathInAScenarioStartsFromTheScenariosDirectory() throws {
        let folder = NSTemporaryDirectory() + "linkcond-scenario-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "1\n3\n".write(toFile: folder + "/tunnel.down", atomically: true, encoding: .utf8)
        try "0s set downlink.trace = ./tunnel.down\n10s set downlink.trace = subway.down\n"
            .write(toFile: folder + "/ride.scenario", atomically: true, encoding: .utf8)

        let scenario = try Scenario(contentsOfFile: folder + "/ride.scenario")

        guard case .settings(let settings) = scenario.steps[0].action else {
            Issue.record("expected a set step")
            return
        }
        let profile = try Profile.none.setting(settings[0].key, to: settings[0].value)
        #expect(profile.downlink.trace?.milliseconds == [1, 3])
    }

    @Test func malformedTraceInAScenarioIsRefusedAtItsLine() throws {
        #expect(throws: ScenarioError.self) { try Scenario(parsing: "0s lte\n5s set trace = lte-flying.down\n") }
    }
}
