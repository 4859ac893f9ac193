import Foundation

/// One figure of the table: linkcond's (or a peer's) value, the peers it is compared with from the same run, and the
/// issue's target when there is one.
struct Row {
    var group: String
    var name: String
    var value: Double?
    var unit: String
    var comparisons: [(peer: String, value: Double)] = []
    var target: String? = nil
    var met: Bool? = nil
    var note: String? = nil
}

/// The benchmark's table and its JSON twin.
final class Report {
    private(set) var rows: [Row] = []
    private var group = ""

    func section(_ title: String) {
        group = title
        print("\n## \(title)")
        flushStandardOutput()
    }

    /// Adds and prints a row.
    func add(
        _ name: String, _ value: Double?, _ unit: String, versus comparisons: [(String, Double?)] = [],
        target: String? = nil, met: Bool? = nil, note: String? = nil
    ) {
        let present = comparisons.compactMap { pair in pair.1.map { (peer: pair.0, value: $0) } }
        let row = Row(
            group: group, name: name, value: value, unit: unit, comparisons: present, target: target, met: met,
            note: note)
        rows.append(row)
        print(Report.line(row))
        flushStandardOutput()
    }

    /// Adds a row that could not be measured, saying why.
    func skip(_ name: String, because reason: String) {
        add(name, nil, "", note: "skipped: \(reason)")
    }

    static func line(_ row: Row) -> String {
        var text = pad(row.name, 34) + pad(row.value.map { format($0, row.unit) } ?? "—", 16, right: true)
        let ratios = row.comparisons.map { comparison -> String in
            let ratio = comparison.value == 0 ? Double.nan : (row.value ?? .nan) / comparison.value
            return String(format: "%.2f× %@", ratio, comparison.peer)
        }
        text += "  " + pad(ratios.joined(separator: ", "), 40)
        if let target = row.target { text += "  " + pad(target, 26) }
        if let met = row.met { text += met ? "  met" : "  NOT met" }
        if let note = row.note { text += "  (\(note))" }
        return text.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
    }

    static func format(_ value: Double, _ unit: String) -> String {
        switch unit {
        case "bit/s":
            value >= 1e9
                ? String(format: "%.2f Gbit/s", value / 1e9)
                : value >= 1e6 ? String(format: "%.2f Mbit/s", value / 1e6) : String(format: "%.2f kbit/s", value / 1e3)
        case "s": value < 1e-3 ? String(format: "%.1f µs", value * 1e6) : String(format: "%.3f ms", value * 1e3)
        case "%": String(format: "%+.3f %%", value)
        case "/s", "/GB": String(format: "%.0f %@", value, unit)
        case "": String(format: "%.4f", value)
        default: String(format: "%.3f %@", value, unit)
        }
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let count = text.count
        guard count < width else { return text }
        let fill = String(repeating: " ", count: width - count)
        return right ? fill + text : text + fill
    }

    /// The rows as JSON for tracking: units are SI (bit/s, s, datagrams or connections per second, %).
    func json(header: [String: Any]) -> Data {
        var object = header
        object["rows"] = rows.map { row -> [String: Any] in
            var entry: [String: Any] = ["group": row.group, "name": row.name, "unit": row.unit]
            entry["value"] = row.value ?? NSNull()
            entry["versus"] = row.comparisons.map {
                ["peer": $0.peer, "value": $0.value, "ratio": (row.value ?? .nan) / $0.value]
            }
            if let target = row.target { entry["target"] = target }
            if let met = row.met { entry["met"] = met }
            if let note = row.note { entry["note"] = note }
            return entry
        }
        return (try? JSONSerialization.data(withJSONObject: sanitised(object), options: [.prettyPrinted, .sortedKeys]))
            ?? Data()
    }

    /// JSON has no NaN or infinity: they become null.
    private func sanitised(_ value: Any) -> Any {
        switch value {
        case let number as Double: number.isFinite ? number : NSNull()
        case let array as [Any]: array.map(sanitised)
        case let dictionary as [String: Any]: dictionary.mapValues(sanitised)
        default: value
        }
    }
}

func flushStandardOutput() { fflush(nil) }

/// The median of `values`, nil when there are none.
func median(_ values: [Double]) -> Double? {
    let sorted = values.filter { $0.isFinite }.sorted()
    guard !sorted.isEmpty else { return nil }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The `p` quantile (0...1) of sorted `values`.
func quantile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

/// The load average over the last minute, from /proc/loadavg.
func loadAverage() -> String {
    let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}
