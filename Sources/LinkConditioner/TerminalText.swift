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

    /// The columns `text` takes on a terminal: two for an East Asian wide or fullwidth character or an emoji shown
    /// as one, none for a combining mark or a format character, one for the rest. Every view that fits a width
    /// (`status`, `ps`) measures, clips and pads with it, so a CJK name is not counted as half its width. Text is
    /// escaped first: a control character has no width of its own here.
    public static func columns(_ text: some StringProtocol) -> Int {
        text.reduce(0) { $0 + columns(of: $1) }
    }

    /// The longest start of `text` no wider than `width` columns, never splitting a character.
    public static func prefix(_ text: some StringProtocol, columns width: Int) -> Substring {
        let whole = Substring(text)
        var used = 0
        for index in whole.indices {
            used += columns(of: whole[index])
            if used > width { return whole[..<index] }
        }
        return whole
    }

    /// One character's columns: the widest of its scalars, so a base letter with its accents is one column and an
    /// emoji sequence joined by U+200D is two.
    private static func columns(of character: Character) -> Int {
        character.unicodeScalars.reduce(0) { max($0, columns(of: $1)) }
    }

    private static func columns(of scalar: Unicode.Scalar) -> Int {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1160...0x11FF).contains(scalar.value) { return 0 } // Hangul vowels and finals join the syllable
        if scalar.properties.isEmojiPresentation { return 2 }
        return wideRanges.contains { $0.contains(scalar.value) } ? 2 : 1
    }

    /// Unicode's East Asian Wide (W) and Fullwidth (F) blocks, as terminals' wcwidth tables group them: Hangul
    /// Jamo, CJK punctuation and radicals, kana, CJK ideographs, Yi, Hangul syllables, compatibility ideographs,
    /// vertical and small forms, fullwidth forms, and the supplementary ideographic planes.
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
        0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19,
        0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1B000...0x1B2FF, 0x1F200...0x1F2FF,
        0x20000...0x2FFFD, 0x30000...0x3FFFD,
    ]

    /// C0 controls, DEL, C1 controls (a terminal may read U+009B as the start of an escape sequence), and the
    /// backslash that starts an escape.
    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
    }
}
