import LinkModel

/// A per-direction fault set by one duration key and off at zero (`close.delay`, `first-byte.delay`): its parsing,
/// rendering, summary and kernel refusal, which every such fault shares.
public protocol DurationFaultSetting: DirectionSetting {
    /// The key, without an `uplink.`/`downlink.` prefix.
    static var key: String { get }
    /// The key's line in the profile-key reference.
    static var keyReference: KeyReference { get }
    /// Where the duration is kept in a direction's faults.
    static var field: KeyPath<FaultSettings, Duration> { get }
    /// The change setting the duration to `delay`.
    static func setting(_ delay: Duration) -> @Sendable (inout DirectionProfile) -> Void
    /// The words `linkcond profiles` shows for the rendered `value`, such as "close 2 s late".
    static func summary(value: String) -> String
}

extension DurationFaultSetting {
    public static var reference: [KeyReference] { [keyReference] }
    public static var kernelSupport: KernelSupport { .refused }
    public static var referenceSection: ReferenceSection { .faults }

    public static func expected(for key: String) -> String { ProfileValue.expectedDuration }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        setting(try ProfileValue.duration(value))
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        let delay = direction.faults[keyPath: field]
        return delay == .zero ? [] : [(key, ProfileValue.format(delay))]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        ProfileSettings.pairSummary(downlink, uplink) { rendered($0).first.map { summary(value: $0.value) } }
    }

    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] { rendered(direction).map(\.key) }
}
