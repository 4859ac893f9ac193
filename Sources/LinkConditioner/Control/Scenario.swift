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
        /// The action as the scenario's author wrote it (`edge`, `set downlink.delay = 800 ms`), comment and
        /// surrounding spaces left out: what status shows for the step.
        public var text: String
    }

    public var name: String
    public var steps: [Step]
    /// When set, the timeline starts over after this long.
    public var period: Duration?

    /// Parses a scenario; errors name `file:line`, the text and what was expected. Profile names are resolved now,
    /// so a scenario that parses can always run. With `builtInProfilesOnly` (the control endpoint) a profile step
    /// must name a built-in profile and a `set` step a built-in trace: no file is read, and a step naming one is
    /// refused at its line.
    ///
    /// `directory` is where the scenario file lives: relative trace paths in `set … trace = PATH` start there.
    public init(
        parsing text: String, name: String = "", file: String? = nil, directory: String? = nil,
        builtInProfilesOnly: Bool = false
    ) throws(ScenarioError) {
        self.name = name
        steps = []
        period = nil
        let source = file ?? (name.isEmpty ? "scenario" : "\(name).scenario")
        var lastTime: Duration = .zero
        var sawRepeat = false
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line =
                rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            if line.isEmpty { continue }
            func fail(_ expected: String) -> ScenarioError {
                ScenarioError(file: source, line: lineNumber, text: line, expected: expected)
            }
            if sawRepeat { throw fail("nothing after \"repeat\", which must be the last step") }
            if line == "repeat" {
                guard let last = steps.last else { throw fail("at least one step before \"repeat\"") }
                guard last.at > .zero else { throw fail("a last step later than 0s before a bare \"repeat\"") }
                guard last.at >= Self.shortestRepeat else { throw fail(Self.expectedRepeat) }
                period = last.at
                sawRepeat = true
                continue
            }
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard words.count == 2 else {
                throw fail("TIME ACTION, such as \"30s edge\"")
            }
            let at: Duration
            switch Self.time(words[0]) {
            case .time(let time): at = time
            case .notATime: throw fail("a time such as \"0s\", \"1.5s\", \"500ms\" or \"2min\" first")
            case .outOfRange: throw fail("a time from 0s to \(Self.longestTimeText) first")
            }
            guard steps.isEmpty || at >= lastTime else {
                throw fail("times in increasing order (previous step at \(Self.format(lastTime)))")
            }
            let action = words[1].trimmingCharacters(in: .whitespaces)
            if action == "repeat" {
                guard at > .zero, !steps.isEmpty else { throw fail("a repeat time after the first step") }
                guard at >= Self.shortestRepeat else { throw fail(Self.expectedRepeat) }
                period = at
                sawRepeat = true
                continue
            }
            steps.append(
                Step(
                    at: at,
                    action: try Self.action(
                        action, directory: directory, builtInProfilesOnly: builtInProfilesOnly, fail: fail),
                    line: lineNumber, text: action))
            lastTime = at
        }
        if steps.isEmpty {
            throw ScenarioError(file: source, line: nil, text: nil, expected: "at least one step, such as \"0s lte\"")
        }
    }

    /// Reads a scenario file; its errors name the file's base name.
    public init(contentsOfFile path: String) throws(ScenarioError) {
        try self.init(text: try Self.text(ofFile: path), ofFile: path)
    }

    /// Parses `text`, read from the file at `path` (once: a pipe gives its text only once).
    private init(text: String, ofFile path: String, builtInProfilesOnly: Bool = false) throws(ScenarioError) {
        let base = URL(fileURLWithPath: path).lastPathComponent
        try self.init(
            parsing: text,
            name: base.hasSuffix(".scenario") ? String(base.dropLast(9)) : base, file: base,
            directory: URL(fileURLWithPath: path).deletingLastPathComponent().path,
            builtInProfilesOnly: builtInProfilesOnly)
    }

    private static func action(
        _ text: String, directory: String?, builtInProfilesOnly: Bool, fail: (String) -> ScenarioError
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
            // A step is one change, as a profile file is: a key set twice in it is refused, not won by the last.
            var keys: Set<String> = []
            for assignment in body.split(separator: ";") {
                var parts = assignment.split(separator: "=", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                guard parts.count == 2, !parts[0].isEmpty else { throw fail("set KEY = VALUE[; KEY = VALUE…]") }
                if let key = try? ProfileKey.named(parts[0]), !keys.insert(key.name).inserted {
                    throw fail("each key once in a step (\"\(key.name)\" is set twice; set each key once)")
                }
                if let directory, parts[0].hasSuffix("trace"), parts[1].contains("/"), !parts[1].hasPrefix("/") {
                    parts[1] = directory + "/" + parts[1]
                }
                do {
                    try scratch.set(parts[0], to: parts[1], readsFiles: !builtInProfilesOnly)
                } catch {
                    throw fail("").explained(by: error)
                }
                settings.append(Setting(key: parts[0], value: parts[1]))
            }
            guard !settings.isEmpty else { throw fail("set KEY = VALUE[; KEY = VALUE…]") }
            return .settings(settings)
        case "ramp":
            return .ramp(try Ramp(parsing: Array(words.dropFirst()), fail: fail))
        default:
            guard words.count == 1 else { throw fail("a profile name or path, offline, online, set or ramp") }
            if builtInProfilesOnly && (words[0].contains("/") || words[0].hasSuffix(".profile")) {
                throw fail(
                    "a built-in profile name: a running linkcond reads no files, so play a scenario that names profile files with \"linkcond run --scenario FILE\""
                )
            }
            do {
                return .profile(try builtInProfilesOnly ? Profile.namedBuiltIn(words[0]) : Profile.load(words[0]))
            } catch {
                throw fail("a profile name or path (\(error.explanation))")
            }
        }
    }

    /// The latest time a step may have, and the longest repeat period and ramp: a year, far inside the loop
    /// clock's range, so adding times and periods never overflows.
    static let longestTime: Duration = .seconds(8760 * 3600)
    static let longestTimeText = "8760h (a year)"
    /// The shortest repeat period: shorter ones would replay the whole scenario faster than a loop turn.
    static let shortestRepeat: Duration = .milliseconds(10)
    static let expectedRepeat = "a repeat period from 10ms to \(longestTimeText)"

    /// What a time text reads as.
    enum TimeReading: Equatable {
        case time(Duration)
        case notATime
        /// A number of the right form beyond `longestTime`.
        case outOfRange
    }

    /// Parses `1.5s`, `500ms`, `2min`, `1h` or `0`, up to `longestTime`.
    static func time(_ text: String) -> TimeReading {
        if text == "0" { return .time(.zero) }
        for (unit, scale) in [("ms", 1e-3), ("min", 60.0), ("s", 1.0), ("h", 3600.0)] where text.hasSuffix(unit) {
            // Decimal digits and a point only: Double also reads "0x10" (16), "1e3", "+5" and "nan".
            let number = text.dropLast(unit.count)
            guard number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                let value = Double(number), value >= 0, value.isFinite
            else { return .notATime }
            let seconds = value * scale
            guard seconds <= longestTime.seconds else { return .outOfRange }
            return .time(.nanoseconds(Int64(roundingClamped: seconds * 1e9)))
        }
        return .notATime
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
    /// What was wrong and what was expected, as the message says it after the location and the text.
    public var explanation: String

    public init(file: String, line: Int?, text: String?, expected: String) {
        self.file = file
        self.line = line
        self.text = text
        explanation = "expected \(expected)"
    }

    public var description: String {
        let location = line.map { "\(file):\($0)" } ?? file
        if let text { return "\(location): \"\(text)\": \(explanation)" }
        return "\(location): \(explanation)"
    }

    /// This error's location and text with a setting's own explanation, which says what was wrong before what was
    /// expected ("out of range: expected …", "unknown key …"), so neither is lost nor "expected" said twice.
    func explained(by error: ProfileError) -> ScenarioError {
        var explained = self
        explained.explanation = error.explanation
        return explained
    }
}

