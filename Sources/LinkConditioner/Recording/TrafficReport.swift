/// What `linkcond report` finds in a recording: the hygiene findings of issue 14, the radio's energy model and
/// per-host totals. Computed from the recording alone. Times are microseconds since the recording started.
public struct TrafficReport: Sendable, Codable {
    /// One habit the recording shows, with the numbers that prove it and what to do.
    public struct Finding: Sendable, Codable {
        public var rule: String
        public var title: String
        /// The rule's threshold, in words.
        public var threshold: String
        public var numbers: String
        public var advice: String
        /// Every connection it is based on, in ascending order.
        public var connections: [UInt64]
        /// The few connections that show the habit most, worst first (empty when the rule has no measure of worse).
        public var worst: [UInt64] = []
        /// When the evidence happened (µs), at most 20.
        public var times: [Int64]
    }

    public struct HostTotals: Sendable, Codable {
        public var host: String
        public var connections: Int
        public var bytesUp: Int
        public var bytesDown: Int
        /// Median time from open to the first byte delivered to the app, µs; nil when nothing came back.
        public var medianTimeToFirstByte: Int64?
        public var lookups: Int
    }

    /// The cellular radio under a two-state-plus-tail model (LTE: promotion, connected, tail, idle).
    public struct Radio: Sendable, Codable {
        public var model: String
        public var promotion: Int64
        public var tail: Int64
        public var source: String
        public var wakeUps: Int
        public var highPower: Int64
        /// Each period in high power: start, end (µs) and the bytes that woke it.
        public var periods: [[Int64]]
    }

    /// Time the app's bytes waited for one cause, over every connection.
    public struct StallTotal: Sendable, Codable {
        public var cause: String
        public var stalls: Int
        /// Total stalled time, µs (a stall still open at the end counts to the recording's end).
        public var time: Int64
        public var connections: [UInt64]
    }

    /// UDP datagrams dropped for one cause.
    public struct DropTotal: Sendable, Codable {
        public var cause: String
        public var datagrams: Int
        public var flows: [UInt64]
    }

    public var wallClock: String
    public var duration: Int64
    /// TCP connections; UDP relay flows are counted in `flowCount`.
    public var connectionCount: Int
    public var flowCount: Int
    public var datagramsUp: Int
    public var datagramsDown: Int
    public var stalls: [StallTotal]
    public var datagramDrops: [DropTotal]
    public var bytesUp: Int
    public var bytesDown: Int
    public var lookups: Int
    public var cutAt: Int64?
    public var findings: [Finding]
    public var hosts: [HostTotals]
    public var radio: Radio

    /// A connection writes small pieces where one would do when at least `smallWriteBurst` of its writes under
    /// `EventLog.smallWrite` bytes reach linkcond within `smallWriteSpan`, with no reply delivered between them.
    static let smallWriteBurst = 4
    static let smallWriteSpan: Int64 = 200_000
    static let serialMinimum = 5
    static let serialGap: Int64 = 1_000_000
    static let reuseWindow: Int64 = 5_000_000
    static let reuseMinimum = 3
    static let setUpRoundTrips = 2.5
    static let clientTimeouts: [Int64] = [30_000_000, 60_000_000]
    static let wakeUpMinimum = 3
    static let smallWakeUp = 10_000
    static let retryInterval: Int64 = 1_000_000
    static let retryMinimum = 3

    /// LTE parameters from Huang et al., "A Close Examination of Performance and Power Characteristics of 4G LTE
    /// Networks", MobiSys 2012 (promotion 260 ms, tail 11.576 s).
    static let ltePromotion: Int64 = 260_000
    static let lteTail: Int64 = 11_576_000

