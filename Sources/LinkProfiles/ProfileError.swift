/// A profile that could not be read, parsed or found, located by file and line so the user can fix it.
///
/// Its description reads like a compiler diagnostic:
/// `edge.profile:3: "downlink.delay = 400 mss": expected a duration such as "400 ms" (units: ns, µs, us, ms, s)`.
public struct ProfileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, independent of where.
    public enum Kind: Error, Hashable, Sendable {
        /// The line is not `key = value`.
        case malformedLine
        /// The key is not one the format knows; `suggestion` is the closest known key, if any is close.
        case unknownKey(String, suggestion: Suggestion)
        /// A connection-wide key written with an `uplink.`/`downlink.` prefix; `unprefixed` is the key to write.
        case connectionWideKey(String, unprefixed: String)
        /// The key was already set earlier in the same file, on `firstLine`.
        case duplicateKey(String, firstLine: Int)
        /// Nothing follows `=`; `expected` describes what should.
        case missingValue(expected: String)
        /// The value is a number without a unit.
        case missingUnit(expected: String)
        /// The value is not of the key's kind; `expected` describes what would be.
        case invalidValue(expected: String)
        /// The value is below zero where only zero or more makes sense.
        case negativeValue(expected: String)
        /// The value is zero where zero would stop all traffic (bandwidth, queue, burst).
        case zeroValue(expected: String)
        /// The value is beyond its range, such as a loss above 100 %.
        case outOfRange(expected: String)
        /// The file could not be read; `reason` says why.
        case unreadable(reason: String)
        /// No built-in profile has this name; `closest` lists the nearest names.
        case unknownProfile(String, closest: [String])
    }

    /// The file as the user named it, or `nil` for a setting given on its own (`linkcond set`).
    public var file: String?
    /// The 1-based line number, or `nil` when the problem concerns the whole file or no file.
    public var line: Int?
    /// The offending text, as written (without its comment).
    public var text: String?
    public var kind: Kind

    public init(file: String? = nil, line: Int? = nil, text: String? = nil, kind: Kind) {
        self.file = file
        self.line = line
        self.text = text
        self.kind = kind
    }

    public var description: String {
        var location = ""
        if let file { location += "\(file):" }
        if let line { location += "\(line):" }
        var parts: [String] = []
        if !location.isEmpty { parts.append(location) }
        if let text { parts.append("\"\(text)\":") }
        parts.append(explanation)
        return parts.joined(separator: " ")
    }

    /// The part of the description that says what was wrong and what was expected.
    public var explanation: String {
        switch kind {
        case .malformedLine:
            return "expected \"key = value\" (a comment starts with #)"
        case .unknownKey(let key, let suggestion):
            if let name = suggestion.name { return "unknown key \"\(key)\"; did you mean \"\(name)\"?" }
            let names = ProfileKey.all.filter { !$0.isDirectional }.map(\.name)
            return
                "unknown key \"\(key)\"; known keys: \(names.joined(separator: ", ")) (per-direction keys also take uplink. or downlink.)"
        case .connectionWideKey(_, let unprefixed):
            return
                "expected \"\(unprefixed) = …\" without uplink. or downlink. (\(unprefixed) concerns the whole connection, not one direction)"
        case .duplicateKey(let key, let firstLine):
            return "\"\(key)\" is already set on line \(firstLine); set each key once"
        case .missingValue(let expected):
            return "missing value: expected \(expected)"
        case .missingUnit(let expected):
            return "missing unit: expected \(expected)"
        case .invalidValue(let expected):
            return "expected \(expected)"
        case .negativeValue(let expected):
            return "negative value: expected \(expected)"
        case .zeroValue(let expected):
            return "zero would stop all traffic: expected \(expected)"
        case .outOfRange(let expected):
            return "out of range: expected \(expected)"
        case .unreadable(let reason):
            return reason
        case .unknownProfile(let name, let closest):
            let hint = closest.isEmpty ? "" : "; closest: \(closest.joined(separator: ", "))"
            return "no built-in profile \"\(name)\"\(hint) (\"linkcond profiles\" lists them all)"
        }
    }
}

extension ProfileError {
    /// A did-you-mean for an unknown name, looked for only when it is read: most unknown keys a parser meets end in
    /// a `try?` or a refusal nobody prints, and the edit distances cost more than the rest of the parse.
    ///
    /// Two suggestions are equal when they name the same candidate (or none), however they were made.
    public struct Suggestion: Hashable, Sendable, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
        private enum Source: Sendable {
            case given(String?)
            case closest(to: String, among: [String])
        }

        private let source: Source

        /// The suggested name, or nil when no candidate is close enough to be a plausible typo.
        public var name: String? {
            switch source {
            case .given(let name): name
            case .closest(let asked, let candidates): NameSuggestion.closest(to: asked, among: candidates)
            }
        }

        public init(_ name: String?) { source = .given(name) }
        public init(stringLiteral name: String) { source = .given(name) }
        public init(nilLiteral: ()) { source = .given(nil) }

        /// The candidate nearest to `asked`, found each time `name` is read.
        static func closest(to asked: String, among candidates: [String]) -> Suggestion {
            Suggestion(source: .closest(to: asked, among: candidates))
        }

        private init(source: Source) { self.source = source }

        public static func == (lhs: Suggestion, rhs: Suggestion) -> Bool { lhs.name == rhs.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }
}

/// Nearest-name suggestions by Levenshtein edit distance, for did-you-mean hints.
package enum NameSuggestion {
    /// Names whose lengths differ by more than this are no typo of each other: the length difference (a lower
    /// bound of the distance) stands in, so a megabyte-long unknown key costs a count, not a quadratic table.
    static let comparableLengthDifference = 32

    /// The number of single-character insertions, deletions and substitutions that turn `a` into `b`.
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let lengthDifference = abs(a.utf8.count - b.utf8.count)
        if lengthDifference > comparableLengthDifference { return lengthDifference }
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// The candidates sorted from nearest to farthest from `name` (stable among ties).
    package static func ranked(_ name: String, among candidates: [String]) -> [String] {
        candidates.enumerated()
            .map { (offset: $0.offset, name: $0.element, distance: editDistance(name, $0.element)) }
            .sorted { ($0.distance, $0.offset) < ($1.distance, $1.offset) }
            .map(\.name)
    }

    /// The nearest candidate if it is close enough to be a plausible typo: at most a third of the name's length, or 2.
    static func closest(to name: String, among candidates: [String]) -> String? {
        guard let best = ranked(name, among: candidates).first else { return nil }
        return editDistance(name, best) <= max(2, name.count / 3) ? best : nil
    }
}
