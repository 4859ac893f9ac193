/// `first-byte.delay`: the first byte of every turn in this direction waits this long: with
/// `downlink.first-byte.delay`, every response (what the server sends after the client spoke) starts late, as an
/// overloaded server's would.
public enum FirstByteDelaySetting: DirectionSetting {
    public static let reference = [
        KeyReference(
            "first-byte.delay", value: "duration", default: "0 ms",
            meaning: "the first byte of each turn of the direction waits: `downlink.first-byte.delay = 45 s` is the "
                + "server that answers every request 45 s late",
            example: "45 s")
    ]
    public static let kernelSupport = KernelSupport.refused
    public static let referenceSection = ReferenceSection.faults

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let delay = try ProfileValue.duration(value)
        return { $0.faults.firstByteDelay = delay }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.faults.firstByteDelay == .zero
            ? [] : [("first-byte.delay", ProfileValue.format(direction.faults.firstByteDelay))]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) { rendered($0).first.map { "first byte \($0.value) late" } }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { rendered(direction).map(\.key) }
}
