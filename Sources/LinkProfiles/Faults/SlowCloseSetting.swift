/// `close.delay`: the end of the stream (the FIN) reaches the other side this long after it arrived, as
/// Toxiproxy's slow_close does.
public enum SlowCloseSetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "close.delay", value: "duration", default: "0 ms",
            meaning: "the end of the stream (FIN) arrives that much after the data: a slow close",
            example: "2 s")
    ]
    public static let kernelSupport = KernelSupport.refused
    public static let referenceSection = ReferenceSection.faults

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let delay = try ProfileValue.duration(value)
        return { $0.faults.closeDelay = delay }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.faults.closeDelay == .zero ? [] : [("close.delay", ProfileValue.format(direction.faults.closeDelay))]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) { rendered($0).first.map { "close \($0.value) late" } }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { rendered(direction).map(\.key) }
}
