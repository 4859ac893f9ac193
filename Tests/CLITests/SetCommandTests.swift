import Foundation
import LinkConditioner
import Testing

/// `linkcond set` as people type it: `KEY=VALUE`, `KEY = VALUE` or `KEY VALUE`, several at once, all or none.
@Suite(.serialized)
struct SetCommandTests {
    /// The running profile, fully resolved, and the summary `status` shows of it.
    private func profile(of instance: ControlCommandTests.Instance) throws -> (rendered: String, summary: String) {
        let rendered = try ControlClient(address: .unix(instance.socketPath)).send("GET", "/profile").body
        let json = try instance.linkcond(["status", "--json"])
        let summary = try JSONDecoder().decode(StatusReport.self, from: Data(json.stdout.utf8)).profileSummary
        return (rendered, summary)
    }

    @Test(arguments: [
        ["downlink.delay=800ms"], ["downlink.delay", "=", "800", "ms"], ["downlink.delay", "800", "ms"],
        ["downlink.delay 800 ms"], ["downlink.delay = 800 ms"],
    ])
    func eachSpellingSetsTheValue(words: [String]) throws {
        let instance = try ControlCommandTests.Instance(profile: "3g")
        defer { instance.stop() }

        let result = try instance.linkcond(["set"] + words)
        let after = try profile(of: instance)

        #expect(result.status == 0, "\(words): \(result.stderr)")
        #expect(after.rendered.contains("downlink.delay = 800 ms\n"), "\(words): \(after.rendered)")
        #expect(after.summary.contains("800 ms"), "\(after.summary)")
    }

    @Test(arguments: [
        (["downlink.delay=800ms", "uplink.bandwidth=1Mbit/s"], "downlink.delay = 800ms\nuplink.bandwidth = 1Mbit/s\n"),
        (
            ["downlink.delay", "=", "800", "ms", "uplink.bandwidth", "=", "1", "Mbit/s"],
            "downlink.delay = 800 ms\nuplink.bandwidth = 1 Mbit/s\n"
        ),
        (
            ["downlink.delay", "800", "ms", "uplink.bandwidth", "1", "Mbit/s"],
            "downlink.delay = 800 ms\nuplink.bandwidth = 1 Mbit/s\n"
        ),
    ])
    func severalSettingsApplyTogether(words: [String], printed: String) throws {
        let instance = try ControlCommandTests.Instance(profile: "3g")
        defer { instance.stop() }

        let result = try instance.linkcond(["set"] + words)
        let after = try profile(of: instance)

        #expect(result.status == 0, "\(words): \(result.stderr)")
        #expect(result.stdout == printed)
        #expect(after.rendered.contains("downlink.delay = 800 ms\n"), "\(after.rendered)")
        #expect(after.rendered.contains("uplink.bandwidth = 1 Mbit/s\n"), "\(after.rendered)")
    }

    @Test(arguments: [
        (
            ["downlink.delay=800ms", "uplink.bandwidth=1mbit"],
            #""uplink.bandwidth = 1mbit": expected a rate"#
        ),
        (["downlink.delay", "800", "ms", "loss", "200", "%"], #""loss = 200 %": out of range"#),
        (
            ["downlink.delay", "=", "800", "ms", "uplink.bandwith", "=", "1", "Mbit/s"],
            #""uplink.bandwith = 1 Mbit/s": unknown key "uplink.bandwith"; did you mean "uplink.bandwidth"?"#
        ),
    ])
    func aBadPairExitsTwoNamingItAndChangesNothing(words: [String], named: String) throws {
        let instance = try ControlCommandTests.Instance(profile: "3g")
        defer { instance.stop() }
        let before = try profile(of: instance)

        let result = try instance.linkcond(["set"] + words)
        let after = try profile(of: instance)

        #expect(result.status == 2)
        #expect(result.stderr.contains(named), "\(result.stderr)")
        #expect(after.rendered == before.rendered)
        #expect(after.summary == before.summary)
        #expect(!after.summary.contains("800 ms"), "\(after.summary)")
    }
}
