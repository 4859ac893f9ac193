import Foundation

/// `blocked.ports` and `blocked.mode`: connections to the listed server ports (`25, 6000-7000`) are refused (the
/// client's connect fails at once) or blackholed (nothing ever answers), as behind a hotel firewall that lets
/// only 80 and 443 through (`blocked.ports = 1-79, 81-442, 444-65535`).
public enum BlockedPortsSetting: ConnectionSetting {
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        case refuse, blackhole
    }

    public static let reference = [
        KeyReference(
            "blocked.ports", value: "ports and ranges (`25, 6000-7000`), or `none`", default: "none",
            meaning: "connections to those server ports fail",
            example: "25, 6000-7000"),
        KeyReference(
            "blocked.mode", value: "`refuse`, `blackhole`", default: "refuse",
            meaning: "refuse: the connect fails at once; blackhole: nothing ever answers",
            example: "blackhole"),
    ]
    /// The most ranges one list may hold, so a check per connection stays cheap.
    static let maximumRanges = 64

    public static func expected(for key: String) -> String {
        key == "blocked.mode"
            ? "one of \(Mode.allCases.map(\.rawValue).joined(separator: ", "))"
            : "ports or port ranges from 1 to 65535 separated by commas, such as \"25, 6000-7000\", or \"none\""
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout ConnectionSettings) -> Void {
        let expected = expected(for: key)
        if key == "blocked.mode" {
            guard let mode = Mode(rawValue: value.lowercased()) else { throw .invalidValue(expected: expected) }
            return { $0.blockedMode = mode }
        }
        if value == "none" { return { $0.blockedPorts = [] } }
        let ranges = try ports(value, expected: expected)
        return { $0.blockedPorts = ranges }
    }

    /// Parses `25, 6000-7000`.
    static func ports(_ value: String, expected: String) throws(ProfileError.Kind) -> [ClosedRange<UInt16>] {
        let items = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !items.isEmpty, items.count <= maximumRanges else { throw .invalidValue(expected: expected) }
        var ranges: [ClosedRange<UInt16>] = []
        for item in items {
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard bounds.count <= 2,
                bounds.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
            else {
                throw .invalidValue(expected: expected)
            }
            let numbers = bounds.map { Int($0.prefix(6)) ?? 0 }
            guard numbers.allSatisfy({ (1...65535).contains($0) }) else { throw .outOfRange(expected: expected) }
            guard numbers[0] <= numbers[numbers.count - 1] else { throw .invalidValue(expected: expected) }
            ranges.append(UInt16(numbers[0])...UInt16(numbers[numbers.count - 1]))
        }
        return ranges
    }

    /// Both keys while ports are blocked, neither otherwise: the mode means nothing without ports.
    public static func rendered(_ faults: ConnectionSettings) -> [(key: String, value: String)] {
        guard !faults.blockedPorts.isEmpty else { return [] }
        let list = faults.blockedPorts.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
        return [("blocked.ports", list.joined(separator: ", ")), ("blocked.mode", faults.blockedMode.rawValue)]
    }

    public static func summary(_ connection: ConnectionSettings) -> String? {
        let outcome = connection.blockedMode == .refuse ? "refused" : "blackholed"
        return rendered(connection).first.map { "ports \($0.value) \(outcome)" }
    }
}

extension ConnectionSettings {
    /// How a connection to `port` is blocked, or nil when it is not.
    package func blocking(port: UInt16) -> BlockedPortsSetting.Mode? {
        blockedPorts.contains { $0.contains(port) } ? blockedMode : nil
    }
}
