import Foundation
import LinkConditioner

/// The status view that fits a terminal: the conditions, then one block per listener whose lines wrap between
/// figures, never inside one. Names and addresses come from others (Toxiproxy clients, programs under exec), so each
/// is escaped (`TerminalText`) before it is measured, and cut with an ellipsis when it alone is wider than a line.
extension StatusCommand {
    /// The columns the view may fill: `COLUMNS` when it holds a positive number, else the width of the terminal on
    /// standard output (TIOCGWINSZ, read through LinkSystem's `Terminal`), else 80; held within `viewWidths`.
    static func viewWidth(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        if let text = environment["COLUMNS"], let columns = Int(text.trimmingCharacters(in: .whitespaces)),
            columns > 0
        {
            return min(max(columns, viewWidths.lowerBound), viewWidths.upperBound)
        }
        let columns = Terminal.standardOutputSize?.columns ?? 80
        return min(max(columns, viewWidths.lowerBound), viewWidths.upperBound)
    }

    /// The widths the view is laid out in. Below 20 columns a label and one figure no longer share a line, so a
    /// narrower terminal gets the 20-column view and wraps it itself (every figure still whole); above 1000 no
    /// line is longer, and a width from a typo (`COLUMNS=9223372036854775807`) cannot pad lines to gigabytes.
    static let viewWidths = 20...1000

    /// Where a block's figures start: two spaces, a label of 12 and a space.
    private static let figuresColumn = 15
    /// Where the conditions' text starts, after `profile   ` and its kin.
    private static let conditionsColumn = 10

    /// `report` as lines no wider than `width`.
    static func blocks(_ report: StatusReport, width: Int) -> String {
        var page = Page(width: width)
        let state = report.offline.map { "OFFLINE (\($0))" } ?? "online"
        // The summary's parts are figures joined by commas: the lines break between them.
        var summary = report.profileSummary.components(separatedBy: ", ")
        summary[0] = (report.profile.isEmpty ? "(inline)" : report.profile) + ": " + summary[0]
        page.wrap(lead: "profile   ", summary, indent: conditionsColumn)
        page.wrap(lead: "link      ", [state], indent: conditionsColumn)
        let realtime = report.mainLoopRealtimePriority.map { "at real-time priority \($0) (SCHED_FIFO)" }
        if let spliceLoops = report.spliceLoops, spliceLoops > 0 {
            let carried = report.listeners.reduce(0) { $0 + ($1.connectionsOnSpliceLoops ?? 0) }
            let handOvers = report.spliceHandOvers.map { ", \($0) handed over so far" } ?? ""
            page.wrap(
                lead: "threads   ",
                [
                    "main loop\(realtime.map { " " + $0 } ?? "") + \(spliceLoops) splice loop\(plural(spliceLoops))"
                        + " carrying \(carried) pass-through connection\(plural(carried))\(handOvers)"
                        + StatusReport.listenerLoopsText(report)
                ], indent: conditionsColumn)
        } else if let realtime {
            page.wrap(lead: "threads   ", ["main loop " + realtime], indent: conditionsColumn)
        }
        let excluded = report.listeners.reduce(0) { $0 + ($1.connectionsExcluded ?? 0) }
        if excluded > 0 {
            page.wrap(
                lead: "exclude   ",
                ["\(excluded) connection\(plural(excluded)) relayed untouched (destination in exclude)"],
                indent: conditionsColumn)
        }
        if let scenario = report.scenario {
            page.wrap(lead: "scenario  ", scenarioParts(scenario), indent: conditionsColumn)
        }
        for listener in report.listeners {
            page.append("")
            listenerBlock(listener, on: &page)
        }
        if let note = synResendNote(report) {
            page.append("")
            page.wrap(lead: "", [note], indent: 0)
        }
        if report.listeners.contains(where: isLate) {
            let realtime = report.mainLoopRealtimePriority != nil
            page.append("")
            page.wrap(
                lead: "",
                [
                    "Late: released bytes reached their sockets this long after the link model released them;",
                    "emulated delays there were that much longer, because the machine kept linkcond from waking in time"
                        + (realtime
                            ? "."
                            : "; --realtime, given to run, exec or attach, keeps its loop ahead of other processes."),
                ], indent: 0, separator: " ")
        }
        return page.text
    }

