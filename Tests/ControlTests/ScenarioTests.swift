import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// The scenario format, and scenarios played against a running proxy.
struct ScenarioFormatTests {
    @Test func parsesStepsWithProfilesOfflineSettingsRampsAndRepeat() throws {
        let text = """
            # commute
            0s    lte
            30s   offline blackhole
            40s   set downlink.delay = 800 ms; loss = 2 %
            45s   ramp downlink.bandwidth from 50 Mbit/s to 1 Mbit/s over 20s
            70s   online
            90s   repeat
            """

        let scenario = try Scenario(parsing: text, name: "commute")

        #expect(scenario.steps.map(\.at) == [.zero, .seconds(30), .seconds(40), .seconds(45), .seconds(70)])
        #expect(scenario.steps.map(\.line) == [2, 3, 4, 5, 6])
        #expect(scenario.period == .seconds(90))
        #expect(scenario.steps[1].action == .offline(.blackhole))
        guard case .ramp(let ramp) = scenario.steps[3].action else {
            Issue.record("step 4 is not a ramp")
            return
        }
        #expect(ramp.from == 50e6 && ramp.to == 1e6 && ramp.over == .seconds(20) && ramp.downlink && !ramp.uplink)
    }

    @Test func aBareRepeatStartsOverAtTheLastStepsTime() throws {
        let scenario = try Scenario(parsing: "0s lte\n30s offline\n40s edge\nrepeat\n")

        #expect(scenario.period == .seconds(40))
    }

    @Test func errorsNameTheFileLineTextAndWhatWasExpected() {
        let cases: [(String, String)] = [
            (
                "0s lte\n10s nosuchprofile\n",
                "subway.scenario:2: \"10s nosuchprofile\": expected a profile name or path"
            ),
            ("0s lte\n5s edge\n3s lte\n", "subway.scenario:3: \"3s lte\": expected times in increasing order"),
            ("soon lte\n", "subway.scenario:1: \"soon lte\": expected a time"),
            ("0x10s lte\n", "subway.scenario:1: \"0x10s lte\": expected a time such as"),
            ("1e3s lte\n", "subway.scenario:1: \"1e3s lte\": expected a time such as"),
            (
                "0s set downlink.delay = 4 parsecs\n",
                "subway.scenario:1: \"0s set downlink.delay = 4 parsecs\": expected a duration"
            ),
            (
                "0s ramp bandwidth from 1 Mbit/s to 2 Mbit/s\n",
                "subway.scenario:1: \"0s ramp bandwidth from 1 Mbit/s to 2 Mbit/s\": expected ramp KEY"
            ),
            (
                "0s lte\n5s set downlink.connect.stall = 5 s\n",
                "subway.scenario:2: \"5s set downlink.connect.stall = 5 s\": expected \"connect.stall = …\" without uplink. or downlink."
            ),
            (
                "0s lte\n5s edge\nrepeat\n10s edge\n",
                "subway.scenario:4: \"10s edge\": expected nothing after \"repeat\""
            ),
            (
                "0s lte\n5s set delay = 1 ms; loss = 1 %; delay = 2 ms\n",
                "subway.scenario:2: \"5s set delay = 1 ms; loss = 1 %; delay = 2 ms\": expected each key once in a step (\"delay\" is set twice"
            ),
            ("# nothing\n", "subway.scenario: expected at least one step"),
        ]
        for (text, message) in cases {
            #expect(throws: ScenarioError.self) { try Scenario(parsing: text, name: "subway") }
            do {
                _ = try Scenario(parsing: text, name: "subway")
            } catch {
                #expect(error.description.hasPrefix(message), "\(error)")
            }
        }
    }

    /// A setting's own problem (unknown key, out of range, a missing trace file) reads as the profile format says
    /// it, once, after the line: not "expected unknown key" nor "expected out of range: expected".
    @Test func aBadSettingOrRampValueSaysWhatWasWrongOnce() {
        let cases: [(String, String)] = [
            ("0s set foo = 1\n", "subway.scenario:1: \"0s set foo = 1\": unknown key \"foo\";"),
            (
                "0s set loss = 101 %\n",
                "subway.scenario:1: \"0s set loss = 101 %\": out of range: expected a percentage from 0 % to 100 %"
            ),
            (
                "0s ramp loss from 1 % to 200 % over 1s\n",
                "subway.scenario:1: \"0s ramp loss from 1 % to 200 % over 1s\": out of range: expected a percentage"
            ),
            (
                "0s set delay = -5 ms\n",
                "subway.scenario:1: \"0s set delay = -5 ms\": negative value: expected a duration"
            ),
            (
                "0s set trace = /nonexistent/down\n",
                "subway.scenario:1: \"0s set trace = /nonexistent/down\": /nonexistent/down: no such trace file"
            ),
            (
                "0s ramp delay from 0 ms to 100 ms over 20 s\n",
                "subway.scenario:1: \"0s ramp delay from 0 ms to 100 ms over 20 s\": expected one word after \"over\", a duration without a space such as \"20s\" (not \"20 s\")"
            ),
        ]
        for (text, message) in cases {
            do {
                _ = try Scenario(parsing: text, name: "subway")
                Issue.record("\(text) parsed")
            } catch {
                #expect(error.description.hasPrefix(message), "\(error)")
            }
        }
    }

    @Test func aDirectoryOrAnEndlessDeviceIsRefusedAsWhatItIs() {
        let folder = NSTemporaryDirectory()
        let cases = [
            (folder, "is a directory, not a scenario file"),
            ("/dev/zero", "is larger than a scenario file may be: at most 1 MiB (1048576 bytes)"),
        ]
        for (path, reason) in cases {
            do {
                _ = try Scenario.load(path)
                Issue.record("\(path) loaded as a scenario")
            } catch {
                #expect(error.description == "\(path): \(reason)")
            }
        }
    }

