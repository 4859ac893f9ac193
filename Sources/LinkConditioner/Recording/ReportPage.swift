import Foundation

/// The report as one self-contained HTML page: inline CSS and SVG, no script, no font, no request of any kind
/// (its Content-Security-Policy forbids them), so it opens the same from a CI artefact years later.
///
/// The timeline draws one row per connection on a shared time axis, with activity merged per pixel column so a
/// few thousand connections stay a few thousand small groups.
public enum ReportPage {
    static let plotWidth = 1100.0
    static let labelWidth = 220.0

    /// The page for `recording` and its `report`. Every text from the recording goes through `HTMLWriter`, which
    /// escapes it: the file may have been written by anyone.
    public static func html(_ recording: Recording, _ report: TrafficReport) -> String {
        var page = HTMLWriter()
        page.markup(head)
        page.element("p", ["id": "summary"], text: summary(report))
        page.element("h2", text: "Findings")
        page.element("ul", ["id": "findings"]) { list in
            if report.findings.isEmpty { list.element("p", text: "No findings: none of the rules fired.") }
            for finding in report.findings {
                list.element("li", ["class": "finding", "data-rule": finding.rule]) { item in
                    item.element("b", text: finding.title)
                    item.text(": \(finding.numbers).")
                    item.markup("<br>")
                    item.element("i", text: "Rule:")
                    item.text(" \(finding.threshold).")
                    item.markup("<br>")
                    item.element("i", text: "Connections:")
                    item.text(" \(TrafficReport.connectionList(finding.connections, worst: finding.worst)); ")
                    item.element("i", text: "times:")
                    item.text(" \(finding.times.map(label).joined(separator: " "))")
                    item.markup("<br>")
                    item.element("i", text: "Advice:")
                    item.text(" \(finding.advice)")
                }
            }
        }
        page.element("h2", text: "Timeline")
        page.markup(legend)
        page.element("div", ["id": "scroll"]) { timeline(&$0, recording, report) }
        page.element(
            "p",
            text:
                "Radio model: \(report.radio.model), promotion \(label(report.radio.promotion)), tail \(label(report.radio.tail)); source: \(report.radio.source)."
        )
        page.element("h2", text: "Hosts")
        page.element("table", ["id": "hosts"]) { table in
            table.markup(
                "<tr><th>host</th><th>connections</th><th>bytes up</th><th>bytes down</th><th>first byte (median)</th><th>lookups</th></tr>"
            )
            for host in report.hosts.prefix(200) {
                table.element("tr") { row in
                    for cell in [
                        host.host, "\(host.connections)", "\(host.bytesUp)", "\(host.bytesDown)",
                        host.medianTimeToFirstByte.map(label) ?? "-", "\(host.lookups)",
                    ] {
                        row.element("td", text: cell)
                    }
                }
            }
        }
        page.markup("\n</body></html>\n")
        return page.html
    }

