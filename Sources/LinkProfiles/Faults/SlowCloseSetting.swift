/// `close.delay`: the end of the stream (the FIN) reaches the other side this long after it arrived, as
/// Toxiproxy's slow_close does.
public enum SlowCloseSetting: DurationFaultSetting {
    public static let key = "close.delay"
    public static let keyReference = KeyReference(
        key, value: "duration", default: "0 ms",
        meaning: "the end of the stream (FIN) arrives that much after the data: a slow close",
        example: "2 s")
    public static var field: KeyPath<FaultSettings, Duration> { \.closeDelay }

    public static func setting(_ delay: Duration) -> @Sendable (inout DirectionProfile) -> Void {
        { $0.faults.closeDelay = delay }
    }

    public static func summary(value: String) -> String { "close \(value) late" }
}