    /// What `linkcond scenario --check <(…)` opens: a pipe, which gives its text only once.
    @Test func aPipeIsReadOnce() throws {
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(Data("0s lte\n10s edge\n".utf8))
        try pipe.fileHandleForWriting.close()
        defer { try? pipe.fileHandleForReading.close() }

        let (scenario, text) = try Scenario.load("/dev/fd/\(pipe.fileHandleForReading.fileDescriptor)")

        #expect(scenario.steps.count == 2)
        #expect(text == "0s lte\n10s edge\n")
    }

    @Test func everyShippedScenarioParsesAndMatchesItsFile() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasSuffix(".scenario")
        }.sorted()

        #expect(files.map { String($0.dropLast(9)) } == Scenario.builtInNames.sorted())
        for file in files {
            let (builtIn, text) = try Scenario.load(String(file.dropLast(9)))
            let onDisk = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(text == onDisk, "\(file) differs from its built-in copy")
            #expect(try Scenario(contentsOfFile: directory.appendingPathComponent(file).path).steps == builtIn.steps)
        }
    }
}

/// Scenarios played against a running proxy: what its runner applied, and when by its own clock.
@Suite(.serialized)
struct ScenarioPlaybackTests {
    /// The runner applies each step at or after its time in every repetition, by its own clock, and while the
    /// status names a step its setting is in force: round trips under the 150 ms step take at least 150 ms.
    @Test func stepsTakeEffectAtTheirTimesAndRepeat() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.inFront(of: echo.port, profile: .none)
        defer { proxy.stop() }
        let scenario = try Scenario(
            parsing: "0s set uplink.delay = 0 ms\n0.4s set uplink.delay = 150 ms\n0.8s repeat\n")
        let client = try TestConnection.connect(port: proxy.port)
        defer { client.close() }
        struct Observation {
            var line: Int
            var appliedSeconds: Double
            var repetition: Int
            var delay: Duration
            var roundTrip: Double
        }
        /// Whether both steps were seen in two repetitions each.
        func sawEachStepTwice(_ observations: [Observation]) -> Bool {
            [1, 2].allSatisfy { line in Set(observations.filter { $0.line == line }.map(\.repetition)).count >= 2 }
        }

        proxy.startScenario(scenario)
        var observations: [Observation] = []
        let start = MonotonicClock().now()
        while !sawEachStepTwice(observations) && secondsSince(start) < 20 && observations.count < 2_000 {
            let before = proxy.report().scenario
            let delay = proxy.profile.uplink.delay
            let sent = MonotonicClock().now()
            try client.send([7])
            _ = try client.receive(exactly: 1)
            let roundTrip = secondsSince(sent)
            let after = proxy.report().scenario
            // Kept only when no step was applied meanwhile, so the delay read and the round trip belong to the step.
            if let before, let after, let line = before.step, let applied = before.stepAppliedSeconds,
                after.step == line,
                after.repetitions == before.repetitions, after.stepAppliedSeconds == applied
            {
                observations.append(
                    Observation(
                        line: line, appliedSeconds: applied, repetition: before.repetitions,
                        delay: delay, roundTrip: roundTrip))
            }
            usleep(5_000)
        }

        let first = observations.filter { $0.line == 1 }
        let second = observations.filter { $0.line == 2 }
        #expect(
            sawEachStepTwice(observations),
            "steps seen (line, repetition): \(observations.map { ($0.line, $0.repetition) })")
        #expect(first.allSatisfy { $0.appliedSeconds >= 0 && $0.delay == .zero }, "\(first)")
        #expect(second.allSatisfy { $0.appliedSeconds >= 0.4 && $0.delay == .milliseconds(150) }, "\(second)")
        #expect(
            second.allSatisfy { $0.roundTrip >= 0.1495 },
            "round trips under the 150 ms step: \(second.map(\.roundTrip))")
    }

    @Test func aRampMovesTheRateGradually() throws {
        let proxy = try ConditionedProxy.inFront(of: 9, profile: .none)
        defer { proxy.stop() }
        let scenario = try Scenario(parsing: "0s ramp downlink.bandwidth from 10 Mbit/s to 2 Mbit/s over 3s\n")
        /// The ramp's rate `seconds` into it.
        func rate(at seconds: Double) -> Double { 10e6 - 8e6 * min(max(seconds / 3, 0), 1) }

        proxy.startScenario(scenario)
        var readings: [(rate: Double, elapsed: Double)] = []
        let ended = waitUntil(seconds: 30) {
            let rate = proxy.profile.downlink.bandwidth?.bitsPerSecond ?? 0
            let elapsed = proxy.report().scenario?.elapsedSeconds ?? 0
            readings.append((rate, elapsed))
            return rate == 2e6
        }

        // Each rate was applied on the runner's own clock no later than the elapsed time read after it, so it is
        // never ahead of the ramp; the ramp re-applies every 100 ms, so the readings step down through values
        // between its ends. How far a loaded machine lets it lag is the scheduler's, not the runner's decision.
        #expect(ended)
        #expect(
            readings.allSatisfy { $0.rate >= rate(at: $0.elapsed) - 1 },
            "a rate ahead of the ramp: \(readings.filter { $0.rate < rate(at: $0.elapsed) - 1 })")
        #expect(
            zip(readings, readings.dropFirst()).allSatisfy { $1.rate <= $0.rate }, "the rate rose during a falling ramp"
        )
        #expect(
            readings.contains { $0.rate > 2e6 && $0.rate < 10e6 },
            "no rate between the ramp's ends: \(Set(readings.map(\.rate)))")
    }
}