    /// One listener: what it is and where it sends, then its connections, each direction's traffic, its losses and
    /// drops, and the tables it keeps (TCP losses, late deliveries, destinations) when they have something.
    private static func listenerBlock(_ listener: StatusReport.Listener, on page: inout Page) {
        let label = listener.toxiproxy.map { "toxiproxy " + $0 } ?? listener.kind
        let upstream = listener.upstream.map { "→ " + $0 }
        let head = [label, listener.address] + (upstream.map { [$0] } ?? [])
        if page.fits(head.map(TerminalText.escaped).joined(separator: " ")) {
            page.append(head.map(TerminalText.escaped).joined(separator: " "))
        } else {
            page.append(clipped(TerminalText.escaped(label), to: page.width))
            page.wrap(lead: "  listen       ", [listener.address], indent: figuresColumn)
            if let upstream = listener.upstream {
                page.wrap(lead: "  upstream     ", [upstream], indent: figuresColumn)
            }
        }
        let live = listener.connectionsOnSpliceLoops.flatMap { $0 > 0 ? " (\($0) on splice loops)" : nil } ?? ""
        page.wrap(
            lead: "  connections  ",
            [
                "\(listener.activeConnections) live\(live)", "\(listener.connectionsAccepted) accepted",
                "\(listener.connectionsRefused) refused",
            ], indent: figuresColumn)
        for (arrow, direction) in [("↑ up", listener.uplink), ("↓ down", listener.downlink)] {
            page.wrap(
                lead: "  " + arrow.rightPadded(13),
                [
                    rate(direction.bitsPerSecond), bytes(direction.bytesDelivered) + " delivered",
                    bytes(direction.queuedBytes) + " queued",
                ], indent: figuresColumn)
        }
        let dropped =
            listener.uplink.datagramsDropped + listener.downlink.datagramsDropped + listener.uplink.faultDrops
            + listener.downlink.faultDrops + listener.malformedMessages
        page.wrap(
            lead: "  losses       ",
            [
                "\(listener.uplink.segmentsLost + listener.downlink.segmentsLost) TCP segments lost",
                "\(dropped) datagrams dropped",
                "\(listener.uplink.kernelDrops + listener.downlink.kernelDrops) kernel drops",
            ], indent: figuresColumn)
        let tcp = [
            ("↑", listener.uplink.segmentsLost, "segment"), ("↓", listener.downlink.segmentsLost, "segment"),
            ("↑", listener.downlink.acksLost, "ACK"), ("↓", listener.uplink.acksLost, "ACK"),
        ]
        let handshakes = (listener.uplink.handshakeRetransmissions, listener.downlink.handshakeRetransmissions)
        if tcp.contains(where: { $0.1 > 0 }) || handshakes.0 + handshakes.1 > 0 {
            page.wrap(
                lead: "  TCP lost     ",
                tcp.map { "\($0.0) \($0.1) \($0.2)\(plural($0.1))" } + [
                    "\(handshakes.0) SYN\(plural(handshakes.0)) resent",
                    "\(handshakes.1) SYN-ACK\(plural(handshakes.1)) resent",
                ], indent: figuresColumn)
        }
        if isLate(listener) {
            let figures = [("↑", listener.uplink.deliveryLateness), ("↓", listener.downlink.deliveryLateness)]
                .flatMap { arrow, lateness in
                    [
                        "\(arrow) p99 " + (lateness.map { duration($0.p99Seconds) } ?? "-"),
                        "\(arrow) max " + (lateness.map { duration($0.maxSeconds) } ?? "-"),
                    ]
                }
            page.wrap(lead: "  late         ", figures, indent: figuresColumn)
        }
        guard let destinations = listener.destinations, !destinations.isEmpty else { return }
        // Figures in fixed columns at the right; the name takes what is left and gives way first, down to the
        // width of the heading's "destination". Narrower, each destination's figures go under its name.
        let figures = ["conns".leftPadded(5), "↑ bytes".leftPadded(10), "↓ bytes".leftPadded(10)]
        let nameWidth = page.width - 5 - TerminalText.columns(figures.joined(separator: " "))
        guard nameWidth >= "destination".count - 2 else {
            page.append("  destinations")
            for row in destinations {
                page.append("    " + destinationName(row, width: page.width - 4))
                page.wrap(
                    lead: "      ",
                    [
                        "\(row.connections) conn\(plural(row.connections))", "↑ " + bytes(row.bytesUp),
                        "↓ " + bytes(row.bytesDown),
                    ], indent: 6)
            }
            return
        }
        page.append("  " + "destination".rightPadded(nameWidth + 2) + " " + figures.joined(separator: " "))
        for row in destinations {
            page.append(
                "    " + destinationName(row, width: nameWidth).rightPadded(nameWidth) + " "
                    + [
                        String(row.connections).leftPadded(5), bytes(row.bytesUp).leftPadded(10),
                        bytes(row.bytesDown).leftPadded(10),
                    ].joined(separator: " "))
        }
    }