    public init(_ recording: Recording) {
        let connections = recording.connections
        var streams = recording
        streams.connections = connections.filter { $0.transport == "tcp" }
        let flows = connections.filter { $0.transport == "udp" }
        wallClock = recording.wallClock
        duration = recording.end
        connectionCount = streams.connections.count
        flowCount = flows.count
        datagramsUp = flows.reduce(0) { $0 + $1.deliveries.filter(\.up).reduce(0) { $0 + $1.operations } }
        datagramsDown = flows.reduce(0) { $0 + $1.deliveries.filter { !$0.up }.reduce(0) { $0 + $1.operations } }
        stalls = Self.stallTotals(connections, end: recording.end)
        datagramDrops = Self.dropTotals(flows)
        bytesUp = connections.reduce(0) { $0 + $1.deliveries.filter(\.up).reduce(0) { $0 + $1.bytes } }
        bytesDown = connections.reduce(0) { $0 + $1.deliveries.filter { !$0.up }.reduce(0) { $0 + $1.bytes } }
        lookups = recording.lookups.count
        cutAt = recording.cutAt
        radio = Self.radio(connections)
        hosts = Self.hosts(recording)
        findings = [
            Self.smallWrites(streams.connections), Self.serialRequests(streams), Self.reuseMissed(streams.connections),
            Self.setUpCost(streams), Self.wakeUps(radio), Self.longWaits(streams),
            Self.offlineRetries(streams),
        ].compactMap { $0 }
    }

    /// Stalls summed per cause (queue, loss, offline, fault), with the connections they held.
    static func stallTotals(_ connections: [Recording.Connection], end: Int64) -> [StallTotal] {
        var totals: [String: StallTotal] = [:]
        for connection in connections {
            for stall in connection.stalls {
                var total = totals[stall.cause] ?? StallTotal(cause: stall.cause, stalls: 0, time: 0, connections: [])
                total.stalls += 1
                total.time = total.time.addingSaturating(max(0, (stall.end ?? end) - stall.start))
                if total.connections.last != connection.id { total.connections.append(connection.id) }
                totals[stall.cause] = total
            }
        }
        return totals.values.sorted { $0.time > $1.time }
    }

    /// UDP datagrams dropped per cause, with the flows that lost them.
    static func dropTotals(_ flows: [Recording.Connection]) -> [DropTotal] {
        var totals: [String: DropTotal] = [:]
        for flow in flows {
            for drop in flow.drops {
                var total = totals[drop.cause] ?? DropTotal(cause: drop.cause, datagrams: 0, flows: [])
                total.datagrams += drop.datagrams
                if total.flows.last != flow.id { total.flows.append(flow.id) }
                totals[drop.cause] = total
            }
        }
        return totals.values.sorted { $0.datagrams > $1.datagrams }
    }

    private static func ms(_ micros: Int64) -> String {
        micros >= 10_000_000 ? "\(micros / 1_000_000) s" : "\(micros / 1000) ms"
    }

    private static func median(_ values: [Int64]) -> Int64? {
        values.isEmpty ? nil : values.sorted()[values.count / 2]
    }

    /// The most small writes `connection` made in one burst: within `smallWriteSpan` of each other, in the app's
    /// direction, with no reply delivered to the app between them. A request written in one piece counts one.
    static func smallWriteBurst(_ connection: Recording.Connection) -> Int {
        let replies = connection.deliveries.filter { !$0.up }.map(\.start)
        var burst: [Recording.Activity] = []
        var largest = 0
        var nextReply = replies.startIndex
        for send in connection.sends where send.up && send.small > 0 {
            while nextReply < replies.endIndex && replies[nextReply] <= send.start {
                burst.removeAll()
                nextReply += 1
            }
            burst.removeAll { send.last - $0.start > smallWriteSpan }
            burst.append(send)
            largest = max(largest, burst.reduce(0) { $0 + $1.small })
        }
        return largest
    }

    /// Connections that wrote several small pieces before a reply where one write would do: each piece can cost a
    /// packet's headers, a packet of its own with Nagle off, and a delayed-ACK wait with Nagle on.
    static func smallWrites(_ connections: [Recording.Connection]) -> Finding? {
        let bursts = connections.map { ($0, smallWriteBurst($0)) }.filter { $0.1 >= smallWriteBurst }
        guard let largest = bursts.map(\.1).max() else { return nil }
        let worst = bursts.sorted { $0.1 > $1.1 }
        return Finding(
            rule: "small-writes", title: "Small writes",
            threshold:
                "a connection made at least \(smallWriteBurst) writes under \(EventLog.smallWrite) bytes within \(ms(smallWriteSpan)), with no reply between them (a request written in one piece is not counted)",
            numbers:
                "\(bursts.count) of \(connections.count) connections wrote small pieces where one write would do; the worst wrote \(largest) in one burst",
            advice: "Buffer small messages and write them together; each write can cost a packet and a radio wake.",
            connections: bursts.map(\.0.id).sorted(), worst: worst.prefix(3).map(\.0.id),
            times: worst.prefix(20).compactMap { $0.0.sends.first { $0.up && $0.small > 0 }?.start })
    }