extension Scenario {
    /// The shipped scenarios' names.
    public static var builtInNames: [String] { BuiltInScenarioTexts.all.map(\.name) }

    /// Loads a scenario by path (anything with a `/` or ending in `.scenario`, or an existing file) or by the
    /// name of a shipped one; returns it with its text. With `builtInProfilesOnly` a file is checked as a running
    /// linkcond will check its text (see `init(parsing:…)`), so a refusal names the file rather than the request.
    public static func load(_ nameOrPath: String, builtInProfilesOnly: Bool = false) throws(ScenarioError) -> (
        Scenario, String
    ) {
        let isPath =
            nameOrPath.contains("/") || nameOrPath.hasSuffix(".scenario")
            || FileManager.default.fileExists(atPath: nameOrPath)
        if !isPath, let builtIn = BuiltInScenarioTexts.all.first(where: { $0.name == nameOrPath.lowercased() }) {
            return (try Scenario(parsing: builtIn.text + "\n", name: builtIn.name), builtIn.text + "\n")
        }
        guard isPath else {
            throw ScenarioError(
                file: nameOrPath, line: nil, text: nil,
                expected: "a scenario file or one of: \(builtInNames.joined(separator: ", "))")
        }
        let text = try text(ofFile: nameOrPath)
        return (try Scenario(text: text, ofFile: nameOrPath, builtInProfilesOnly: builtInProfilesOnly), text)
    }

    /// A scenario file's text, read within `UserTextFile.limit`; errors name the path as given.
    static func text(ofFile path: String) throws(ScenarioError) -> String {
        switch UserTextFile.read(path) {
        case .success(let text): return text
        case .failure(let failure):
            var error = ScenarioError(file: path, line: nil, text: nil, expected: "a scenario file")
            error.explanation = failure.reason(for: "scenario")
            throw error
        }
    }
}
