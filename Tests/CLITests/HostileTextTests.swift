import Foundation
import LoopbackPeers
import Testing

/// Text linkcond did not write itself (a recording's fields, a Toxiproxy proxy's name) shown by `report`, `status`
/// and the log: in the HTML page it stays text, never markup; on a terminal or in the log its control characters
/// are shown escaped, so it can neither drive the terminal nor forge a line.
@Suite(.serialized)
struct HostileTextTests {
    /// What each field carries: markup that would navigate the page, an element of its own, a terminal escape, and a
    /// line break followed by a forged line.
    static func payload(_ field: String) -> String {
        "\"'><meta http-equiv=refresh content=\"0;url=http://127.0.0.1:9/\"><x-injected-\(field)>\u{1B}[31m\r\nforged \(field)"
    }

    /// A recording with the payload in every string field of every event the report reads.
    static func hostileRecording() throws -> String {
        let p = payload
        let events: [[String: Any]] = [
            ["v": 1, "ev": "start", "wall": p("wall"), "linkcond": p("linkcond"), "limit": 4096, "window_us": 20000],
            [
                "t": 0, "ev": "profile", "name": p("profile"), "summary": p("summary"), "offline": p("offline"),
                "delay_up_us": 1000, "delay_down_us": 1000,
            ],
            ["t": 1, "ev": "scenario", "step": p("step"), "line": 3],
            [
                "t": 2, "ev": "open", "conn": 1, "listener": p("listener"), "client": p("client"), "dest": p("dest"),
                "name": p("name"),
            ],
            [
                "t": 3, "ev": "open", "conn": 2, "proto": p("proto"), "listener": p("listener"), "client": p("client"),
                "dest": p("dest2"),
            ],
            ["t": 4, "ev": "established", "conn": 1],
            ["t": 5, "ev": "send", "conn": 1, "dir": p("dir"), "bytes": 10, "reads": 1, "small": 1, "last": 6],
            ["t": 6, "ev": "deliver", "conn": 1, "dir": "down", "bytes": 10, "writes": 1, "small": 1, "last": 7],
            ["t": 7, "ev": "stall", "conn": 1, "dir": p("dir"), "cause": p("cause")],
            ["t": 8, "ev": "resume", "conn": 1, "dir": p("dir"), "cause": p("cause")],
            ["t": 8, "ev": "stall", "conn": 1, "dir": "up", "cause": p("open-cause")],
            [
                "t": 9, "ev": "open", "conn": 3, "proto": "udp", "listener": p("listener"), "client": p("client"),
                "dest": p("dest3"),
            ],
            ["t": 9, "ev": "drop", "conn": 3, "dir": p("dir"), "cause": p("drop-cause"), "datagrams": 2, "last": 10],
            [
                "t": 11, "ev": "dns", "client": p("dns-client"), "name": p("dns-name"), "type": p("type"),
                "delay_us": 5,
                "rcode": 0, "answer": [p("answer")], "proto": p("dns-proto"),
            ],
            ["t": 12, "ev": "close", "conn": 1, "by": p("by"), "reset": true],
            ["t": 13, "ev": "close", "conn": 2, "by": p("by2"), "reset": false],
            ["t": 14, "ev": "end"],
        ]
        let lines = try events.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-hostile-\(UUID()).jsonl")
            .path
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The names of every element the page opens or closes.
    static func tagNames(_ html: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: "<\\/?([!A-Za-z][A-Za-z0-9-]*)")
        let range = NSRange(html.startIndex..., in: html)
        return Set(
            pattern.matches(in: html, range: range).map { String(html[Range($0.range(at: 1), in: html)!]).lowercased() }
        )
    }

    static let pageElements: Set<String> = [
        "!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2", "p",
        "ul", "li", "b", "br", "i", "div", "svg", "g", "rect", "text", "line",
        "table", "tr", "th", "td", "span",
    ]