    /// A request: an upload that started after the previous answer on its connection came back (or the first).
    struct Request {
        var connection: UInt64
        var start: Int64
        /// When its last piece reached linkcond: from then on the app waits for the answer.
        var lastSent: Int64
        /// When its answer started and finished arriving; nil when none came.
        var firstAnswered: Int64?
        var answered: Int64?
    }

    /// The requests on `connection`. A write starts a new one only when an answer came since the current one began
    /// and the answer has stopped: a write while the answer keeps arriving (an HTTP/2 window update, a TLS key
    /// update, an application's acknowledgement in a download) belongs to the exchange it interrupts. An answer
    /// cannot come sooner than `roundTrip` after a write, so a delivery in that time is the old answer going on.
    static func requests(_ connection: Recording.Connection, roundTrip: Int64) -> [Request] {
        let answers = connection.deliveries.filter { !$0.up }
        var requests: [Request] = []
        for send in connection.sends where send.up {
            guard let current = requests.last else {
                requests.append(
                    Request(connection: connection.id, start: send.start, lastSent: send.last))
                continue
            }
            let answered = answers.contains { $0.start >= current.start && $0.start <= send.start }
            let answerGoesOn = answers.contains { $0.last >= send.start && $0.start < send.start + max(roundTrip, 1) }
            if answered && !answerGoesOn {
                requests.append(Request(connection: connection.id, start: send.start, lastSent: send.last))
            } else {
                requests[requests.count - 1].lastSent = send.last
            }
        }
        for index in requests.indices {
            let next = requests.indices.contains(index + 1) ? requests[index + 1].start : Int64.max
            let answer = answers.filter { $0.start >= requests[index].start && $0.start < next }
            requests[index].firstAnswered = answer.first?.start
            requests[index].answered = answer.last?.last
        }
        return requests
    }

    /// Requests to one host made one after another, each waiting for the previous answer: the latency adds up.
    static func serialRequests(_ recording: Recording) -> Finding? {
        var chains: [(host: String, requests: [Request])] = []
        for (host, connections) in Dictionary(grouping: recording.connections, by: \.host) {
            let all = connections.flatMap { requests($0, roundTrip: recording.roundTrip(at: $0.opened)) }
                .sorted { $0.start < $1.start }
            var serial: [Request] = []
            for (index, request) in all.enumerated() where index > 0 {
                let previous = all[..<index]
                let overlapped = previous.contains { ($0.answered ?? .max) > request.start }
                let latestAnswer = previous.compactMap(\.answered).max() ?? .min
                if !overlapped && request.start - latestAnswer < serialGap { serial.append(request) }
            }
            if serial.count >= serialMinimum { chains.append((host, serial)) }
        }
        guard !chains.isEmpty else { return nil }
        chains.sort { $0.requests.count > $1.requests.count }
        let total = chains.reduce(0) { $0 + $1.requests.count }
        let added = chains.flatMap(\.requests).reduce(Int64(0)) {
            $0.addingSaturating(recording.roundTrip(at: $1.start))
        }
        let described = chains.prefix(5).map { "\($0.host): \($0.requests.count)" }.joined(separator: ", ")
        return Finding(
            rule: "dependent-round-trips", title: "Requests one after another",
            threshold:
                "at least \(serialMinimum) requests to one host, each sent within \(ms(serialGap)) after the previous answer arrived and none while another was waiting",
            numbers:
                "\(total) serial requests (\(described)); under this profile they waited about \(ms(added)) of round trips",
            advice:
                "Send independent requests at once (HTTP/2 multiplexing or a few parallel connections), or batch them into one request.",
            connections: Set(chains[0].requests.map(\.connection)).sorted(),
            times: chains[0].requests.prefix(20).map(\.start))
    }

