import Foundation

/// A recording read back from its file: connections with their activity, lookups, and the conditions over time.
/// Times are microseconds since the recording started.
public struct Recording: Sendable {
    public struct Activity: Sendable, Codable {
        public var start: Int64
        public var last: Int64
        public var up: Bool
        public var bytes: Int
        public var operations: Int
        public var small: Int
    }

    public struct Stall: Sendable, Codable {
        public var start: Int64
        public var end: Int64?
        public var up: Bool
        public var cause: String
    }

    /// Datagrams of a UDP flow dropped in one window: at the link's full queue, by the link, or by a fault.
    public struct Drop: Sendable, Codable {
        public var start: Int64
        public var last: Int64
        public var up: Bool
        public var cause: String
        public var datagrams: Int
    }

    public struct Connection: Sendable {
        public var id: UInt64
        /// `tcp`, or `udp` for a flow of the UDP relay.
        public var transport = "tcp"
        public var listener: String
        public var client: String
        public var destination: String
        public var name: String?
        public var opened: Int64
        public var established: Int64?
        public var closed: Int64?
        public var closedBy: String?
        public var reset = false
        public var sends: [Activity] = []
        public var deliveries: [Activity] = []
        public var stalls: [Stall] = []
        public var drops: [Drop] = []
        /// The line of the file that opened it.
        public var line: Int

        /// The host the app asked for: the name when it gave one, else the destination address.
        public var host: String { name ?? destination }
    }

    public struct Lookup: Sendable, Codable {
        public var time: Int64
        public var name: String
        public var type: String
        public var delay: Int64
        public var answers: [String]
        /// `udp`, or `tcp` for a query over DNS over TCP.
        public var transport = "udp"
    }

    /// The conditions from `start` on.
    public struct Phase: Sendable, Codable {
        public var start: Int64
        public var profile: String
        public var summary: String
        public var offline: String?
        public var roundTrip: Int64
    }

    public struct Step: Sendable, Codable {
        public var time: Int64
        public var text: String
        public var line: Int?
    }

    public var wallClock: String
    public var connections: [Connection] = []
    public var lookups: [Lookup] = []
    public var phases: [Phase] = []
    public var steps: [Step] = []
    /// The last time any line mentions.
    public var end: Int64 = 0
    /// When the size limit cut the recording, if it did.
    public var cutAt: Int64?
    /// Events the recorder dropped because the disk fell behind.
    public var droppedEvents = 0
    /// The number of the file's last line when it is cut short (a full disk or a kill stopped the writer mid-line):
    /// every line before it was read, it was not. Only the last line may be cut; a damaged line before it is refused.
    public var cutLine: Int?

    /// Why a file is not a recording this version can read; says file:line and what was expected.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The largest number an event may carry: 2⁴² µs is 50 days, and as many bytes in one 20 ms window is far
    /// beyond any link. Numbers of a few million events summed stay far inside 64 bits, and a time, a byte count or
    /// a connection number from a damaged file (negative, 1e300, Int64.max) is refused instead of trapping later.
    public static let largestNumber: Int64 = 1 << 42

