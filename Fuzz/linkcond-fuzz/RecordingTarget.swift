import Foundation

@testable import LinkConditioner

/// Recordings (`run --record`) read back by `linkcond report`: `Recording(data:file:)`, including a last line cut
/// short (read up to it), then the report, its summary and its page, as the command makes them from a file that may
/// be damaged or written by hand. Whatever the file holds, the page's elements are only the report's own, and the
/// summary holds no control character but its line breaks: a trap says which rule broke.
enum RecordingTarget {
    /// Every element `ReportPage` writes; anything else on a page came from the recording.
    static let pageElements: Set<String> = [
        "!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2", "p",
        "ul", "li", "b", "br", "i", "div", "svg", "g", "rect", "text", "line",
        "table", "tr", "th", "td", "span",
    ]

    static func run(_ input: FuzzInput) {
        guard let recording = try? Recording(data: Data(input.bytes), file: "fuzz.jsonl") else { return }
        let report = TrafficReport(recording)
        let summary = report.summary
        precondition(
            !summary.unicodeScalars.contains { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) },
            "a raw control character in the report's summary")
        let page = ReportPage.html(recording, report)
        for element in elementNames(page) {
            precondition(
                pageElements.contains(element),
                "an element <\(element)> on the report page that the report does not write")
        }
    }

    /// The names of the elements `html` opens or closes: what follows each `<` or `</`, lower-cased.
    static func elementNames(_ html: String) -> Set<String> {
        var names: Set<String> = []
        let bytes = Array(html.utf8)
        var index = 0
        while index < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: "<") else { continue }
            var start = index + 1
            if start < bytes.count && bytes[start] == UInt8(ascii: "/") { start += 1 }
            var end = start
            while end < bytes.count, isNameByte(bytes[end], first: end == start) { end += 1 }
            if end > start { names.insert(String(decoding: bytes[start..<end], as: UTF8.self).lowercased()) }
        }
        return names
    }

    private static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"): true
        case UInt8(ascii: "!"): first
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): !first
        default: false
        }
    }
}