    /// `text` holds no raw control character but the newline, and no line begins with a forged one.
    static func expectNoRawControlCharacters(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let raw = text.unicodeScalars.filter { $0 != "\n" && ($0.value < 0x20 || $0.value == 0x7F) }
        #expect(
            raw.isEmpty, "raw control characters \(raw.map { $0.value }) in: \(text)", sourceLocation: sourceLocation)
        #expect(
            !text.split(separator: "\n").contains { $0.hasPrefix("forged") }, "a forged line in: \(text)",
            sourceLocation: sourceLocation)
    }

    @Test func everyStringFieldOfARecordingReachesThePageAsTextAndTheSummaryEscaped() throws {
        let path = try Self.hostileRecording()
        defer { try? FileManager.default.removeItem(atPath: path) }

        let result = try LinkcondProcess.run(["report", path, "-o", path + ".html"])
        defer { try? FileManager.default.removeItem(atPath: path + ".html") }

        #expect(result.status == 0, "\(result.stderr)")
        let page = try String(contentsOfFile: path + ".html", encoding: .utf8)
        #expect(
            Self.tagNames(page).subtracting(Self.pageElements).isEmpty,
            "\(Self.tagNames(page).subtracting(Self.pageElements))")
        #expect(page.components(separatedBy: "<meta").count - 1 == 2)
        #expect(!page.contains("<meta http-equiv=refresh"))
        for field in [
            "wall", "profile", "summary", "offline", "step", "name", "cause", "open-cause", "drop-cause", "by",
        ] {
            #expect(page.contains("&lt;x-injected-\(field)&gt;"), "\(field) is not on the page as text")
        }
        Self.expectNoRawControlCharacters(result.stdout)
        #expect(result.stdout.contains(#"x-injected-name>\u{1b}[31m\r\nforged name"#), "\(result.stdout)")
    }

    @Test(.enabled(if: RecordingReportTests.chromium != nil, "needs chromium (apt-get install chromium)"))
    func theHostilePageStaysPutInHeadlessChromiumAndHasNoInjectedElement() throws {
        let path = try Self.hostileRecording()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try LinkcondProcess.run(["report", path, "-o", path + ".html"])
        defer { try? FileManager.default.removeItem(atPath: path + ".html") }
        #expect(result.status == 0, "\(result.stderr)")

        let dom = try RecordingReportTests().runChromium(["--dump-dom", "file://\(path).html"])

        #expect(dom.contains("id=\"summary\""), "\(dom.prefix(500))")
        #expect(!dom.contains("<x-injected"))
        // Chromium's parser adds the tbody a table implies.
        let added = Self.tagNames(dom).subtracting(Self.pageElements.union(["tbody"]))
        #expect(added.isEmpty, "\(added)")
    }

    /// A Toxiproxy proxy's name comes from any client of the API: `status` and the log show its escape sequence,
    /// carriage return and newline escaped, not raw.
    @Test func aToxiproxyNameWithControlCharactersIsShownEscapedByStatusAndTheLog() throws {
        let echo = try TestServer.echo()
        defer { echo.stop() }
        let socketPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-\(UUID().uuidString.prefix(8)).sock"
        ).path
        let linkcond = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(echo.port)",
            "--toxiproxy", "127.0.0.1:0", "--control", socketPath,
        ])
        _ = try linkcond.readReadyPort()
        let apiPort = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })
        let created = try ToxiproxyCommandTests.request(
            apiPort, "POST", "/proxies",
            #"{"name":"evil\u001b[2J\r\nforged line","listen":"127.0.0.1:0","upstream":"127.0.0.1:\#(echo.port)"}"#)
        #expect(created.hasPrefix("HTTP/1.1 201 "), "\(created)")

        let status = try LinkcondProcess.run(["status", "--control", socketPath])
        #expect(try linkcond.stop() == 0)

        #expect(status.status == 0, "\(status.stderr)")
        Self.expectNoRawControlCharacters(status.stdout)
        #expect(status.stdout.contains(#"toxiproxy evil\u{1b}[2J\r\nforged line"#), "\(status.stdout)")
        Self.expectNoRawControlCharacters(linkcond.stderrText)
        #expect(
            linkcond.stderrText.contains(#"toxiproxy: proxy evil\u{1b}[2J\r\nforged line listening on"#),
            "\(linkcond.stderrText)")
    }
}
