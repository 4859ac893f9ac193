/// `connect.stall`: every new connection waits this long before linkcond connects to the server, as behind a
/// firewall that asks the user for permission or a SYN lost twice. The client's connect has completed (linkcond
/// accepted it), so the client sees its first response late, or its own connect timeout through a proxy.
public enum ConnectStallSetting: DirectionSetting {
    public static let isConnectionWide = true
    public static let keys = ["connect.stall"]

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let stall = try ProfileValue.duration(value)
        return { $0.faults.connectStall = stall }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.faults.connectStall == .zero ? [] : [("connect.stall", ProfileValue.format(direction.faults.connectStall))]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        rendered(uplink).first.map { "connects stall \($0.value)" }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { rendered(direction).map(\.key) }
}
