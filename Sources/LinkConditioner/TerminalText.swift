/// Text from outside linkcond (a name a program looked up, a Toxiproxy proxy's name, a recording's fields) made
/// safe to show on a terminal or in a log line: every control character is shown escaped, as Swift writes it in a
/// string literal, so no such text can move the cursor, recolour or clear the screen, or forge a line of its own.
///
/// The one convention: `\n`, `\r`, `\t`, `\0`, and `\u{1b}` (hexadecimal) for every other C0 control, DEL and C1
/// control; a backslash is doubled, so an escape seen is always one linkcond made. JSON, the metrics and the HTML
/// report escape by their own rules and do not use it.
public enum TerminalText {
    /// `text` with its control characters and backslashes escaped; any thread.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\0": out += "\\0"
            case "\\": out += "\\\\"
            case _ where needsEscape(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Lines joined with newlines, each escaped, so a newline inside one line cannot start another.
    public static func lines(_ lines: [String]) -> String {
        lines.map(escaped).joined(separator: "\n")
    }

    /// C0 controls, DEL, C1 controls (a terminal may read U+009B as the start of an escape sequence), and the
    /// backslash that starts an escape.
    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
    }
}