    /// New connections to a host that had one closed or idle moments before: each pays the handshake again. A
    /// connection linkcond ended (a failed upstream connect, a reset the user asked for) could not have been reused.
    static func reuseMissed(_ connections: [Recording.Connection]) -> Finding? {
        var missed: [Recording.Connection] = []
        var closedByUpstream = 0
        for (_, group) in Dictionary(grouping: connections, by: \.host) {
            let sorted = group.sorted { $0.opened < $1.opened }
            for (index, connection) in sorted.enumerated() where index > 0 {
                let reusable = sorted[..<index].filter { previous in
                    guard previous.closedBy != "linkcond" else { return false }
                    let lastActivity = (previous.sends + previous.deliveries).map(\.last).max()
                    let finished = min(previous.closed ?? .max, lastActivity ?? previous.closed ?? .max)
                    return finished <= connection.opened && connection.opened - finished < reuseWindow
                }
                guard !reusable.isEmpty else { continue }
                missed.append(connection)
                if reusable.allSatisfy({ $0.closedBy == "upstream" }) { closedByUpstream += 1 }
            }
        }
        guard missed.count >= reuseMinimum else { return nil }
        missed.sort { $0.opened < $1.opened }
        let hosts = Set(missed.map(\.host)).sorted().prefix(5).joined(separator: ", ")
        let upstreamNote =
            closedByUpstream == 0
            ? "" : "; for \(closedByUpstream) of them the upstream had closed the previous one (check its keep-alive)"
        return Finding(
            rule: "reuse-missed", title: "Connections not reused",
            threshold:
                "at least \(reuseMinimum) new connections to a host whose previous connection was idle or had closed, its last byte less than \(reuseWindow / 1_000_000) s before (connections linkcond ended are left out)",
            numbers: "\(missed.count) new connections (\(hosts)) each paid a new handshake\(upstreamNote)",
            advice: "Keep connections alive and reuse them (HTTP keep-alive, one shared session/client object).",
            connections: missed.map(\.id).sorted(), times: missed.prefix(20).map(\.opened))
    }

    /// Connections whose first answer reached linkcond more than `setUpRoundTrips` round trips after they opened,
    /// not counting what the profile did not cause: the app's own time before its last write ahead of that answer (a
    /// connection opened ahead of use, a request written slowly) and the upstream's time to answer it (a slow server). Read time, not delivery, so bytes queued
    /// behind other connections' downloads do not count either. What is left is the handshake and the first write's
    /// trip: about 1.5 round trips, more when the handshake was repeated (a lost SYN waits Linux's 1 s timeout).
    static func setUpCost(_ recording: Recording) -> Finding? {
        var slow: [(Recording.Connection, Double)] = []
        for connection in recording.connections {
            let roundTrip = recording.roundTrip(at: connection.opened)
            guard roundTrip > 0, let first = connection.sends.first(where: { !$0.up }) else { continue }
            let lastWrite = connection.sends.last { $0.up && $0.start <= first.start }
            let appWait = lastWrite.map { max(0, $0.last - connection.opened - roundTrip) } ?? 0
            let handedOver = connection.deliveries.last { $0.up && $0.start <= first.start }
            let upstreamTime = handedOver.map { max(0, first.start - $0.last) } ?? 0
            let trips = Double(first.start - connection.opened - appWait - upstreamTime) / Double(roundTrip)
            if trips > setUpRoundTrips { slow.append((connection, trips)) }
        }
        guard !slow.isEmpty else { return nil }
        let worst = slow.sorted { $0.1 > $1.1 }
        return Finding(
            rule: "set-up-cost", title: "Round trips spent on set-up",
            threshold:
                "the upstream's first byte reached linkcond more than \(setUpRoundTrips) round trips after the connection opened (the handshake and one request take about 1.5; the app's time to write its request, the upstream's time to answer and the downlink's queue are left out)",
            numbers:
                "\(slow.count) connections; the slowest waited \(String(format: "%.1f", worst[0].1)) round trips for its first byte",
            advice:
                "Cut set-up exchanges: reuse connections, TLS 1.3 and session resumption, fewer handshake messages before the request; on a lossy link each lost SYN costs a 1 s timeout.",
            connections: slow.map(\.0.id).sorted(), worst: worst.prefix(3).map(\.0.id),
            times: slow.prefix(20).map(\.0.opened))
    }

