import Foundation
import LinkConditioner
import Testing

/// `linkcond profiles`, `profile show` and `profile check` as a user runs them.
struct ProfileCommandTests {
    @Test func listsEveryBuiltInProfileWithASummary() throws {
        let result = try LinkcondProcess.run(["profiles"])

        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == Profile.builtIns.count)
        let threeG = try #require(lines.first { $0.hasPrefix("3g ") })
        #expect(threeG.contains("780 kbit/s down") && threeG.contains("330 kbit/s up"), "\(threeG)")
    }

    @Test func showPrintsAProfileThatParsesBackToTheSameProfile() throws {
        let result = try LinkcondProcess.run(["profile", "show", "Very-Bad-Network"])

        #expect(result.status == 0)
        let shown = try Profile(parsing: result.stdout, name: "very-bad-network")
        #expect(shown == Profile.builtIn(named: "very-bad-network"))
    }

    @Test func checkAcceptsEveryShippedProfileFile() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".profile") }.map { directory.appendingPathComponent($0).path }

        let result = try LinkcondProcess.run(["profile", "check"] + files)

        #expect(!files.isEmpty)
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func checkRejectsAnUnknownKeyWithFileLineAndASuggestion() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("typo-\(UUID().uuidString).profile")
        try "# a typo on line 3\n\ndownlink.bandwith = 1 Mbit/s\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try LinkcondProcess.run(["profile", "check", file.path])

        #expect(result.status == 2)
        #expect(result.stderr.contains("\(file.lastPathComponent):3"), "\(result.stderr)")
        #expect(result.stderr.contains("downlink.bandwidth"), "\(result.stderr)")
    }
}