    /// Reads the recording at `path`.
    public init(contentsOf path: String) throws(Problem) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(description: "\(path): cannot read the file")
        }
        try self.init(data: data, file: path)
    }

    /// Parses recording `data`; `file` names it in errors.
    public init(data: Data, file: String) throws(Problem) {
        let bytes = [UInt8](data)
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        let endsWithNewline = bytes.last == 0x0A
        if endsWithNewline { lines.removeLast() }
        guard !lines.isEmpty else {
            throw Problem(description: "\(file): empty file; expected a recording made by linkcond run --record")
        }
        wallClock = ""
        var open: [UInt64: Int] = [:]
        for (index, line) in lines.enumerated() {
            let number = index + 1
            let isLast = index == lines.count - 1
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
                if isLast && !endsWithNewline && index > 0 {
                    cutLine = number
                    break
                }
                if isLast && !endsWithNewline {
                    throw Problem(
                        description:
                            "\(file):1: the first line is cut short: the recording was interrupted before it began")
                }
                throw Problem(
                    description:
                        "\(file):\(number): not a JSON object; expected one event per line as linkcond run --record writes them"
                )
            }
            let event = object["ev"] as? String ?? ""
            if index == 0 {
                guard event == "start" else {
                    throw Problem(
                        description: "\(file):1: not a linkcond recording: the first line should be the \"start\" event"
                    )
                }
                let version = object["v"] as? Int ?? -1
                guard version == EventLog.version else {
                    throw Problem(
                        description:
                            "\(file):1: recording format version \(version); this linkcond reads version \(EventLog.version)"
                    )
                }
                wallClock = object["wall"] as? String ?? ""
                continue
            }
            func int(_ key: String) throws(Problem) -> Int64 {
                guard let value = object[key] as? NSNumber else {
                    throw Problem(description: "\(file):\(number): \"\(event)\" event without a number \"\(key)\"")
                }
                let amount = value.doubleValue
                guard amount >= 0, amount <= Double(Self.largestNumber), amount == amount.rounded(.towardZero) else {
                    throw Problem(
                        description:
                            "\(file):\(number): \"\(key)\" is \(value): expected a whole number from 0 to \(Self.largestNumber)"
                    )
                }
                return Int64(amount)
            }
            let time = try int("t")
            end = max(end, time)
            func connection() throws(Problem) -> Int {
                let id = UInt64(try int("conn"))
                guard let position = open[id] else {
                    throw Problem(description: "\(file):\(number): connection \(id) was never opened")
                }
                return position
            }
            switch event {
            case "open":
                let id = UInt64(try int("conn"))
                open[id] = connections.count
                connections.append(
                    Connection(
                        id: id, listener: object["listener"] as? String ?? "",
                        client: object["client"] as? String ?? "",
                        destination: object["dest"] as? String ?? "",
                        name: object["name"] as? String, opened: time, line: number))
                if let transport = object["proto"] as? String {
                    connections[connections.count - 1].transport = transport
                }
            case "established":
                connections[try connection()].established = time
            case "send", "deliver":
                let position = try connection()
                let activity = Activity(
                    start: time, last: try int("last"), up: object["dir"] as? String == "up",
                    bytes: Int(try int("bytes")),
                    operations: Int((object["reads"] ?? object["writes"]) as? Int ?? 0),
                    small: Int(try int("small")))
                end = max(end, activity.last)
                if event == "send" {
                    connections[position].sends.append(activity)
                } else {
                    connections[position].deliveries.append(activity)
                }
            case "stall":
                connections[try connection()].stalls.append(
                    Stall(
                        start: time, end: nil, up: object["dir"] as? String == "up",
                        cause: object["cause"] as? String ?? "?"))
            case "resume":
                let position = try connection()
                let up = object["dir"] as? String == "up"
                let cause = object["cause"] as? String ?? "?"
                if let last = connections[position].stalls.lastIndex(where: {
                    $0.up == up && $0.end == nil && $0.cause == cause
                }) {
                    connections[position].stalls[last].end = time
                }
            case "drop":
                let position = try connection()
                let drop = Drop(
                    start: time, last: try int("last"), up: object["dir"] as? String == "up",
                    cause: object["cause"] as? String ?? "?", datagrams: Int(try int("datagrams")))
                end = max(end, drop.last)
                connections[position].drops.append(drop)
            case "close":
                let position = try connection()
                connections[position].closed = time
                connections[position].closedBy = object["by"] as? String
                connections[position].reset = object["reset"] as? Bool ?? false
            case "dns":
                lookups.append(
                    Lookup(
                        time: time, name: object["name"] as? String ?? "?", type: object["type"] as? String ?? "?",
                        delay: try int("delay_us"), answers: object["answer"] as? [String] ?? [],
                        transport: object["proto"] as? String ?? "udp"))
            case "profile":
                let roundTrip = try int("delay_up_us") + int("delay_down_us")
                phases.append(
                    Phase(
                        start: time, profile: object["name"] as? String ?? "",
                        summary: object["summary"] as? String ?? "",
                        offline: object["offline"] as? String, roundTrip: roundTrip))
            case "scenario":
                steps.append(Step(time: time, text: object["step"] as? String ?? "", line: object["line"] as? Int))
            case "limit":
                cutAt = time
            case "dropped":
                droppedEvents = min(droppedEvents + Int(try int("events")), Int(Self.largestNumber))
            case "end":
                break
            default:
                throw Problem(
                    description:
                        "\(file):\(number): unknown event \"\(event)\"; expected open, established, send, deliver, stall, resume, drop, close, dns, profile, scenario, dropped, limit or end"
                )
            }
        }
        for index in connections.indices {
            connections[index].sends.sort { $0.start < $1.start }
            connections[index].deliveries.sort { $0.start < $1.start }
        }
    }

    /// The round trip the profile gave at `time` (microseconds).
    public func roundTrip(at time: Int64) -> Int64 {
        phases.last(where: { $0.start <= time })?.roundTrip ?? phases.first?.roundTrip ?? 0
    }
}
