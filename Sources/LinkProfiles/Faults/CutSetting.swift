extension FaultSettings {
    /// Where a cut happens.
    public enum CutPoint: Hashable, Sendable {
        /// After this many bytes of the direction have passed.
        case bytes(Int)
        /// This long after the connection opened.
        case time(Duration)
    }
}

/// `cut.after` and `cut.mode`: a live connection is cut after a number of bytes of this direction, or a time after
/// it opened; the cut resets it, or leaves it hanging silently (a cable unplugged), or closes it.
public enum CutSetting: DirectionSetting {
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        case reset, hang, close
    }

    public static let reference = [
        KeyReference(
            "cut.after", value: "size, duration, or `none`", default: "none",
            meaning: "after that many bytes of the direction (exactly those arrive), or that long after the "
                + "connection opened, the connection is cut",
            example: "65536 B"),
        KeyReference(
            "cut.mode", value: "`reset`, `hang`, `close`", default: "reset",
            meaning: "reset: `Connection reset by peer`; hang: no more data and no end, until the client's own "
                + "timeout (\"cable unplugged\"); close: an early end of stream",
            example: "hang"),
    ]
    public static let kernelSupport = KernelSupport.refused
    public static let referenceSection = ReferenceSection.faults

    public static func expected(for key: String) -> String {
        key == "cut.mode"
            ? "one of \(Mode.allCases.map(\.rawValue).joined(separator: ", "))"
            : "a size such as \"64 KiB\" (1 B to 1024 MiB) or a duration such as \"10 s\" (0 ms to 3600 s), or \"none\""
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let expected = expected(for: key)
        if key == "cut.mode" {
            guard let mode = Mode(rawValue: value.lowercased()) else { throw .invalidValue(expected: expected) }
            return { $0.faults.cutMode = mode }
        }
        if value == "none" { return { $0.faults.cutAfter = nil } }
        let point: FaultSettings.CutPoint
        do {
            point = .time(try ProfileValue.duration(value))
        } catch .outOfRange {
            throw .outOfRange(expected: expected)
        } catch .negativeValue {
            throw .negativeValue(expected: expected)
        } catch {
            if value.hasSuffix("packets") || value.hasSuffix("packet") { throw .invalidValue(expected: expected) }
            point = .bytes(try ProfileValue.size(value, expected: expected).bytes)
        }
        return { $0.faults.cutAfter = point }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        guard let cut = direction.faults.cutAfter else { return [] }
        let point =
            switch cut {
            case .bytes(let bytes): "\(bytes) B"
            case .time(let time): ProfileValue.format(time)
            }
        return [("cut.after", point), ("cut.mode", direction.faults.cutMode.rawValue)]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) { direction in
            direction.faults.cutAfter.map { _ in
                "cut (\(direction.faults.cutMode.rawValue)) after \(rendered(direction)[0].value)"
            }
        }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction.faults.cutAfter == nil ? [] : ["cut.after"]
    }
}
