import LinkModel

/// The `queue.*` keys: the bottleneck's queue discipline and its CoDel and FQ-CoDel parameters.
public enum QueueDisciplineSetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "queue.discipline", value: "`fifo`, `drophead`, `codel`, `fq_codel`", default: "fifo",
            meaning: "who gets dropped when the queue is full or standing, see [queue "
                + "disciplines](../design/link-model.md#queue-disciplines)",
            example: "codel"),
        KeyReference(
            "queue.target", value: "duration", default: "5 ms",
            meaning: "CoDel's target sojourn time (codel, fq_codel)",
            example: "10 ms"),
        KeyReference(
            "queue.interval", value: "duration", default: "100 ms",
            meaning: "CoDel's interval (codel, fq_codel)",
            example: "200 ms"),
        KeyReference(
            "queue.flows", value: "count", default: "1024",
            meaning: "fq_codel's flow queues",
            example: "64"),
        KeyReference(
            "queue.quantum", value: "size", default: "1514 B",
            meaning: "fq_codel's deficit-round-robin quantum",
            example: "3000 B"),
    ]
    public static let kernelSupport = KernelSupport.partly("`fifo` only")
    public static let referenceSection = ReferenceSection.link
    static let maximumFlows = 65_536
    static let maximumQuantum = 1024 * 1024

    public static func expected(for key: String) -> String {
        switch key {
        case "queue.discipline": "one of \(QueueManagement.disciplineNames.joined(separator: ", "))"
        case "queue.flows": "a whole number of flow queues from 1 to \(maximumFlows), such as \"1024\""
        case "queue.quantum": "a size from 1 B to 1 MiB, such as \"1514 B\""
        default: "a duration above zero, such as \"5 ms\" (units: ns, µs, us, ms, s)"
        }
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let expected = expected(for: key)
        switch key {
        case "queue.discipline":
            guard let named = QueueManagement(named: value.lowercased()) else {
                throw .invalidValue(expected: expected)
            }
            return { $0.queueManagement = QueueManagement(keeping: $0.queueManagement, discipline: named.discipline) }
        case "queue.target", "queue.interval":
            let duration = try ProfileValue.duration(value)
            guard duration > .zero else { throw .zeroValue(expected: expected) }
            if key == "queue.target" { return { $0.queueManagement.codel.target = duration } }
            return { $0.queueManagement.codel.interval = duration }
        case "queue.flows":
            guard let flows = Int(value), flows >= 1, flows <= maximumFlows else {
                throw .outOfRange(expected: expected)
            }
            return { $0.queueManagement.flows = flows }
        default:
            let quantum = try ProfileValue.size(value, expected: expected)
            guard quantum.bytes <= maximumQuantum else { throw .outOfRange(expected: expected) }
            return { $0.queueManagement.quantum = quantum.bytes }
        }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        let management = direction.queueManagement
        let defaults = QueueManagement()
        var lines: [(key: String, value: String)] = []
        if management.discipline != defaults.discipline { lines.append(("queue.discipline", management.discipline)) }
        if management.codel.target != defaults.codel.target {
            lines.append(("queue.target", ProfileValue.format(management.codel.target)))
        }
        if management.codel.interval != defaults.codel.interval {
            lines.append(("queue.interval", ProfileValue.format(management.codel.interval)))
        }
        if management.flows != defaults.flows { lines.append(("queue.flows", String(management.flows))) }
        if management.quantum != defaults.quantum { lines.append(("queue.quantum", "\(management.quantum) B")) }
        return lines
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) {
            $0.queueManagement.isFIFO ? nil : $0.queueManagement.discipline
        }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction.queueManagement.isFIFO ? [] : ["queue.discipline = \(direction.queueManagement.discipline)"]
    }
}
