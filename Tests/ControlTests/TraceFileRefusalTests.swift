import Foundation
@testable import LinkConditioner
import Testing

/// The control endpoint reads no file for anyone: a trace given as a path is refused before any parsing, whatever
/// the file holds, while built-in trace names still work.
@Suite struct TraceFileRefusalTests {
    private static let secretFile: String = {
        let path = NSTemporaryDirectory() + "linkcond-trace-refusal-\(getpid()).trace"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("secret-line-that-must-not-leak\n".utf8)))
        return path
    }()

    @Test func aProfileBodyNamingATraceFileIsRefusedWithoutReadingIt() {
        let outcome = ControlAPI.profile(from: "downlink.trace = \(Self.secretFile)\n")

        guard case .refused(let response) = outcome else { Issue.record("a trace path was accepted"); return }
        #expect(response.status == 400)
        #expect(response.body.contains("built-in trace names only"))
        #expect(!response.body.contains("secret-line"))
    }

    @Test func settingsNamingATraceFileAreRefused() {
        let outcome = ControlAPI.settings(from: "uplink.trace = \(Self.secretFile)", appliedTo: .none)

        guard case .refused(let response) = outcome else { Issue.record("a trace path was accepted"); return }
        #expect(response.status == 400)
        #expect(!response.body.contains("secret-line"))
    }

    @Test func aScenarioStepSettingATraceFileIsRefused() {
        let outcome = ControlAPI.scenario(from: "0s lte\n5s set downlink.trace = \(Self.secretFile)\n", name: "x")

        guard case .refused(let response) = outcome else { Issue.record("a trace path was accepted"); return }
        #expect(response.status == 400)
    }

    @Test func aBuiltInTraceNameIsStillAccepted() throws {
        let name = try #require(TraceModel.presetNames.first)

        let outcome = ControlAPI.settings(from: "downlink.trace = \(name)", appliedTo: .none)

        guard case .parsed = outcome else { Issue.record("the built-in trace \(name) was refused"); return }
    }
}
