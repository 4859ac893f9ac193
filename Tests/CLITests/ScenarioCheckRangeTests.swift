import Foundation
import Testing

/// `linkcond scenario --check` on times no scenario can reach: a clear error, not a trap.
@Suite(.serialized)
struct ScenarioCheckRangeTests {
    @Test func aStepAtNineHundredBillionHoursIsInvalidWithTheAcceptedRange() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-far-\(UUID().uuidString.prefix(8)).scenario")
        try "0s lte\n999999999999h edge\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try LinkcondProcess.run(["scenario", "--check", file.path])

        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains(":2: \"999999999999h edge\": expected a time from 0s to 8760h"), "\(result.stderr)")
    }
}
