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
        #expect(twice.body.contains("request body:3: \"delay = 20 ms\": \"delay\" is already set on line 1; set each key once"),
                "\(twice.body)")
        #expect(profile.body.contains("downlink.delay = 400 ms"), "profile changed by a refused request: \(profile.body)")
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
}
