import ArgumentParser
import Foundation
import LinkConditioner

/// `linkcond status`: what a running instance is doing, for people or (with --json) for machines.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show a running linkcond's profile, listeners and traffic.",
        discussion: """
            The view fits the width of $COLUMNS when set, else of the terminal, else 80 columns (held between 20 and \
            1000): one block per listener, long names cut with an ellipsis, never a number. --wide prints one table row per listener \
            instead, whatever the width.

            With --watch on a terminal the view is redrawn in place within the terminal's size, as top draws its \
            own; into a pipe or a file each refresh is appended whole, as plain lines.

            Examples:
              linkcond status
              linkcond status --wide
              linkcond status --json
              linkcond status --watch
            """)

    @Flag(help: "Print the status as JSON.")
    var json = false

    @Flag(help: "Print one table row per listener, however wide the terminal (about 190 columns).")
    var wide = false

    @Flag(help: "Refresh the view every second, like top (Ctrl-C to leave).")
    var watch = false

    /// `.unconditional`, so that `--count -1` is refused as a count rather than as a missing value.
    @Option(
        parsing: .unconditional, help: "With --watch: stop after this many refreshes (at least 1).",
        transform: { text throws in
            guard let count = Int(text), count >= 1 else {
                throw ValidationError("expected a whole number of refreshes of at least 1, such as 10.")
            }
            return count
        })
    var count: Int?

    @OptionGroup var control: ControlOptions

    func run() throws {
        var refreshes = 0
        let connection = try control.connect()
        repeat {
            let body = try connection.perform("GET", "/status", quiet: true)
            if json {
                print(body, terminator: "")
            } else {
                guard let report = try? JSONDecoder().decode(StatusReport.self, from: Data(body.utf8)) else {
                    printError("linkcond: the status answer is not a status report")
                    throw ExitStatus.runtimeFailure
                }
                // The width is read again for every refresh, so a resized terminal is filled at the next one.
                let view = wide ? Self.render(report) : Self.blocks(report, width: Self.viewWidth())
                if watch && Terminal.isStandardOutput {
                    let fitted =
                        Terminal.standardOutputSize.map { Self.fitted(view, rows: $0.rows, columns: $0.columns) }
                        ?? view
                    print("\u{1B}[H\u{1B}[2J" + fitted, terminator: "")
                } else {
                    print(view, terminator: "")
                }
            }
            fflush(nil)
            refreshes += 1
            if watch, count.map({ refreshes < $0 }) ?? true { Thread.sleep(forTimeInterval: 1) }
        } while watch && count.map({ refreshes < $0 }) ?? true
    }

    /// `view` cut to a terminal of `rows` by `columns`, as top cuts its view: lines end at the right edge instead of
    /// wrapping, and the lines below the screen give way to one saying how many there are, so a redraw never
    /// scrolls and the view stays in place.
    static func fitted(_ view: String, rows: Int, columns: Int) -> String {
        var lines = view.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let height = max(1, rows - 1)
        if lines.count > height {
            let hidden = lines.count - height + 1
            lines =
                Array(lines.prefix(height - 1)) + [
                    "… \(hidden) more line\(hidden == 1 ? "" : "s") below (a taller terminal shows them)"
                ]
        }
        return lines.map { String(TerminalText.prefix($0, columns: max(1, columns))) }.joined(separator: "\n") + "\n"
    }

    /// The human-readable view: one block for the conditions, then a table of listeners. Names come from others
    /// (Toxiproxy clients, programs under exec), so every line's control characters are shown escaped.
    static func render(_ report: StatusReport) -> String {
        var lines: [String] = []
        let state = report.offline.map { "OFFLINE (\($0))" } ?? "online"
        lines.append("profile   \(report.profile.isEmpty ? "(inline)" : report.profile): \(report.profileSummary)")
        lines.append("link      \(state)")
        let realtime = report.mainLoopRealtimePriority.map { " at real-time priority \($0) (SCHED_FIFO)" } ?? ""
        if let spliceLoops = report.spliceLoops, spliceLoops > 0 {
            let carried = report.listeners.reduce(0) { $0 + ($1.connectionsOnSpliceLoops ?? 0) }
            let handOvers = report.spliceHandOvers.map { ", \($0) handed over so far" } ?? ""
            lines.append(
                "threads   main loop\(realtime) + \(spliceLoops) splice loop\(spliceLoops == 1 ? "" : "s") carrying \(carried) pass-through connection\(carried == 1 ? "" : "s")\(handOvers)\(StatusReport.listenerLoopsText(report))"
            )
        } else if !realtime.isEmpty {
            lines.append("threads   main loop\(realtime)")
        }
        let excluded = report.listeners.reduce(0) { $0 + ($1.connectionsExcluded ?? 0) }
        if excluded > 0 {
            lines.append(
                "exclude   \(excluded) connection\(excluded == 1 ? "" : "s") relayed untouched (destination in exclude)"
            )
        }
        if let scenario = report.scenario {
            lines.append("scenario  " + scenarioParts(scenario).joined(separator: ", "))
        }
        lines.append("")
        let kindWidth = labelWidth(report.listeners, atLeast: 6)
        lines.append(
            "kind".padding(toLength: kindWidth, withPad: " ", startingAt: 0)
                + " listen                 upstream               conns  accepted  refused   ↑ rate       ↓ rate       ↑ bytes     ↓ bytes     ↑ queued  ↓ queued  lost  dropped  kernel drops"
        )
        for listener in report.listeners {
            lines.append(
                [
                    label(of: listener).padding(toLength: kindWidth, withPad: " ", startingAt: 0),
                    listener.address.padding(toLength: 22, withPad: " ", startingAt: 0),
                    (listener.upstream ?? "-").padding(toLength: 22, withPad: " ", startingAt: 0),
                    String(listener.activeConnections).leftPadded(5),
                    String(listener.connectionsAccepted).leftPadded(9),
                    String(listener.connectionsRefused).leftPadded(8),
                    rate(listener.uplink.bitsPerSecond).leftPadded(12),
                    rate(listener.downlink.bitsPerSecond).leftPadded(12),
                    bytes(listener.uplink.bytesDelivered).leftPadded(11),
                    bytes(listener.downlink.bytesDelivered).leftPadded(11),
                    bytes(listener.uplink.queuedBytes).leftPadded(9),
                    bytes(listener.downlink.queuedBytes).leftPadded(9),
                    String(listener.uplink.segmentsLost + listener.downlink.segmentsLost).leftPadded(5),
                    String(
                        listener.uplink.datagramsDropped + listener.downlink.datagramsDropped
                            + listener.uplink.faultDrops
                            + listener.downlink.faultDrops + listener.malformedMessages
                    ).leftPadded(8),
                    String(listener.uplink.kernelDrops + listener.downlink.kernelDrops).leftPadded(13),
                ].joined(separator: " "))
        }
        lines += tcpLosses(report.listeners)
        if let note = synResendNote(report) { lines.append(note) }
        lines += lateDeliveries(report.listeners, realtime: report.mainLoopRealtimePriority != nil)
        for listener in report.listeners {
            guard let destinations = listener.destinations, !destinations.isEmpty else { continue }
            lines.append("")
            lines.append(
                [
                    "\(listener.kind) destination".padding(toLength: 38, withPad: " ", startingAt: 0), "conns",
                    "↑ bytes".leftPadded(11), "↓ bytes".leftPadded(11),
                ].joined(separator: " "))
            for row in destinations {
                let name = row.destination + (row.host.map { " (\($0))" } ?? "")
                lines.append(
                    [
                        name.padding(toLength: max(38, name.count), withPad: " ", startingAt: 0),
                        String(row.connections).leftPadded(5), bytes(row.bytesUp).leftPadded(11),
                        bytes(row.bytesDown).leftPadded(11),
                    ].joined(separator: " "))
            }
        }
        return TerminalText.lines(lines) + "\n"
    }

    /// What a listener is, as the tables name it: its kind, or `toxiproxy NAME` for the listener of a Toxiproxy
    /// proxy (a long name cut at 24 characters, so that one name does not push the table off the screen).
    static func label(of listener: StatusReport.Listener) -> String {
        guard let name = listener.toxiproxy else { return listener.kind }
        return "toxiproxy " + (name.count > 24 ? name.prefix(23) + "…" : name)
    }

    /// The width of a table's first column: `minimum`, or the longest label and one space.
    static func labelWidth(_ listeners: [StatusReport.Listener], atLeast minimum: Int) -> Int {
        listeners.reduce(minimum) { max($0, label(of: $1).count + 1) }
    }

    /// What the TCP model lost per listener: data segments and ACKs by the direction they were lost on (an ACK of a
    /// download is lost on the uplink), and the SYNs and SYN-ACKs resent. Shown once there is any.
    static func tcpLosses(_ listeners: [StatusReport.Listener]) -> [String] {
        let lossy = listeners.filter {
            $0.uplink.segmentsLost + $0.downlink.segmentsLost + $0.uplink.acksLost + $0.downlink.acksLost
                + $0.uplink.handshakeRetransmissions + $0.downlink.handshakeRetransmissions > 0
        }
        guard !lossy.isEmpty else { return [] }
        let width = labelWidth(lossy, atLeast: 11)
        var lines = [
            "",
            "TCP losses".padding(toLength: width, withPad: " ", startingAt: 0)
                + " listen                 ↑ segments  ↓ segments  ↑ ACKs  ↓ ACKs  SYNs resent  SYN-ACKs resent",
        ]
        for listener in lossy {
            lines.append(
                [
                    label(of: listener).padding(toLength: width, withPad: " ", startingAt: 0),
                    listener.address.padding(toLength: 22, withPad: " ", startingAt: 0),
                    String(listener.uplink.segmentsLost).leftPadded(10),
                    String(listener.downlink.segmentsLost).leftPadded(11),
                    String(listener.downlink.acksLost).leftPadded(7),
                    String(listener.uplink.acksLost).leftPadded(7),
                    String(listener.uplink.handshakeRetransmissions).leftPadded(12),
                    String(listener.downlink.handshakeRetransmissions).leftPadded(16),
                ].joined(separator: " "))
        }
        return lines
    }

    /// Released bytes at p99 this late or later are shown: an emulated delay off by a millisecond changes what an
    /// app sees.
    static let lateDeliveryShownFrom = 0.001

    /// Listeners whose released TCP bytes reached their sockets late (p99 at `lateDeliveryShownFrom` or more):
    /// every delay linkcond emulated there was that much longer, because the machine kept it from waking in time.
    /// Unless the main loop already runs in the real-time class, the note says how to put it there.
    static func lateDeliveries(_ listeners: [StatusReport.Listener], realtime: Bool) -> [String] {
        let late = listeners.filter {
            [$0.uplink.deliveryLateness, $0.downlink.deliveryLateness].contains {
                ($0?.p99Seconds ?? 0) >= lateDeliveryShownFrom
            }
        }
        guard !late.isEmpty else { return [] }
        let width = labelWidth(late, atLeast: 16)
        var lines = [
            "",
            ([
                "Late deliveries".padding(toLength: width, withPad: " ", startingAt: 0),
                "listen".padding(toLength: 22, withPad: " ", startingAt: 0),
            ]
                + ["↑ p99", "↑ max", "↓ p99", "↓ max"].map { $0.leftPadded(10) }).joined(separator: " "),
        ]
        for listener in late {
            let figures = [listener.uplink.deliveryLateness, listener.downlink.deliveryLateness].flatMap { lateness in
                [lateness.map { duration($0.p99Seconds) } ?? "-", lateness.map { duration($0.maxSeconds) } ?? "-"]
            }
            lines.append(
                ([
                    label(of: listener).padding(toLength: width, withPad: " ", startingAt: 0),
                    listener.address.padding(toLength: 22, withPad: " ", startingAt: 0),
                ]
                    + figures.map { $0.leftPadded(10) }).joined(separator: " "))
        }
        lines.append(
            "(released bytes reached their sockets this long after the link model released them: emulated delays")
        if realtime {
            lines.append(" there were that much longer, because the machine kept linkcond from waking in time)")
        } else {
            lines.append(" there were that much longer, because the machine kept linkcond from waking in time;")
            lines.append(" --realtime, given to run, exec or attach, keeps its loop ahead of other processes)")
        }
        return lines
    }

    static func duration(_ seconds: Double) -> String {
        seconds >= 1e-3 ? String(format: "%.2f ms", seconds * 1e3) : String(format: "%.0f µs", seconds * 1e6)
    }

    static func rate(_ bits: Double) -> String {
        switch bits {
        case 1e9...: String(format: "%.2f Gbit/s", bits / 1e9)
        case 1e6...: String(format: "%.2f Mbit/s", bits / 1e6)
        case 1e3...: String(format: "%.1f kbit/s", bits / 1e3)
        default: String(format: "%.0f bit/s", bits)
        }
    }

    static func bytes(_ count: Int) -> String {
        switch count {
        case (1 << 30)...: String(format: "%.2f GiB", Double(count) / Double(1 << 30))
        case (1 << 20)...: String(format: "%.1f MiB", Double(count) / Double(1 << 20))
        case (1 << 10)...: String(format: "%.1f KiB", Double(count) / Double(1 << 10))
        default: "\(count) B"
        }
    }
}

/// Padding by the columns a terminal shows (`TerminalText.columns`), so a table of CJK names stays aligned.
extension String {
    /// Spaces before, to fill `width` columns; text wider is left whole.
    func leftPadded(_ width: Int) -> String {
        String(repeating: " ", count: max(0, width - TerminalText.columns(self))) + self
    }

    /// Spaces after, to fill `width` columns; text wider is left whole (clip it first).
    func rightPadded(_ width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - TerminalText.columns(self)))
    }
}

extension StatusReport {
    /// `, listeners on 2 loops` when the listeners are spread over several event loops (`run --threads`); empty
    /// otherwise, and from an older linkcond's answer.
    static func listenerLoopsText(_ report: StatusReport) -> String {
        let loops = Set(report.listeners.compactMap(\.loop)).count
        return loops > 1 ? ", listeners on \(loops) loops" : ""
    }
}
