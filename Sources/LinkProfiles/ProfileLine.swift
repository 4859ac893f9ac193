/// One meaningful line of a profile file, `key = value`, with its comment removed.
///
/// A `#` starts a comment anywhere outside a quoted value. Only `description` needs quoting, and only when it
/// contains `#`, a line break or surrounding spaces; inside quotes `\"`, `\\`, `\n`, `\r`, `\t` and `\u{…}` are escapes.
struct ProfileLine: Sendable {
    struct Value: Hashable, Sendable {
        var text: String
        var isQuoted: Bool
    }

    var key: String
    var value: Value
    /// The line as written, without its comment and surrounding spaces, for error messages.
    var text: String

    /// Splits a profile into lines the way editors number them (LF, CRLF or CR).
    static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
    }

    /// Reads one line; `nil` for a blank or comment-only line.
    static func read(_ line: Substring) throws(ProfileError) -> ProfileLine? {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        while index < scalars.count, scalars[index] != "=", scalars[index] != "#" { index += 1 }
        let key = trimmed(scalars[0..<index])
        guard index < scalars.count, scalars[index] == "=", !key.isEmpty else {
            if key.isEmpty && (index == scalars.count || scalars[index] == "#") { return nil }
            throw ProfileError(text: withoutComment(scalars), kind: .malformedLine)
        }
        index += 1
        while index < scalars.count, isSpace(scalars[index]) { index += 1 }
        if index < scalars.count, scalars[index] == "\"" {
            return try readQuoted(scalars, key: key, from: index)
        }
        var end = index
        while end < scalars.count, scalars[end] != "#" { end += 1 }
        let value = trimmed(scalars[index..<end])
        return ProfileLine(key: key, value: Value(text: value, isQuoted: false), text: trimmed(scalars[0..<end]))
    }

    private static func readQuoted(_ scalars: [Unicode.Scalar], key: String, from start: Int) throws(ProfileError)
        -> ProfileLine
    {
        let expected = "a quoted text that ends with \" (escapes: \\\" \\\\ \\n \\r \\t \\u{…})"
        var value = String.UnicodeScalarView()
        var index = start + 1
        var closed = false
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            if scalar == "\"" {
                closed = true
                break
            }
            guard scalar == "\\" else {
                value.append(scalar)
                continue
            }
            guard index < scalars.count, let escaped = unescape(scalars, at: &index) else {
                throw ProfileError(text: withoutComment(scalars), kind: .invalidValue(expected: expected))
            }
            value.append(escaped)
        }
        var rest = index
        while rest < scalars.count, isSpace(scalars[rest]) { rest += 1 }
        guard closed, rest == scalars.count || scalars[rest] == "#" else {
            throw ProfileError(text: withoutComment(scalars), kind: .invalidValue(expected: expected))
        }
        return ProfileLine(
            key: key, value: Value(text: String(value), isQuoted: true), text: trimmed(scalars[0..<index]))
    }

    /// Reads the escape after a backslash, advancing `index` past it.
    private static func unescape(_ scalars: [Unicode.Scalar], at index: inout Int) -> Unicode.Scalar? {
        let scalar = scalars[index]
        index += 1
        switch scalar {
        case "\"", "\\": return scalar
        case "n": return "\n"
        case "r": return "\r"
        case "t": return "\t"
        case "u":
            guard index < scalars.count, scalars[index] == "{",
                let close = scalars[index...].firstIndex(of: "}")
            else { return nil }
            let hex = String(String.UnicodeScalarView(scalars[(index + 1)..<close]))
            index = close + 1
            return UInt32(hex, radix: 16).flatMap(Unicode.Scalar.init)
        default: return nil
        }
    }

    /// `text` as a value the reader gives back unchanged: bare when it can be, quoted and escaped otherwise.
    static func quotedIfNeeded(_ text: String) -> String {
        let needsQuotes =
            text.unicodeScalars.contains {
                $0 == "#" || $0.properties.generalCategory == .control || $0.properties.isWhitespace && $0 != " "
            }
            || text.hasPrefix("\"") || text.hasPrefix(" ") || text.hasSuffix(" ")
        guard needsQuotes else { return text }
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case _
            where scalar.properties.generalCategory == .control || scalar.properties.isWhitespace && scalar != " ":
                quoted += "\\u{\(String(scalar.value, radix: 16))}"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t"
    }

    private static func trimmed(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var slice = scalars
        while let first = slice.first, isSpace(first) { slice.removeFirst() }
        while let last = slice.last, isSpace(last) { slice.removeLast() }
        return String(String.UnicodeScalarView(slice))
    }

    private static func withoutComment(_ scalars: [Unicode.Scalar]) -> String {
        trimmed(scalars[0..<(scalars.firstIndex(of: "#") ?? scalars.count)])
    }
}
