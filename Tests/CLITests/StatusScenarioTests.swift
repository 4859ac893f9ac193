import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond status` says where a playing scenario is: the step in force and the next as their author wrote them,
/// and how long until the next, in the text and in the JSON.
@Suite(.serialized)
struct StatusScenarioTests {
    @Test func aPlayingScenarioNamesItsStepTheNextAndTheWaitUntilIt() throws {
        let settings = "set downlink.delay = 800 ms; uplink.delay = 800 ms"
        let instance = try ControlCommandTests.Instance()
        defer { instance.stop() }
        let file = try Self.scenarioFile("0s   edge   # boarding\n20s  \(settings)\n40s  repeat\n")
        defer { try? FileManager.default.removeItem(at: file) }

        let play = try instance.linkcond(["scenario", file.path])
        let scenario = try Self.scenario(of: instance)
        let text = try Self.status(instance, columns: 200)

        #expect(play.status == 0, "\(play.stderr)")
        #expect(scenario.currentStep == "edge")
        #expect(scenario.nextStep == settings)
        #expect(scenario.nextStepStartsOver == false)
        let wait = try #require(scenario.secondsToNextStep)
        #expect(wait > 0 && wait <= 20, "\(wait)")
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("scenario  ") }, "\(text)")
        #expect(
            line.hasPrefix("scenario  \(file.deletingPathExtension().lastPathComponent): now \"edge\", "), "\(line)")
        let shown = try #require(Self.wait(in: line, before: "\"\(settings)\""), "\(line)")
        #expect(shown > 0 && shown <= 20, "\(line)")
        #expect(!line.contains("line "), "\(line)")
    }

    @Test func afterTheLastStepTheFirstComesNextOrNothingDoes() throws {
        let instance = try ControlCommandTests.Instance()
        defer { instance.stop() }
        let looping = try Self.scenarioFile("0s edge\n50ms lte\n60s repeat\n")
        let once = try Self.scenarioFile("0s edge\n50ms lte\n")
        defer {
            try? FileManager.default.removeItem(at: looping)
            try? FileManager.default.removeItem(at: once)
        }

        _ = try instance.linkcond(["scenario", looping.path])
        let repeating = try Self.scenario(of: instance, once: { $0.currentStep == "lte" })
        let repeatingText = try Self.status(instance, columns: 80)
        _ = try instance.linkcond(["scenario", once.path])
        let last = try Self.scenario(of: instance, once: { $0.currentStep == "lte" })
        let lastText = try Self.status(instance, columns: 80)

        #expect(repeating.nextStep == "edge" && repeating.nextStepStartsOver == true)
        let wait = try #require(repeating.secondsToNextStep)
        #expect(wait > 0 && wait <= 60, "\(wait)")
        #expect(repeatingText.contains("now \"lte\", next \"edge\" in "), "\(repeatingText)")
        #expect(repeatingText.contains(" (starting over)"), "\(repeatingText)")
        #expect(last.nextStep == nil && last.secondsToNextStep == nil && last.nextStepStartsOver == nil)
        #expect(lastText.contains("now \"lte\" (the last step)"), "\(lastText)")
        for line in repeatingText.split(separator: "\n") + lastText.split(separator: "\n") {
            #expect(line.count <= 80, "\(line)")
        }
    }

    private static func scenarioFile(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ride-\(UUID().uuidString.prefix(6)).scenario")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// The scenario in `status --json`, once `condition` holds (within 10 s).
    private static func scenario(
        of instance: ControlCommandTests.Instance,
        once condition: (StatusReport.ScenarioState) -> Bool = { _ in true }
    ) throws -> StatusReport.ScenarioState {
        for _ in 0..<100 {
            let json = try instance.linkcond(["status", "--json"])
            let report = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8))
            if let scenario = report.scenario, condition(scenario) { return scenario }
            usleep(100_000)
        }
        throw CLITestError("the scenario did not reach the state awaited")
    }

    private static func status(_ instance: ControlCommandTests.Instance, columns: Int) throws -> String {
        try LinkcondProcess.run(
            ["status", "--control", instance.socketPath], environment: ["COLUMNS": "\(columns)"]
        ).stdout
    }

    /// The seconds in `… STEP in 12.3 s` after `step` in `line`.
    private static func wait(in line: Substring, before step: String) -> Double? {
        guard let range = line.range(of: "next \(step) in ") else { return nil }
        return line[range.upperBound...].split(separator: " ").first.flatMap { Double($0) }
    }
}