    static let head: StaticString = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
        <title>linkcond report</title>
        <style>
        body { font: 14px system-ui, sans-serif; margin: 1em; color: #222; }
        .small { font-size: 10px; fill: #444; } .row { font-size: 8px; fill: #333; }
        table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
        td:first-child { text-align: left; } #scroll { overflow: auto; max-height: 70vh; border: 1px solid #ccc; }
        .legend span { display: inline-block; width: 12px; height: 8px; margin: 0 4px 0 12px; }
        </style></head><body>
        <h1>linkcond report</h1>

        """

    static let legend: StaticString = """
        <p class="legend"><span style="background:#f0b030"></span>set-up<span style="background:#3070d0"></span>bytes up<span style="background:#30a050"></span>bytes down<span style="background:#d02020"></span>stall: queue<span style="background:#8040c0"></span>loss<span style="background:#808080"></span>offline<span style="background:#c06000"></span>fault<span style="background:#000"></span>datagrams dropped<span style="background:#e07040"></span>radio in high power<span style="background:#e8eef8"></span>profile phases (hover for details)</p>

        """

    /// The paragraph at the top: when, how long, how much, and what the link did.
    static func summary(_ report: TrafficReport) -> String {
        let flows =
            report.flowCount > 0
            ? ", \(report.flowCount) UDP flows (\(report.datagramsUp) datagrams up, \(report.datagramsDown) down)" : ""
        let cut =
            report.cutAt.map { " The recording reached its size limit at \(label($0)); nothing later is in it." } ?? ""
        return
            "Recorded \(report.wallClock): \(label(report.duration)), \(report.connectionCount) connections, \(report.bytesUp) bytes up, \(report.bytesDown) bytes down, \(report.lookups) DNS lookups\(flows). \(causes(report))Radio (\(report.radio.model)): \(report.radio.wakeUps) wake-ups, \(label(report.radio.highPower)) in high power.\(cut)"
    }

    /// The SVG timeline: profile phases, scenario steps, the radio, a time axis, then one row per connection.
    static func timeline(_ svg: inout HTMLWriter, _ recording: Recording, _ report: TrafficReport) {
        let end = Double(max(recording.end, 1))
        let rowHeight = recording.connections.count > 1500 ? 4.0 : 10.0
        func x(_ time: Int64) -> Double { labelWidth + Double(max(time, 0)) / end * plotWidth }
        func px(_ value: Double) -> String { String(format: "%.1f", value) }
        let top = 60.0
        let height = top + Double(recording.connections.count) * rowHeight + 20
        svg.element(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "id": "timeline", "width": px(labelWidth + plotWidth + 20),
                "height": px(height),
            ]
        ) { svg in
            for (index, phase) in recording.phases.enumerated() {
                let stop = index + 1 < recording.phases.count ? recording.phases[index + 1].start : recording.end
                let color = phase.offline != nil ? "#f4c7c3" : (index % 2 == 0 ? "#e8eef8" : "#f3f0e0")
                let name = phase.profile.isEmpty ? "(inline)" : phase.profile
                svg.markup("\n")
                svg.element("g", ["class": "phase"]) { group in
                    group.element(
                        "title", text: "\(name)\(phase.offline.map { " offline \($0)" } ?? ""): \(phase.summary)")
                    group.empty(
                        "rect",
                        [
                            "x": px(x(phase.start)), "y": "0", "width": px(max(x(stop) - x(phase.start), 1)),
                            "height": px(height), "fill": color, "opacity": "0.5",
                        ])
                    group.element(
                        "text", ["x": px(x(phase.start) + 2), "y": "12", "class": "small"],
                        text: name + (phase.offline != nil ? " offline" : ""))
                }
            }
            for step in recording.steps {
                svg.markup("\n")
                svg.element("g", ["class": "step"]) { group in
                    group.element("title", text: "scenario: \(step.text)")
                    group.empty(
                        "line",
                        [
                            "x1": px(x(step.time)), "x2": px(x(step.time)), "y1": "0", "y2": px(height),
                            "stroke": "#a060c0", "stroke-dasharray": "3 3",
                        ])
                }
            }
            for period in report.radio.periods {
                svg.markup("\n")
                svg.element(
                    "rect",
                    [
                        "class": "radio", "x": px(x(period[0])), "y": "20",
                        "width": px(max(x(min(period[1], recording.end)) - x(period[0]), 1)), "height": "10",
                        "fill": "#e07040",
                    ]
                ) {
                    $0.element("title", text: "radio high power \(period[2]) bytes")
                }
            }
            svg.markup("\n")
            svg.element("text", ["x": "4", "y": "29", "class": "small"], text: "radio (\(report.radio.model))")
            for tick in ticks(end: recording.end) {
                svg.markup("\n")
                svg.empty(
                    "line", ["x1": px(x(tick)), "x2": px(x(tick)), "y1": "36", "y2": px(height), "stroke": "#ddd"])
                svg.element("text", ["x": px(x(tick)), "y": "48", "class": "small"], text: label(tick))
            }
            for (index, connection) in recording.connections.enumerated() {
                let y = top + Double(index) * rowHeight
                let mid = y + rowHeight / 2
                let closed = connection.closed ?? recording.end
                svg.markup("\n")
                svg.element("g", ["class": "conn", "data-conn": "\(connection.id)"]) { row in
                    let closing =
                        connection.closed.map {
                            ", closed \(label($0)) by \(connection.closedBy ?? "?")\(connection.reset ? " (reset)" : "")"
                        } ?? ""
                    row.element(
                        "title",
                        text: "#\(connection.id) \(connection.host) opened \(label(connection.opened))\(closing)")
                    row.element(
                        "text", ["x": "2", "y": px(y + rowHeight - 1), "class": "row"],
                        text: rowHeight >= 8
                            ? "#\(connection.id) \(connection.transport == "udp" ? "udp " : "")\(connection.host)" : "")
                    row.empty(
                        "line",
                        [
                            "x1": px(x(connection.opened)), "x2": px(max(x(closed), x(connection.opened) + 1)),
                            "y1": px(mid), "y2": px(mid), "stroke": "#999",
                        ])
                    if let established = connection.established {
                        row.empty(
                            "rect",
                            [
                                "class": "setup", "x": px(x(connection.opened)), "y": px(y + 1),
                                "width": px(max(x(established) - x(connection.opened), 1)), "height": px(rowHeight - 2),
                                "fill": "#f0b030",
                            ])
                    }
                    for (spans, up) in [
                        (connection.deliveries.filter(\.up), true), (connection.deliveries.filter { !$0.up }, false),
                    ] {
                        for (start, stop) in merged(spans.map { (x($0.start), x($0.last)) }) {
                            row.empty(
                                "rect",
                                [
                                    "x": px(start), "y": px(up ? y + 1 : mid), "width": px(max(stop - start, 1)),
                                    "height": px(rowHeight / 2 - 1), "fill": up ? "#3070d0" : "#30a050",
                                ])
                        }
                    }
                    for stall in connection.stalls {
                        row.element(
                            "rect",
                            [
                                "class": "stall", "data-cause": stall.cause, "x": px(x(stall.start)), "y": px(mid - 1),
                                "width": px(max(x(stall.end ?? closed) - x(stall.start), 1)), "height": "2",
                                "fill": stallColor(stall.cause),
                            ]
                        ) {
                            $0.element("title", text: "stall (\(stall.cause))")
                        }
                    }
                    for (start, stop) in merged(connection.drops.map { (x($0.start), x($0.last)) }) {
                        row.element(
                            "rect",
                            [
                                "class": "drop", "x": px(start), "y": px(y), "width": px(max(stop - start, 1)),
                                "height": px(rowHeight), "fill": "#000", "opacity": "0.6",
                            ]
                        ) {
                            $0.element("title", text: "datagrams dropped")
                        }
                    }
                }
            }
            svg.markup("\n")
        }
    }

    /// The colour of a stall of `cause` on the timeline (as in the legend).
    static func stallColor(_ cause: String) -> String {
        switch cause {
        case "loss": "#8040c0"
        case "offline": "#808080"
        case "fault": "#c06000"
        default: "#d02020"
        }
    }

    /// Stalled time and dropped datagrams per cause, in a sentence each, or nothing; plain text.
    static func causes(_ report: TrafficReport) -> String {
        let stalls = report.stalls.map { "\($0.stalls) \($0.cause) stalls (\(label($0.time)))" }
        let drops = report.datagramDrops.map { "\($0.datagrams) datagrams dropped for \($0.cause)" }
        return (stalls.isEmpty ? "" : "Stalls: \(stalls.joined(separator: ", ")). ")
            + (drops.isEmpty ? "" : "UDP: \(drops.joined(separator: ", ")). ")
    }

    /// Pixel spans merged where they touch, so a busy row draws one rectangle per pixel run.
    static func merged(_ spans: [(Double, Double)]) -> [(Double, Double)] {
        var out: [(Double, Double)] = []
        for span in spans.sorted(by: { $0.0 < $1.0 }) {
            if let last = out.last, span.0 <= last.1 + 1 {
                out[out.count - 1].1 = max(last.1, span.1)
            } else {
                out.append(span)
            }
        }
        return out
    }

    static func ticks(end: Int64) -> [Int64] {
        let steps: [Int64] = [
            1_000, 10_000, 100_000, 500_000, 1_000_000, 5_000_000, 10_000_000, 60_000_000, 600_000_000, 3_600_000_000,
        ]
        let step = steps.first { end / $0 <= 12 } ?? 36_000_000_000
        return Array(stride(from: Int64(0), through: end, by: Int64.Stride(step)))
    }

    static func label(_ micros: Int64) -> String {
        micros >= 10_000_000
            ? String(format: "%.1f s", Double(micros) / 1e6) : String(format: "%.0f ms", Double(micros) / 1e3)
    }
}
