import Foundation

/// A timeline that changes a proxy's conditions over time, read from a plain-text file.
///
/// One step a line, `TIME ACTION`, times from the scenario's start in increasing order:
/// ```
/// # subway ride
/// 0s    lte
/// 30s   offline
/// 40s   edge
/// 50s   set downlink.delay = 800 ms; uplink.delay = 800 ms
/// 60s   ramp downlink.bandwidth from 50 Mbit/s to 1 Mbit/s over 20 s
/// 90s   repeat
/// ```
/// Actions: a profile name or path (which also brings the link back online), `offline [refuse|blackhole]`,
/// `online`, `set KEY = VALUE[; KEY = VALUE…]`, `ramp KEY from VALUE to VALUE over DURATION` (bandwidth, delay,
/// jitter or loss, linear), and a last line `repeat` (start over at the last step's time) or `TIME repeat`.
public struct Scenario: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        case profile(Profile)
        case settings([Setting])
        case offline(OfflineMode)
        case online
        case ramp(Ramp)
    }

    /// One `key = value` assignment, already validated against the profile format.
    public struct Setting: Sendable, Hashable {
        public var key: String
        public var value: String
    }

    public struct Step: Sendable, Hashable {
        /// When the step happens, from the start of the scenario (or of the current repetition).
        public var at: Duration
        public var action: Action
        /// The line it came from, for messages.
        public var line: Int
    }

    public var name: String
    public var steps: [Step]
    /// When set, the timeline starts over after this long.
    public var period: Duration?

    /// Parses a scenario; errors name `file:line`, the text and what was expected. Profile names are resolved now,
    /// so a scenario that parses can always run.
    ///
    /// `directory` is where the scenario file lives: relative trace paths in `set … trace = PATH` start there.
    public init(parsing text: String, name: String = "", file: String? = nil, directory: String? = nil) throws(ScenarioError) {
        self.name = name
        steps = []
        period = nil
        let source = file ?? (name.isEmpty ? "scenario" : "\(name).scenario")
        var lastTime: Duration = .zero
        var sawRepeat = false
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            if line.isEmpty { continue }
            func fail(_ expected: String) -> ScenarioError {
                ScenarioError(file: source, line: lineNumber, text: line, expected: expected)
            }
            if sawRepeat { throw fail("nothing after \"repeat\", which must be the last step") }
            if line == "repeat" {
                guard let last = steps.last else { throw fail("at least one step before \"repeat\"") }
                guard last.at > .zero else { throw fail("a last step later than 0s before a bare \"repeat\"") }
                period = last.at
                sawRepeat = true
                continue
            }
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard words.count == 2 else {
                throw fail("TIME ACTION, such as \"30s edge\"")
            }
            guard let at = Self.time(words[0]) else { throw fail("a time such as \"0s\", \"1.5s\", \"500ms\" or \"2min\" first") }
            guard steps.isEmpty || at >= lastTime else { throw fail("times in increasing order (previous step at \(Self.format(lastTime)))") }
            let action = words[1].trimmingCharacters(in: .whitespaces)
            if action == "repeat" {
                guard at > .zero, !steps.isEmpty else { throw fail("a repeat time after the first step") }
                period = at
                sawRepeat = true
                continue
            }
            steps.append(Step(at: at, action: try Self.action(action, directory: directory, fail: fail), line: lineNumber))
            lastTime = at
        }
        if steps.isEmpty {
            throw ScenarioError(file: source, line: nil, text: nil, expected: "at least one step, such as \"0s lte\"")
        }
    }

    /// Reads a scenario file; its errors name the file's base name.
    public init(contentsOfFile path: String) throws(ScenarioError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ScenarioError(file: path, line: nil, text: nil, expected: "a readable scenario file")
        }
        let base = URL(fileURLWithPath: path).lastPathComponent
        try self.init(parsing: String(decoding: data, as: UTF8.self),
                      name: base.hasSuffix(".scenario") ? String(base.dropLast(9)) : base, file: base,
                      directory: URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    private static func action(
        _ text: String, directory: String?, fail: (String) -> ScenarioError
    ) throws(ScenarioError) -> Action {
        let words = text.split(separator: " ").map(String.init)
        switch words[0] {
        case "online":
            guard words.count == 1 else { throw fail("nothing after \"online\"") }
            return .online
        case "offline":
            guard words.count <= 2 else { throw fail("\"offline\", \"offline refuse\" or \"offline blackhole\"") }
            guard let mode = words.count == 1 ? .refuse : OfflineMode(rawValue: words[1]) else {
                throw fail("\"offline\", \"offline refuse\" or \"offline blackhole\"")
            }
            return .offline(mode)
        case "set":
            let body = text.dropFirst(3)
            var settings: [Setting] = []
            var scratch = Profile.none
            for assignment in body.split(separator: ";") {
                var parts = assignment.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty else { throw fail("set KEY = VALUE[; KEY = VALUE…]") }
                if let directory, parts[0].hasSuffix("trace"), parts[1].contains("/"), !parts[1].hasPrefix("/") {
                    parts[1] = directory + "/" + parts[1]
                }
                do {
                    try scratch.set(parts[0], to: parts[1])
                } catch {
                    throw fail(error.expectation)
                }
                settings.append(Setting(key: parts[0], value: parts[1]))
            }
            guard !settings.isEmpty else { throw fail("set KEY = VALUE[; KEY = VALUE…]") }
            return .settings(settings)
        case "ramp":
            return .ramp(try Ramp(parsing: Array(words.dropFirst()), fail: fail))
        default:
            guard words.count == 1 else { throw fail("a profile name or path, offline, online, set or ramp") }
            do {
                return .profile(try Profile.load(words[0]))
            } catch {
                throw fail("a profile name or path (\(error.explanation))")
            }
        }
    }

    /// Parses `1.5s`, `500ms`, `2min`, `1h` or `0`.
    static func time(_ text: String) -> Duration? {
        if text == "0" { return .zero }
        for (unit, scale) in [("ms", 1e-3), ("min", 60.0), ("s", 1.0), ("h", 3600.0)] where text.hasSuffix(unit) {
            guard let value = Double(text.dropLast(unit.count)), value >= 0, value.isFinite else { return nil }
            return .nanoseconds(Int64((value * scale * 1e9).rounded()))
        }
        return nil
    }

    static func format(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }
}

