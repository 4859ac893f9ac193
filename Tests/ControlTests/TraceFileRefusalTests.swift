import Foundation
import Testing

@testable import LinkConditioner

/// The control endpoint reads no file for anyone: a trace given as a path is refused unread at the line that writes
/// it, however the body is laid out, while built-in trace names still work.
@Suite final class TraceFileRefusalTests {
    /// A readable trace file of this test's own, removed when the test ends.
    private let secretFile = NSTemporaryDirectory() + "linkcond-trace-refusal-\(UUID().uuidString.prefix(8)).trace"

    init() {
        #expect(
            FileManager.default.createFile(atPath: secretFile, contents: Data("secret-line-that-must-not-leak\n".utf8)))
    }

    deinit { try? FileManager.default.removeItem(atPath: secretFile) }

    @Test func aProfileBodyNamingATraceFileIsRefusedWithoutReadingIt() {
        let outcome = ControlAPI.profile(from: "downlink.trace = \(secretFile)\n")

        guard case .refused(let response) = outcome else {
            Issue.record("a trace path was accepted")
            return
        }
        #expect(response.status == 400)
        #expect(
            response.body.contains(
                "request body:1: \"downlink.trace = \(secretFile)\": expected a built-in trace"),
            "\(response.body)")
        #expect(response.body.contains("a running linkcond reads no files"), "\(response.body)")
        #expect(!response.body.contains("secret-line"))
    }

    @Test func settingsNamingATraceFileAreRefused() {
        let outcome = ControlAPI.settings(from: "uplink.trace = \(secretFile)", appliedTo: .none)

        guard case .refused(let response) = outcome else {
            Issue.record("a trace path was accepted")
            return
        }
        #expect(response.status == 400)
        #expect(!response.body.contains("secret-line"))
    }

    /// The refusal names the scenario and the step's line, as every other scenario error does.
    @Test func aScenarioStepSettingATraceFileIsRefusedAtItsLine() {
        let outcome = ControlAPI.scenario(from: "0s lte\n5s set downlink.trace = \(secretFile)\n", name: "ride")

        guard case .refused(let response) = outcome else {
            Issue.record("a trace path was accepted")
            return
        }
        #expect(response.status == 400)
        #expect(response.body.hasPrefix("ride.scenario:2: \"5s set downlink.trace = "), "\(response.body)")
        #expect(response.body.contains("a running linkcond reads no files"), "\(response.body)")
    }

    /// A trace path after another assignment in one `set` step is refused unread too.
    @Test func aTraceFileAfterASemicolonInAScenarioStepIsRefusedUnread() {
        let outcome = ControlAPI.scenario(from: "0s set delay = 1 ms; trace = \(secretFile)\n", name: "x")

        guard case .refused(let response) = outcome else {
            Issue.record("a trace path was accepted")
            return
        }
        #expect(response.status == 400)
        #expect(!response.body.contains("secret-line"), "\(response.body)")
        #expect(response.body.contains("a running linkcond reads no files"), "\(response.body)")
    }

    /// A profile body whose lines end in CR alone (which the profile format reads as line ends) is refused unread.
    @Test func aTraceFileOnACarriageReturnLineIsRefusedUnread() {
        let outcome = ControlAPI.profile(from: "description = x\rdownlink.trace = \(secretFile)\n")

        guard case .refused(let response) = outcome else {
            Issue.record("a trace path was accepted")
            return
        }
        #expect(response.status == 400)
        #expect(!response.body.contains("secret-line"), "\(response.body)")
        #expect(response.body.contains("request body:2:"), "\(response.body)")
    }

    @Test func aBuiltInTraceNameIsStillAccepted() throws {
        let name = try #require(TraceModel.presetNames.first)

        let outcome = ControlAPI.settings(from: "downlink.trace = \(name)", appliedTo: .none)

        guard case .parsed = outcome else {
            Issue.record("the built-in trace \(name) was refused")
            return
        }
    }
}
