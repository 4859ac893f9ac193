import Foundation

/// A status report in Prometheus' text exposition format (version 0.0.4), for `GET /metrics`.
///
/// Counters end in `_total` and carry base units (bytes, seconds); every listener's samples are labelled with
/// `listener` (its address) and `kind`, and per-direction ones with `direction` (`uplink` or `downlink`). Each
/// family is written once, with its HELP and TYPE lines before its samples, as the format requires.
struct MetricsExposition {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private enum Kind: String { case counter, gauge, summary }

    private var lines: [String] = []

    init(_ report: StatusReport) {
        family(
            "linkcond_info", .gauge, "The running linkcond's version, as a label; always 1.",
            [(["version": report.version], 1)])
        family(
            "linkcond_offline", .gauge, "1 while airplane mode is on (refuse or blackhole), else 0.",
            [([:], report.offline == nil ? 0 : 1)])
        family(
            "linkcond_scenario_running", .gauge, "1 while a scenario runs and has not finished, else 0.",
            [([:], report.scenario.map { $0.finished ? 0 : 1 } ?? 0)])
        let listeners = report.listeners
        perListener(listeners, "linkcond_connections_active", .gauge, "Live connections (TCP) or flows (UDP).") {
            Double($0.activeConnections)
        }
        perListener(listeners, "linkcond_connections_accepted_total", .counter, "Connections or flows accepted.") {
            Double($0.connectionsAccepted)
        }
        perListener(
            listeners, "linkcond_connections_refused_total", .counter,
            "Connections or flows refused (offline, a refusing profile, or a limit)."
        ) { Double($0.connectionsRefused) }
        perListener(
            listeners, "linkcond_connections_excluded_total", .counter,
            "Connections relayed untouched because their destination matched exclude."
        ) { Double($0.connectionsExcluded ?? 0) }
        perListener(
            listeners, "linkcond_connections_looped_total", .counter,
            "Connections closed at accept because they came from linkcond's own upstream connection (a relay loop)."
        ) {
            Double($0.connectionsLooped ?? 0)
        }
        perListener(
            listeners, "linkcond_connections_turned_away_total", .counter,
            "Connections closed at accept because linkcond was out of file descriptors."
        ) { Double($0.connectionsTurnedAway ?? 0) }
        perListener(
            listeners, "linkcond_malformed_messages_total", .counter, "Messages a DNS listener dropped as malformed."
        ) {
            Double($0.malformedMessages)
        }
        perDirection(listeners, "linkcond_link_delivered_bytes_total", .counter, "Payload bytes the link delivered.") {
            Double($0.bytesDelivered)
        }
        perDirection(listeners, "linkcond_link_queued_bytes", .gauge, "Bytes waiting in the link's queue now.") {
            Double($0.queuedBytes)
        }
        perDirection(
            listeners, "linkcond_link_in_flight_bytes", .gauge,
            "Bytes serialised and waiting for their delivery time now."
        ) {
            Double($0.inFlightBytes)
        }
        perDirection(
            listeners, "linkcond_link_queue_delay_seconds", .gauge,
            "How long a byte arriving now waits in the queue at the link's rate (+Inf while nothing passes)."
        ) {
            $0.queueDelaySeconds ?? .infinity
        }
        perDirection(
            listeners, "linkcond_link_throughput_bytes_per_second", .gauge,
            "Delivered payload per second over the last second, as linkcond samples it."
        ) { $0.bitsPerSecond / 8 }
        perDirection(
            listeners, "linkcond_link_segments_lost_total", .counter, "TCP segment transmissions the link lost."
        ) {
            Double($0.segmentsLost)
        }
        perDirection(
            listeners, "linkcond_link_acks_lost_total", .counter,
            "ACKs of the direction's TCP flows lost on the reverse direction."
        ) { Double($0.acksLost) }
        perDirection(
            listeners, "linkcond_link_handshake_retransmissions_total", .counter,
            "TCP handshake segments resent after a loss: SYNs on the uplink, SYN-ACKs on the downlink."
        ) {
            Double($0.handshakeRetransmissions)
        }
        perDirection(listeners, "linkcond_link_datagrams_delivered_total", .counter, "Datagram copies delivered.") {
            Double($0.datagramsDelivered)
        }
        perDirection(
            listeners, "linkcond_link_datagrams_dropped_total", .counter,
            "Datagrams dropped by the profile: tail drop, random loss, burst loss."
        ) { Double($0.datagramsDropped) }
        perDirection(
            listeners, "linkcond_link_datagrams_duplicated_total", .counter, "Extra copies of duplicated datagrams."
        ) {
            Double($0.duplicates)
        }
        perDirection(
            listeners, "linkcond_link_datagrams_corrupted_total", .counter,
            "Datagrams delivered with one payload bit flipped."
        ) { Double($0.datagramsCorrupted ?? 0) }
        perDirection(
            listeners, "linkcond_kernel_dropped_datagrams_total", .counter,
            "Datagrams the kernel dropped at linkcond's full receive buffer: loss no profile asked for."
        ) {
            Double($0.kernelDrops)
        }
        perDirection(
            listeners, "linkcond_fault_dropped_datagrams_total", .counter,
            "Datagrams a connection fault kept from crossing: a blocked port, a cut UDP flow."
        ) {
            Double($0.faultDrops)
        }
        let late = listeners.flatMap { listener in
            [("uplink", listener.uplink), ("downlink", listener.downlink)].compactMap { direction, figures in
                figures.deliveryLateness.map {
                    (Self.labels(of: listener).merging(["direction": direction]) { $1 }, $0)
                }
            }
        }
        family(
            "linkcond_delivery_lateness_seconds", .summary,
            "How late linkcond wrote released TCP bytes after the link model released them, since the start, per write "
                + "(quantile 1 is the maximum). Emulated delays were that much longer.",
            late.flatMap { labels, lateness in
                [("0.5", lateness.p50Seconds), ("0.99", lateness.p99Seconds), ("1", lateness.maxSeconds)].map {
                    quantile, value in
                    (labels.merging(["quantile": quantile]) { $1 }, value)
                }
            },
            totals: late.map { labels, lateness in (labels, Double(lateness.writes), lateness.sumSeconds) })
        let destinations = listeners.flatMap { listener in
            (listener.destinations ?? []).map {
                (Self.labels(of: listener).merging(["destination": $0.destination]) { $1 }, $0)
            }
        }
        family(
            "linkcond_destination_connections_total", .counter,
            "Connections (TCP) and flows (UDP) an exec'd program opened, by destination (at most 64, then \"other\").",
            destinations.map { ($0.0, Double($0.1.connections)) })
        family(
            "linkcond_destination_bytes_total", .counter,
            "Payload bytes an exec'd program sent (uplink) and received (downlink), by destination.",
            destinations.flatMap { labels, row in
                [
                    (labels.merging(["direction": "uplink"]) { $1 }, Double(row.bytesUp)),
                    (labels.merging(["direction": "downlink"]) { $1 }, Double(row.bytesDown)),
                ]
            })
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    private mutating func perListener(
        _ listeners: [StatusReport.Listener], _ name: String, _ kind: Kind, _ help: String,
        _ value: (StatusReport.Listener) -> Double
    ) {
        family(name, kind, help, listeners.map { (Self.labels(of: $0), value($0)) })
    }

    private mutating func perDirection(
        _ listeners: [StatusReport.Listener], _ name: String, _ kind: Kind, _ help: String,
        _ value: (StatusReport.Direction) -> Double
    ) {
        family(
            name, kind, help,
            listeners.flatMap { listener in
                [("uplink", listener.uplink), ("downlink", listener.downlink)].map { direction, counters in
                    (Self.labels(of: listener).merging(["direction": direction]) { $1 }, value(counters))
                }
            })
    }

    /// One family; a summary's `_count` and `_sum` samples come from `totals`.
    private mutating func family(
        _ name: String, _ kind: Kind, _ help: String, _ samples: [([String: String], Double)],
        totals: [([String: String], count: Double, sum: Double)] = []
    ) {
        lines.append("# HELP \(name) \(help)")
        lines.append("# TYPE \(name) \(kind.rawValue)")
        for (labels, value) in samples { sample(name, labels, value) }
        for (labels, count, sum) in totals {
            sample(name + "_count", labels, count)
            sample(name + "_sum", labels, sum)
        }
    }

    private mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        let pairs = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escaped($0.value))\"" }
        lines.append(name + (pairs.isEmpty ? "" : "{\(pairs.joined(separator: ","))}") + " " + Self.number(value))
    }

    private static func labels(of listener: StatusReport.Listener) -> [String: String] {
        ["listener": listener.address, "kind": listener.kind]
    }

    /// A label value with backslash, double quote and line feed escaped, as the format asks.
    static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A sample value: integers without a fraction, `+Inf` for infinity.
    static func number(_ value: Double) -> String {
        if value == .infinity { return "+Inf" }
        if value.isNaN { return "NaN" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

/// The answers of the routes the dashboard reads besides `/status`.
extension ControlAPI {
    /// `report` in the exposition format. Runs on the worker thread.
    static func metrics(_ report: StatusReport) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: MetricsExposition.contentType, body: MetricsExposition(report).text)
    }

    /// The first `ConnectionList.limit` of `entries` in order, with their count. Runs on the worker thread.
    static func connections(_ entries: [ConnectionEntry]) -> HTTPResponse {
        let all = entries.sorted { ($0.listener, $0.id, $0.client) < ($1.listener, $1.id, $1.client) }
        return Self.encoded(ConnectionList(total: all.count, connections: Array(all.prefix(ConnectionList.limit))))
    }

    /// The built-in profiles (name, summary, text) and scenarios (name, text), for the dashboard's pickers.
    static let catalog: HTTPResponse = {
        struct Entry: Encodable {
            var name: String
            var summary: String?
            var text: String
        }
        struct Catalog: Encodable {
            var profiles: [Entry]
            var scenarios: [Entry]
        }
        let texts = Dictionary(Profile.builtInTexts.map { ($0.name, $0.text) }) { first, _ in first }
        return encoded(
            Catalog(
                profiles: Profile.builtIns.map {
                    Entry(name: $0.name, summary: $0.summary, text: texts[$0.name] ?? $0.rendered)
                },
                scenarios: BuiltInScenarioTexts.all.map { Entry(name: $0.name, text: $0.text) }))
    }()

    static func encoded(_ value: some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else { return .error(500, "the answer could not be encoded") }
        return .json(String(decoding: data, as: UTF8.self))
    }
}
