/// `connect.stall`: every new connection waits this long before linkcond connects to the server, as behind a
/// firewall that asks the user for permission or a SYN lost twice. The client's connect has completed (linkcond
/// accepted it), so the client sees its first response late, or its own connect timeout through a proxy.
public enum ConnectStallSetting: ConnectionSetting {
    public static let reference = [
        KeyReference(
            "connect.stall", value: "duration", default: "0 ms",
            meaning: "every new connection waits that long before linkcond connects to the server (a firewall prompt, "
                + "a SYN lost twice)",
            example: "5 s")
    ]

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout ConnectionSettings) -> Void {
        let stall = try ProfileValue.duration(value)
        return { $0.connectStall = stall }
    }

    public static func rendered(_ connection: ConnectionSettings) -> [(key: String, value: String)] {
        connection.connectStall == .zero ? [] : [("connect.stall", ProfileValue.format(connection.connectStall))]
    }

    public static func summary(_ connection: ConnectionSettings) -> String? {
        rendered(connection).first.map { "connects stall \($0.value)" }
    }
}
