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
        /// The connections it is based on (at most 20 listed).
        public var connections: [UInt64]
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

    static let smallWriteShare = 0.5
    static let smallWriteMinimum = 20
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
            Self.setUpCost(streams), Self.wakeUps(radio), Self.longWaits(streams.connections),
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
                if total.connections.last != connection.id && total.connections.count < 20 {
                    total.connections.append(connection.id)
                }
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
                if total.flows.last != flow.id && total.flows.count < 20 { total.flows.append(flow.id) }
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

    /// Many of the app's writes are under 100 bytes: each costs a packet's headers and, with Nagle off, a packet.
    static func smallWrites(_ connections: [Recording.Connection]) -> Finding? {
        let sends = connections.flatMap { connection in connection.sends.filter(\.up).map { (connection.id, $0) } }
        let reads = sends.reduce(0) { $0 + $1.1.operations }
        let small = sends.reduce(0) { $0 + $1.1.small }
        guard small >= smallWriteMinimum, Double(small) >= smallWriteShare * Double(reads) else { return nil }
        let worst = Dictionary(grouping: sends, by: \.0).mapValues { $0.reduce(0) { $0 + $1.1.small } }
            .sorted { $0.value > $1.value }.prefix(20)
        return Finding(
            rule: "small-writes", title: "Small writes",
            threshold:
                "at least \(smallWriteMinimum) writes under \(EventLog.smallWrite) bytes, and at least \(Int(smallWriteShare * 100)) % of all writes",
            numbers:
                "\(small) of \(reads) writes (\(small * 100 / max(reads, 1)) %) were under \(EventLog.smallWrite) bytes",
            advice: "Buffer small messages and write them together; each write can cost a packet and a radio wake.",
            connections: worst.map(\.key),
            times: sends.filter { $0.1.small > 0 }.prefix(20).map(\.1.start))
    }

    /// A request: an upload that started after the previous answer on its connection came back (or the first).
    struct Request {
        var connection: UInt64
        var start: Int64
        /// When its answer finished arriving; nil when none came.
        var answered: Int64?
    }

    static func requests(_ connection: Recording.Connection) -> [Request] {
        let answers = connection.deliveries.filter { !$0.up }
        var requests: [Request] = []
        for send in connection.sends where send.up {
            guard let current = requests.last else {
                requests.append(Request(connection: connection.id, start: send.start, answered: nil))
                continue
            }
            if let answer = answers.last(where: { $0.start >= current.start && $0.start <= send.start }) {
                requests[requests.count - 1].answered = answer.last
                requests.append(Request(connection: connection.id, start: send.start, answered: nil))
            }
        }
        if let current = requests.last, let answer = answers.last(where: { $0.start >= current.start }) {
            requests[requests.count - 1].answered = answer.last
        }
        return requests
    }

    /// Requests to one host made one after another, each waiting for the previous answer: the latency adds up.
    static func serialRequests(_ recording: Recording) -> Finding? {
        var chains: [(host: String, requests: [Request])] = []
        for (host, connections) in Dictionary(grouping: recording.connections, by: \.host) {
            let all = connections.flatMap(requests).sorted { $0.start < $1.start }
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
            connections: Array(Set(chains[0].requests.map(\.connection)).sorted().prefix(20)),
            times: chains[0].requests.prefix(20).map(\.start))
    }

    /// New connections to a host that had one closed moments before: each pays the handshake again.
    static func reuseMissed(_ connections: [Recording.Connection]) -> Finding? {
        var missed: [Recording.Connection] = []
        for (_, group) in Dictionary(grouping: connections, by: \.host) {
            let sorted = group.sorted { $0.opened < $1.opened }
            for (index, connection) in sorted.enumerated() where index > 0 {
                let recentlyClosed = sorted[..<index].contains { previous in
                    let finished = min(
                        previous.closed ?? .max, previous.deliveries.last?.last ?? previous.closed ?? .max)
                    return finished <= connection.opened && connection.opened - finished < reuseWindow
                }
                if recentlyClosed { missed.append(connection) }
            }
        }
        guard missed.count >= reuseMinimum else { return nil }
        missed.sort { $0.opened < $1.opened }
        let hosts = Set(missed.map(\.host)).sorted().prefix(5).joined(separator: ", ")
        return Finding(
            rule: "reuse-missed", title: "Connections not reused",
            threshold:
                "at least \(reuseMinimum) new connections to a host whose previous connection was idle or had closed, its last byte less than \(reuseWindow / 1_000_000) s before",
            numbers: "\(missed.count) new connections (\(hosts)) each paid a new handshake",
            advice: "Keep connections alive and reuse them (HTTP keep-alive, one shared session/client object).",
            connections: missed.prefix(20).map(\.id), times: missed.prefix(20).map(\.opened))
    }

    /// Connections whose upstream's first byte reached linkcond more than `setUpRoundTrips` round trips after they opened
    /// (read time, not delivery, so bytes queued behind other connections' downloads do not count as set-up).
    static func setUpCost(_ recording: Recording) -> Finding? {
        var slow: [(Recording.Connection, Double)] = []
        for connection in recording.connections {
            let roundTrip = recording.roundTrip(at: connection.opened)
            guard roundTrip > 0, let first = connection.sends.first(where: { !$0.up }) else { continue }
            let trips = Double(first.start - connection.opened) / Double(roundTrip)
            if trips > setUpRoundTrips { slow.append((connection, trips)) }
        }
        guard !slow.isEmpty else { return nil }
        let worst = slow.map(\.1).max() ?? 0
        return Finding(
            rule: "set-up-cost", title: "Round trips spent on set-up",
            threshold:
                "the upstream's first byte reached linkcond more than \(setUpRoundTrips) round trips after the connection opened (the handshake and one request take about 1.5; the downlink's queue is left out)",
            numbers:
                "\(slow.count) connections; the slowest waited \(String(format: "%.1f", worst)) round trips for its first byte",
            advice:
                "Cut set-up exchanges: reuse connections, TLS 1.3 and session resumption, fewer handshake messages before the request.",
            connections: slow.prefix(20).map(\.0.id), times: slow.prefix(20).map(\.0.opened))
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

    /// Requests whose answer took longer than common client timeouts.
    static func longWaits(_ connections: [Recording.Connection]) -> Finding? {
        var long: [(UInt64, Int64, Int64)] = []
        for connection in connections {
            for request in requests(connection) {
                let end = request.answered ?? connection.closed
                if let end, end - request.start >= clientTimeouts[0] {
                    long.append((connection.id, request.start, end - request.start))
                }
            }
        }
        guard !long.isEmpty else { return nil }
        let over60 = long.filter { $0.2 >= clientTimeouts[1] }.count
        return Finding(
            rule: "long-waits", title: "Requests outlived client timeouts",
            threshold: "a request waited 30 s or more for its answer (common client timeouts are 30 s and 60 s)",
            numbers:
                "\(long.count) requests waited at least 30 s, \(over60) at least 60 s; longest \(ms(long.map(\.2).max() ?? 0))",
            advice: "Set timeouts from the network's real latency, show progress, and make long transfers resumable.",
            connections: long.prefix(20).map(\.0), times: long.prefix(20).map(\.1))
    }

    /// Connections opened again and again while offline, faster than a backoff would.
    static func offlineRetries(_ recording: Recording) -> Finding? {
        let offline = recording.connections.filter { connection in
            recording.phases.last(where: { $0.start <= connection.opened })?.offline != nil
        }
        var tight: [Recording.Connection] = []
        for (_, group) in Dictionary(grouping: offline, by: \.host) {
            let sorted = group.sorted { $0.opened < $1.opened }
            for index in sorted.indices.dropFirst()
            where sorted[index].opened - sorted[index - 1].opened < retryInterval {
                tight.append(sorted[index])
            }
        }
        guard tight.count >= retryMinimum else { return nil }
        return Finding(
            rule: "offline-retries", title: "Retries in a tight loop while offline",
            threshold:
                "at least \(retryMinimum) connections to one host while offline, each less than \(ms(retryInterval)) after the previous",
            numbers: "\(tight.count) retries while offline (of \(offline.count) connections opened offline)",
            advice: "Back off exponentially while offline and retry when the system says the network is back.",
            connections: tight.prefix(20).map(\.id), times: tight.prefix(20).map(\.opened))
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

    /// The plain-text summary `linkcond report` prints, its fields' control characters escaped for the terminal.
    public var summary: String {
        var lines = [
            "recording from \(wallClock): \(Self.ms(duration)), \(connectionCount) connections, \(bytesUp) bytes up, \(bytesDown) bytes down, \(lookups) DNS lookups"
        ]
        if flowCount > 0 { lines.append("udp: \(flowCount) flows, \(datagramsUp) datagrams up, \(datagramsDown) down") }
        for total in stalls {
            lines.append(
                "stalls (\(total.cause)): \(total.stalls), \(Self.ms(total.time)) in all; connections \(total.connections.map(String.init).joined(separator: " "))"
            )
        }
        for total in datagramDrops {
            lines.append(
                "datagrams dropped (\(total.cause)): \(total.datagrams); flows \(total.flows.map(String.init).joined(separator: " "))"
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
                lines.append("  connections: \(finding.connections.map(String.init).joined(separator: " "))")
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
