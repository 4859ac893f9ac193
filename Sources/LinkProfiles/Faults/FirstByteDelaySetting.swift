/// `first-byte.delay`: the first byte of every turn in this direction waits this long: with
/// `downlink.first-byte.delay`, every response (what the server sends after the client spoke) starts late, as an
/// overloaded server's would.
public enum FirstByteDelaySetting: DurationFaultSetting {
    public static let key = "first-byte.delay"
    public static let keyReference = KeyReference(
        key, value: "duration", default: "0 ms",
        meaning: "the first byte of each turn of the direction waits: `downlink.first-byte.delay = 45 s` is the "
            + "server that answers every request 45 s late",
        example: "45 s")
    public static var field: KeyPath<FaultSettings, Duration> { \.firstByteDelay }

    public static func setting(_ delay: Duration) -> @Sendable (inout DirectionProfile) -> Void {
        { $0.faults.firstByteDelay = delay }
    }

    public static func summary(value: String) -> String { "first byte \(value) late" }
}