    static func radio(_ connections: [Recording.Connection]) -> Radio {
        let spans = connections.flatMap { $0.sends + $0.deliveries }.sorted { $0.start < $1.start }
        var periods: [[Int64]] = []
        for span in spans {
            if var current = periods.last, span.start <= current[1] {
                current[1] = max(current[1], span.last + lteTail)
                current[2] += Int64(span.bytes)
                periods[periods.count - 1] = current
            } else {
                periods.append([span.start, span.last + lteTail + ltePromotion, Int64(span.bytes)])
            }
        }
        return Radio(
            model: "LTE", promotion: ltePromotion, tail: lteTail,
            source:
                "Huang et al., A Close Examination of Performance and Power Characteristics of 4G LTE Networks, MobiSys 2012",
            wakeUps: periods.count, highPower: periods.reduce(0) { $0 + $1[1] - $1[0] }, periods: periods)
    }

    /// Small transfers spread out in time, each waking the radio for a whole tail.
    static func wakeUps(_ radio: Radio) -> Finding? {
        let small = radio.periods.filter { $0[2] < Int64(smallWakeUp) }
        guard small.count >= wakeUpMinimum else { return nil }
        return Finding(
            rule: "radio-wake-ups", title: "Radio woken by small transfers",
            threshold:
                "at least \(wakeUpMinimum) radio wake-ups (LTE tail \(ms(lteTail))) that each moved under \(smallWakeUp / 1000) KB",
            numbers:
                "\(small.count) of \(radio.wakeUps) wake-ups moved under \(smallWakeUp / 1000) KB; \(ms(Int64(small.count) * lteTail)) of high power for them",
            advice:
                "Batch periodic transfers (poll less often, piggyback on other traffic, use push), and defer what can wait.",
            connections: [], times: small.prefix(20).map { $0[0] })
    }

    /// Requests whose answer took longer than common client timeouts to start: from the request's last byte to the
    /// answer's first, or to the close when none came. A long download that started on time is not a wait.
    static func longWaits(_ recording: Recording) -> Finding? {
        var long: [(UInt64, Int64, Int64)] = []
        for connection in recording.connections {
            let roundTrip = recording.roundTrip(at: connection.opened)
            for request in requests(connection, roundTrip: roundTrip) {
                let end = request.firstAnswered ?? connection.closed
                if let end, end - request.lastSent >= clientTimeouts[0] {
                    long.append((connection.id, request.start, end - request.lastSent))
                }
            }
        }
        guard !long.isEmpty else { return nil }
        let over60 = long.filter { $0.2 >= clientTimeouts[1] }.count
        let worst = long.sorted { $0.2 > $1.2 }
        return Finding(
            rule: "long-waits", title: "Requests outlived client timeouts",
            threshold:
                "a request waited 30 s or more from its last byte to its answer's first (common client timeouts are 30 s and 60 s)",
            numbers:
                "\(long.count) requests waited at least 30 s, \(over60) at least 60 s; longest \(ms(worst[0].2))",
            advice: "Set timeouts from the network's real latency, show progress, and make long transfers resumable.",
            connections: Set(long.map(\.0)).sorted(),
            worst: worst.map(\.0).reduce(into: []) { if !$0.contains($1) && $0.count < 3 { $0.append($1) } },
            times: long.prefix(20).map(\.1))
    }

    /// Connections opened again and again while offline, each soon after the previous one to the host ended,
    /// faster than a backoff would. Connections opened together (parallel requests) are not retries of each other.
    static func offlineRetries(_ recording: Recording) -> Finding? {
        let offline = recording.connections.filter { connection in
            recording.phases.last(where: { $0.start <= connection.opened })?.offline != nil
        }
        var tight: [Recording.Connection] = []
        for (_, group) in Dictionary(grouping: offline, by: \.host) {
            let sorted = group.sorted { $0.opened < $1.opened }
            for index in sorted.indices.dropFirst() {
                let retried = sorted[..<index].contains { previous in
                    guard let closed = previous.closed else { return false }
                    return closed <= sorted[index].opened && sorted[index].opened - closed < retryInterval
                }
                if retried { tight.append(sorted[index]) }
            }
        }
        guard tight.count >= retryMinimum else { return nil }
        return Finding(
            rule: "offline-retries", title: "Retries in a tight loop while offline",
            threshold:
                "at least \(retryMinimum) connections to one host while offline, each opened less than \(ms(retryInterval)) after the previous one had ended",
            numbers: "\(tight.count) retries while offline (of \(offline.count) connections opened offline)",
            advice: "Back off exponentially while offline and retry when the system says the network is back.",
            connections: tight.map(\.id).sorted(), times: tight.prefix(20).map(\.opened))
    }