/// A bad scenario line: where, what it said, and what was expected.
public struct ScenarioError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var text: String?
    public var expected: String

    public var description: String {
        let location = line.map { "\(file):\($0)" } ?? file
        if let text { return "\(location): \"\(text)\": expected \(expected)" }
        return "\(location): expected \(expected)"
    }
}

extension Scenario {
    /// The shipped scenarios' names.
    public static var builtInNames: [String] { BuiltInScenarioTexts.all.map(\.name) }

    /// Loads a scenario by path (anything with a `/` or ending in `.scenario`, or an existing file) or by the
    /// name of a shipped one; returns it with its text.
    public static func load(_ nameOrPath: String) throws(ScenarioError) -> (Scenario, String) {
        let isPath = nameOrPath.contains("/") || nameOrPath.hasSuffix(".scenario") || FileManager.default.fileExists(atPath: nameOrPath)
        if !isPath, let builtIn = BuiltInScenarioTexts.all.first(where: { $0.name == nameOrPath.lowercased() }) {
            return (try Scenario(parsing: builtIn.text + "\n", name: builtIn.name), builtIn.text + "\n")
        }
        guard isPath else {
            throw ScenarioError(file: nameOrPath, line: nil, text: nil,
                                expected: "a scenario file or one of: \(builtInNames.joined(separator: ", "))")
        }
        guard let data = FileManager.default.contents(atPath: nameOrPath) else {
            throw ScenarioError(file: nameOrPath, line: nil, text: nil, expected: "a readable scenario file")
        }
        let text = String(decoding: data, as: UTF8.self)
        return (try Scenario(contentsOfFile: nameOrPath), text)
    }
}

extension ProfileError {
    /// What was expected, without the leading "expected", for messages that add their own.
    var expectation: String {
        explanation.hasPrefix("expected ") ? String(explanation.dropFirst(9)) : explanation
    }
}