    /// A destination and the host name the program looked it up by, within `width` columns: the host gives way
    /// first, then the address, which keeps its port.
    private static func destinationName(_ row: StatusReport.Destination, width: Int) -> String {
        let address = TerminalText.escaped(row.destination)
        guard let host = row.host.map(TerminalText.escaped) else { return clipped(address, to: width) }
        let room = width - TerminalText.columns(address) - 3
        return room >= 2 ? address + " (" + clipped(host, to: room) + ")" : clipped(address, to: width)
    }

    /// Whether a listener's released TCP bytes reached their sockets late enough to show.
    private static func isLate(_ listener: StatusReport.Listener) -> Bool {
        [listener.uplink.deliveryLateness, listener.downlink.deliveryLateness].contains {
            ($0?.p99Seconds ?? 0) >= lateDeliveryShownFrom
        }
    }

    /// The line that explains SYNs resent on a link that loses nothing: shown when some listener resent SYNs and the
    /// current conditions lose no TCP packet with a round trip longer than Linux's initial retransmission timeout,
    /// the one way a lossless handshake resends (`HandshakeAttempts`). Nil otherwise, and for an older linkcond's
    /// answer, which does not say.
    static func synResendNote(_ report: StatusReport) -> String? {
        guard let handshake = report.handshake, handshake.lossless,
            handshake.roundTripSeconds > HandshakeAttempts.initialTimeout.seconds,
            report.listeners.contains(where: { $0.uplink.handshakeRetransmissions > 0 })
        else { return nil }
        return String(
            format: "SYNs resent with no loss: a %.2f s handshake outlasts Linux's 1 s SYN timeout",
            handshake.roundTripSeconds)
    }

    /// A scenario's state in parts joined by commas: its name and the step in force as written, the next step and
    /// how long until it, and the repetitions so far. An older linkcond's answer, without the steps' texts, gives
    /// the step's line and the time into the repetition.
    static func scenarioParts(_ scenario: StatusReport.ScenarioState) -> [String] {
        let name = scenario.name.isEmpty ? "(inline)" : scenario.name
        var parts: [String]
        switch (scenario.currentStep, scenario.step) {
        case (let current?, _):
            parts = ["\(name): now \"\(current)\"" + (scenario.nextStep == nil ? " (the last step)" : "")]
        case (nil, let line?):
            parts = ["\(name): line \(line)", String(format: "%.1f s in", scenario.elapsedSeconds)]
        case (nil, nil):
            parts = ["\(name): starting"]
        }
        if let next = scenario.nextStep, let seconds = scenario.secondsToNextStep {
            let word = scenario.currentStep == nil ? "first" : "next"
            let over = scenario.nextStepStartsOver == true ? " (starting over)" : ""
            parts.append("\(word) \"\(next)\" in \(countdown(seconds))\(over)")
        }
        if scenario.repetitions > 0 { parts.append("repeated \(scenario.repetitions)×") }
        return parts
    }

    /// A wait as a person reads it: tenths of a second under 10 s, then seconds, minutes, hours.
    static func countdown(_ seconds: Double) -> String {
        let whole = Int(seconds)
        return switch seconds {
        case ..<10: String(format: "%.1f s", seconds)
        case ..<60: "\(whole) s"
        case ..<3600: "\(whole / 60) min \(whole % 60) s"
        default: "\(whole / 3600) h \(whole % 3600 / 60) min"
        }
    }

    /// `text` no wider than `width` columns (`TerminalText.columns`): cut with an ellipsis, keeping an address's
    /// `:port` when there is room.
    static func clipped(_ text: String, to width: Int) -> String {
        guard TerminalText.columns(text) > width else { return text }
        guard width > 1 else { return String(TerminalText.prefix(text, columns: max(0, width))) }
        if let colon = text.lastIndex(of: ":"), text[text.index(after: colon)...].allSatisfy(\.isNumber) {
            let port = text[colon...]
            if port.count + 2 <= width {
                return TerminalText.prefix(text, columns: width - port.count - 1) + "…" + port
            }
        }
        return TerminalText.prefix(text, columns: width - 1) + "…"
    }