    static func hosts(_ recording: Recording) -> [HostTotals] {
        Dictionary(grouping: recording.connections, by: \.host).map { host, connections in
            let hostName = host.split(separator: ":").dropLast().joined(separator: ":")
            return HostTotals(
                host: host, connections: connections.count,
                bytesUp: connections.reduce(0) { $0 + $1.deliveries.filter(\.up).reduce(0) { $0 + $1.bytes } },
                bytesDown: connections.reduce(0) { $0 + $1.deliveries.filter { !$0.up }.reduce(0) { $0 + $1.bytes } },
                medianTimeToFirstByte: median(
                    connections.compactMap { connection in
                        connection.deliveries.first { !$0.up }.map { $0.start - connection.opened }
                    }),
                lookups: recording.lookups.filter { $0.name == hostName || $0.name == hostName + "." }.count)
        }.sorted { $0.connections > $1.connections }
    }

    /// Connection numbers as a person reads them: runs as ranges (`#3–#9`), at most `shown` ranges, then how many
    /// more, then the `worst` few: `#3–#9, #12 and 14 more; worst #7, #12`. The text and HTML reports both use it.
    public static func connectionList(_ ids: [UInt64], worst: [UInt64] = [], shown: Int = 6) -> String {
        var ranges: [ClosedRange<UInt64>] = []
        for id in Set(ids).sorted() {
            if let last = ranges.last, last.upperBound + 1 == id {
                ranges[ranges.count - 1] = last.lowerBound...id
            } else {
                ranges.append(id...id)
            }
        }
        guard !ranges.isEmpty else { return "-" }
        var text = ranges.prefix(shown).map { range in
            range.count == 1 ? "#\(range.lowerBound)" : "#\(range.lowerBound)–#\(range.upperBound)"
        }.joined(separator: ", ")
        let hidden = ranges.dropFirst(shown).reduce(0) { $0 + $1.count }
        if hidden > 0 { text += " and \(hidden) more" }
        if !worst.isEmpty && ids.count > 1 { text += "; worst \(worst.map { "#\($0)" }.joined(separator: ", "))" }
        return text
    }

    /// The plain-text summary `linkcond report` prints, its fields' control characters escaped for the terminal.
    public var summary: String {
        var lines = [
            "recording from \(wallClock): \(Self.ms(duration)), \(connectionCount) connections, \(bytesUp) bytes up, \(bytesDown) bytes down, \(lookups) DNS lookups"
        ]
        if flowCount > 0 { lines.append("udp: \(flowCount) flows, \(datagramsUp) datagrams up, \(datagramsDown) down") }
        for total in stalls {
            lines.append(
                "stalls (\(total.cause)): \(total.stalls), \(Self.ms(total.time)) in all; connections \(Self.connectionList(total.connections))"
            )
        }
        for total in datagramDrops {
            lines.append(
                "datagrams dropped (\(total.cause)): \(total.datagrams); flows \(Self.connectionList(total.flows))"
            )
        }
        if let cutAt {
            lines.append("the recording reached its size limit at \(Self.ms(cutAt)): nothing after that is in it")
        }
        lines.append(
            "radio (\(radio.model) model): \(radio.wakeUps) wake-ups, \(Self.ms(radio.highPower)) in high power")
        if findings.isEmpty { lines.append("findings: none") }
        for finding in findings {
            lines.append("finding \(finding.rule): \(finding.numbers)")
            lines.append("  threshold: \(finding.threshold)")
            if !finding.connections.isEmpty {
                lines.append("  connections: \(Self.connectionList(finding.connections, worst: finding.worst))")
            }
            lines.append("  advice: \(finding.advice)")
        }
        for host in hosts.prefix(10) {
            lines.append(
                "host \(host.host): \(host.connections) connections, \(host.bytesUp) B up, \(host.bytesDown) B down, first byte \(host.medianTimeToFirstByte.map(Self.ms) ?? "-") (median), \(host.lookups) lookups"
            )
        }
        return TerminalText.lines(lines) + "\n"
    }
}
