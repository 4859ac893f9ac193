/// `first-byte.delay`: the first byte of every turn in this direction waits this long: with
/// `downlink.first-byte.delay`, every response (what the server sends after the client spoke) starts late, as an
/// overloaded server's would.
public enum FirstByteDelaySetting: StreamFaultSetting {
    public static let keys = ["first-byte.delay"]

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        let delay = try ProfileValue.duration(value)
        return { $0.faults.firstByteDelay = delay }
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction.faults.firstByteDelay == .zero ? [] : [("first-byte.delay", ProfileValue.format(direction.faults.firstByteDelay))]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        DirectionSettings.pairSummary(downlink, uplink) { rendered($0).first.map { "first byte \($0.value) late" } }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { rendered(direction).map(\.key) }

    static func makeEffect(for direction: DirectionProfile, random: SeededRandom) -> ToxicEffect? {
        direction.faults.firstByteDelay == .zero ? nil : FirstByteDelay(delay: direction.faults.firstByteDelay)
    }
}

/// Holds the first bytes of each new turn of its direction by `delay` from when they were read; the rest of the
/// turn follows them in order.
final class FirstByteDelay: ToxicEffect {
    let delay: Duration

    init(delay: Duration) { self.delay = delay }

    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage) {
        guard stage.turn.speaker != stage.side, !pieces.isEmpty else { return }
        pieces[0].due = max(pieces[0].due, now + delay)
    }
}