    static func plural(_ count: Int) -> String { count == 1 ? "" : "s" }

    /// Lines being laid out within `width` columns, measured as a terminal shows them (`TerminalText.columns`).
    struct Page {
        let width: Int
        private var lines: [String] = []

        init(width: Int) { self.width = max(1, width) }

        var text: String { lines.map { clipped($0, to: width) }.joined(separator: "\n") + "\n" }

        func fits(_ line: String) -> Bool { TerminalText.columns(line) <= width }

        /// Appends a line already escaped.
        mutating func append(_ line: String) { lines.append(line) }

        /// `lead`, then `items` (escaped here) separated by `separator`, on as many lines as the width needs; the
        /// lines after the first start at `indent` (less on a narrow page, so that a figure still fits), and a line
        /// broken between two items ends with the separator's comma if it has one, which the fit reserves room for.
        /// An item goes whole to the next line when the line is full; one wider than a whole line is broken between
        /// its words, keeping a number with the word after it (`1.2 MiB`); a lead too long for the first item
        /// stands on its own line; and a word wider than a line is cut with an ellipsis (only a name is that long).
        mutating func wrap(lead: String, _ items: [String], indent: Int, separator: String = ", ") {
            let margin = String(repeating: " ", count: min(indent, max(0, width - Page.narrowestRoom)))
            let comma = separator.trimmingCharacters(in: .whitespaces)
            var line = lead
            var isEmpty = true
            /// Places `piece` after `glue`, keeping `reserve` columns free after it for the comma a break adds.
            func place(_ piece: String, after glue: String, reserve: Int) {
                let pieceWidth = TerminalText.columns(piece)
                let words = Page.unbreakableRuns(piece)
                func flow() {
                    for (index, word) in words.enumerated() {
                        place(
                            word, after: index == 0 ? glue : " ", reserve: index == words.count - 1 ? reserve : 0)
                    }
                }
                if words.count > 1 && margin.count + pieceWidth + reserve > width {
                    // Wider than any line: its words flow on from where the line is.
                    flow()
                    return
                }
                if !isEmpty {
                    if TerminalText.columns(line) + glue.count + pieceWidth + reserve <= width {
                        line += glue + piece
                        return
                    }
                    lines.append(line + glue.trimmingCharacters(in: .whitespaces))
                    (line, isEmpty) = (margin, true)
                }
                if TerminalText.columns(line) + pieceWidth + reserve <= width {
                    (line, isEmpty) = (line + piece, false)
                } else if TerminalText.columns(line) > margin.count {
                    // The lead leaves too little room: it stands alone and the piece starts the next line.
                    lines.append(String(line.reversed().drop(while: { $0 == " " }).reversed()))
                    line = margin
                    place(piece, after: "", reserve: reserve)
                } else if words.count > 1 {
                    flow()
                } else {
                    let room = max(1, width - TerminalText.columns(line) - reserve)
                    (line, isEmpty) = (line + clipped(piece, to: room), false)
                }
            }
            for (index, item) in items.enumerated() {
                place(
                    TerminalText.escaped(item), after: index == 0 ? "" : separator,
                    reserve: index == items.count - 1 ? 0 : comma.count)
            }
            lines.append(line)
        }

        /// The columns a continuation line keeps for its figures however narrow the page: the widest figure
        /// (`787.6 kbit/s`) and its comma, with room to spare.
        private static let narrowestRoom = 16

        /// `piece`'s words, each number joined to the word after it and each lone symbol (an arrow, `+`) to the
        /// word after that, so a break between words never parts a figure from its unit.
        static func unbreakableRuns(_ piece: String) -> [String] {
            var runs: [String] = []
            var pending: String?
            for word in piece.split(separator: " ").map(String.init) {
                let joined = pending.map { $0 + " " + word } ?? word
                let isNumber =
                    word.drop(while: { $0 == "(" }).first?.isNumber == true
                    && word.drop(while: { $0 == "(" }).allSatisfy { $0.isNumber || $0 == "." || $0 == "," }
                let isSymbol = word.count == 1 && !(word.first?.isLetter ?? true) && !(word.first?.isNumber ?? true)
                if isNumber || isSymbol {
                    pending = joined
                } else {
                    runs.append(joined)
                    pending = nil
                }
            }
            if let pending { runs.append(pending) }
            return runs
        }
    }
}
