/// One `key = value` setting as a person types it on a command line, checked as a profile file checks its line.
public struct SettingAssignment: Hashable, Sendable {
    /// The key as typed, such as `downlink.delay`.
    public var key: String
    /// The value, its words joined by single spaces, such as `800 ms`.
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    /// The setting as a line of a profile file or of a `POST /settings` body.
    public var line: String { "\(key) = \(value)" }

    /// The settings that command-line words give, each checked as a profile line is, so that a bad one is refused
    /// before any is applied.
    ///
    /// A setting is written `KEY=VALUE`, `KEY = VALUE` or `KEY VALUE`, and a value may take several words
    /// (`800 ms`). A word that is a key, or starts with `uplink.` or `downlink.`, starts the next setting unless a
    /// value is still due; a word `KEY=…` always does. A value that contains a key therefore needs the `KEY=VALUE`
    /// form, in one shell word.
    /// - Parameters:
    ///   - words: The command line's words after the command's name and options.
    ///   - readsFiles: Whether a value may name a file (a trace); false as the control endpoint checks it.
    /// - Throws: `ProfileError` naming the first bad setting as `key = value`, without file or line.
    public static func parse(words: [String], readsFiles: Bool = false) throws(ProfileError) -> [SettingAssignment] {
        var typed: [TypedSetting] = []
        for word in words {
            if let last = typed.last, last.awaitsValue {
                if word.hasPrefix("="), !last.sawEquals {
                    typed[typed.count - 1].sawEquals = true
                    typed[typed.count - 1].append(word.dropFirst())
                } else {
                    typed[typed.count - 1].append(word[...])
                }
            } else if let equals = word.firstIndex(of: "="), !word[..<equals].allSatisfy(\.isWhitespace) {
                var setting = TypedSetting(key: trimmed(word[..<equals]), sawEquals: true)
                setting.append(word[word.index(after: equals)...])
                typed.append(setting)
            } else if typed.isEmpty || startsSetting(word) {
                typed.append(TypedSetting(key: word, sawEquals: false))
            } else {
                typed[typed.count - 1].append(word[...])
            }
        }
        var assignments: [SettingAssignment] = []
        var earlier: [String: String] = [:]
        for setting in typed {
            let assignment = SettingAssignment(key: setting.key, value: setting.words.joined(separator: " "))
            if assignment.value.contains(where: \.isNewline) {
                throw ProfileError(text: assignment.line, kind: .invalidValue(expected: "a value on one line"))
            }
            var scratch = Profile.none
            try scratch.set(assignment.key, to: assignment.value, readsFiles: readsFiles)
            // Known, since `set` accepted it.
            let name = (try? ProfileKey.named(assignment.key).name) ?? assignment.key
            if let first = earlier[name] {
                throw ProfileError(
                    text: assignment.line,
                    kind: .invalidValue(expected: "each key once (\(name) is already set to \"\(first)\" here)"))
            }
            earlier[name] = assignment.value
            assignments.append(assignment)
        }
        return assignments
    }

    /// A setting while its words are read.
    private struct TypedSetting {
        var key: String
        var sawEquals: Bool
        var words: [String] = []

        /// Whether no value word has come yet, so the next word is the value whatever it looks like.
        var awaitsValue: Bool { words.isEmpty }

        /// Adds a word of the value; an empty one (what follows a bare `=`) adds nothing.
        mutating func append(_ word: Substring) {
            let text = trimmed(word)
            if !text.isEmpty { words.append(text) }
        }
    }

    /// Whether `word` names a key, so it ends the value before it.
    private static func startsSetting(_ word: String) -> Bool {
        if word.hasPrefix("uplink.") || word.hasPrefix("downlink.") { return true }
        return (try? ProfileKey.named(word)) != nil
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
