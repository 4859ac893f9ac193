/// An HTML page built from literal markup and escaped text, so no text from a recording can become markup.
///
/// Markup comes only from `StaticString`s, which are literals in linkcond's source; every `String` (a host, a
/// profile's name, an attribute's value) goes in through `text` or an attribute and is escaped on the way: `&`, `<`,
/// `>`, `"` and `'` become entities, which is enough both in an element's content and in a quoted attribute value.
/// A value filled on one thread, then read from `html`.
struct HTMLWriter {
    private(set) var html = ""

    /// Markup written in linkcond's source: tags, entities, the page's head and style.
    mutating func markup(_ literal: StaticString) {
        html += literal.description
    }

    /// Text, escaped.
    mutating func text(_ value: String) {
        for character in value.unicodeScalars {
            switch character {
            case "&": html += "&amp;"
            case "<": html += "&lt;"
            case ">": html += "&gt;"
            case "\"": html += "&quot;"
            case "'": html += "&#39;"
            default: html.unicodeScalars.append(character)
            }
        }
    }

    /// `<tag name="value" …>`, each value escaped; `/>` ends it when `empty` (an SVG element with no content).
    mutating func open(
        _ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:], empty: Bool = false
    ) {
        html += "<"
        markup(tag)
        for (name, value) in attributes {
            html += " "
            markup(name)
            html += "=\""
            text(value)
            html += "\""
        }
        html += empty ? "/>" : ">"
    }

    mutating func close(_ tag: StaticString) {
        html += "</"
        markup(tag)
        html += ">"
    }

    /// An element with no content, such as an SVG `rect` or `line`.
    mutating func empty(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:]) {
        open(tag, attributes, empty: true)
    }

    /// An element whose content is `text`, escaped.
    mutating func element(
        _ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:], text content: String
    ) {
        open(tag, attributes)
        text(content)
        close(tag)
    }

    /// An element whose content `body` writes.
    mutating func element(
        _ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:],
        _ body: (inout HTMLWriter) -> Void
    ) {
        open(tag, attributes)
        body(&self)
        close(tag)
    }
}
