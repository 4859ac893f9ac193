import Foundation
import LinkConditioner
import Testing

/// Bodies the control endpoint refuses, sent over a real control connection to a real `linkcond run`: each refusal
/// names where the problem is and what was expected, and the running profile stays as it was.
@Suite(.serialized)
struct ControlBodyRefusalTests {
    /// A key twice in one `POST /settings` is refused as a profile file refuses it, naming the key and both lines,
    /// rather than the last one winning.
    @Test func settingsThatSetAKeyTwiceAreRefusedNamingBothLinesAndChangeNothing() throws {
        let instance = try ControlCommandTests.Instance(profile: "edge")
        defer { instance.stop() }
        let client = ControlClient(address: .unix(instance.socketPath))

        let twice = try client.send("POST", "/settings", body: "delay = 10 ms\nloss = 1 %\ndelay = 20 ms\n")
        let profile = try client.send("GET", "/profile")

        #expect(twice.status == 400)
        #expect(
            twice.body.contains(
                "request body:3: \"delay = 20 ms\": \"delay\" is already set on line 1; set each key once"),
            "\(twice.body)")
        #expect(
            profile.body.contains("downlink.delay = 400 ms"), "profile changed by a refused request: \(profile.body)")
        #expect(profile.body.contains("downlink.loss = 0 %"), "profile changed by a refused request: \(profile.body)")
    }

    /// The same key for both directions and for one direction are two keys, as in a profile file.
    @Test func settingsForBothDirectionsAndForOneAreNotATwice() throws {
        let instance = try ControlCommandTests.Instance(profile: "edge")
        defer { instance.stop() }
        let client = ControlClient(address: .unix(instance.socketPath))

        let both = try client.send("POST", "/settings", body: "delay = 10 ms\ndownlink.delay = 20 ms\n")

        #expect(both.status == 200, "\(both.body)")
        #expect(both.body.contains("downlink.delay = 20 ms"), "\(both.body)")
        #expect(both.body.contains("uplink.delay = 10 ms"), "\(both.body)")
    }

    /// A scenario whose `set` step names a trace file plays fine with `linkcond run --scenario`, but a running
    /// linkcond reads no files: `linkcond scenario FILE` is refused naming the scenario and the step's line.
    @Test func aScenarioSettingATraceFileIsRefusedAtItsFileAndLine() throws {
        let instance = try ControlCommandTests.Instance()
        defer { instance.stop() }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "1\n3\n".write(toFile: folder + "/tunnel.down", atomically: true, encoding: .utf8)
        try "0s lte\n5s set downlink.trace = ./tunnel.down\n".write(
            toFile: folder + "/ride.scenario", atomically: true, encoding: .utf8)

        let play = try instance.linkcond(["scenario", folder + "/ride.scenario"])
        let status = try instance.linkcond(["status"])

        #expect(play.status == 2)
        #expect(
            play.stderr.contains(
                "ride.scenario:2: \"5s set downlink.trace = ./tunnel.down\": expected a built-in trace"),
            "\(play.stderr)")
        #expect(play.stderr.contains("a running linkcond reads no files"), "\(play.stderr)")
        #expect(!play.stderr.contains("request body"), "\(play.stderr)")
        #expect(!status.stdout.contains("scenario  ride"), "\(status.stdout)")
    }

    /// A scenario file with another extension is named as it is, not as "NAME.scenario" (the name the running
    /// linkcond is sent), because `linkcond scenario` checks it as the running linkcond will before sending it.
    @Test func aScenarioFileIsNamedAsItIsWhenARunningInstanceWouldRefuseIt() throws {
        let instance = try ControlCommandTests.Instance()
        defer { instance.stop() }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "delay = 5 ms\n".write(toFile: folder + "/train.profile", atomically: true, encoding: .utf8)
        try "0s lte\n5s ./train.profile\n".write(toFile: folder + "/ride.txt", atomically: true, encoding: .utf8)

        let play = try instance.linkcond(["scenario", folder + "/ride.txt"])

        #expect(play.status == 2)
        #expect(
            play.stderr.contains("ride.txt:2: \"5s ./train.profile\": expected a built-in profile name"),
            "\(play.stderr)")
        #expect(!play.stderr.contains("ride.txt.scenario"), "\(play.stderr)")
    }

    /// `linkcond use FILE` checks the file as the running linkcond will, so a trace file is refused naming the
    /// profile file and its line.
    @Test func useOfAProfileSettingATraceFileIsRefusedAtItsFileAndLine() throws {
        let instance = try ControlCommandTests.Instance(profile: "edge")
        defer { instance.stop() }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "1\n3\n".write(toFile: folder + "/tunnel.down", atomically: true, encoding: .utf8)
        try "delay = 5 ms\ndownlink.trace = ./tunnel.down\n".write(
            toFile: folder + "/tunnel.profile", atomically: true, encoding: .utf8)

        let use = try instance.linkcond(["use", folder + "/tunnel.profile"])
        let status = try instance.linkcond(["status"])

        #expect(use.status == 2)
        #expect(
            use.stderr.contains("tunnel.profile:2: \"downlink.trace = ./tunnel.down\": expected a built-in trace"),
            "\(use.stderr)")
        #expect(!use.stderr.contains("request body"), "\(use.stderr)")
        #expect(status.stdout.contains("profile   edge:"), "\(status.stdout)")
    }

    private static func folder() throws -> String {
        let folder = NSTemporaryDirectory() + "linkcond-refusal-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }
}
