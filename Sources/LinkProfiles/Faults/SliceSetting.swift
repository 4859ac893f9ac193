/// `slice.size`, `slice.variation` and `slice.delay`: data leaves in writes of `size` ± `variation` bytes with
/// `delay` between them, as Toxiproxy's slicer does; the receiver sees many small reads. A variation of
/// `slice.size` or more is narrowed to `slice.size` − 1 B.
public enum SliceSetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "slice.size", value: "size, or `none`", default: "none",
            meaning: "data arrives in writes of this size: a reader sees many small reads",
            example: "100 B"),
        KeyReference(
            "slice.variation", value: "size", default: "0 B",
            meaning: "each write's size varies by up to this much either way",
            example: "10 B"),
        KeyReference(
            "slice.delay", value: "duration", default: "0 ms",
            meaning: "the time between two writes",
            example: "1 ms"),
    ]
    public static let kernelSupport = KernelSupport.refused
    public static let referenceSection = ReferenceSection.faults

    public static func expected(for key: String) -> String {
        switch key {
        case "slice.size": "a size such as \"1 B\" or \"100 B\" (1 B to 1024 MiB), or \"none\""
        case "slice.variation": "a size smaller than slice.size, such as \"10 B\", or \"0 B\""
        default: ProfileValue.expectedDuration
        }
    }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let expected = expected(for: key)
        switch key {
        case "slice.size":
            if value == "none" { return { $0.faults.sliceSize = nil } }
            let size = try ProfileValue.size(value, expected: expected).bytes
            return { $0.faults.sliceSize = size }
        case "slice.variation":
            let variation = value == "0 B" ? 0 : try ProfileValue.size(value, expected: expected).bytes
            return { $0.faults.sliceVariation = variation }
        default:
            let delay = try ProfileValue.duration(value)
            return { $0.faults.sliceDelay = delay }
        }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        let faults = direction.faults
        guard let size = faults.sliceSize else { return [] }
        var lines = [(key: "slice.size", value: "\(size) B")]
        if faults.sliceVariation > 0 { lines.append(("slice.variation", "\(faults.sliceVariation) B")) }
        if faults.sliceDelay > .zero { lines.append(("slice.delay", ProfileValue.format(faults.sliceDelay))) }
        return lines
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) { $0.faults.sliceSize.map { "sliced into \($0) B writes" } }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction.faults.sliceSize == nil ? [] : ["slice.size"]
    }
}
