import LinkModel

/// A datagram impairment set by one percentage key: `duplicate` (`Duplication`) or `reorder` (`Reordering`).
public protocol PercentageSetting: DirectionSetting {
    static var key: String { get }
    /// One sentence for the profile-key reference.
    static var meaning: String { get }
    /// Words after the value in `linkcond profiles`, such as "duplicated".
    static var summaryWord: String { get }
    static var field: KeyPath<DirectionProfile, Percentage> { get }
    /// The change setting the percentage to `probability`.
    static func setting(_ probability: Percentage) -> @Sendable (inout DirectionProfile) -> Void
}

extension PercentageSetting {
    public static var reference: [KeyReference] {
        [KeyReference(key, value: "percent", default: "0 %", meaning: meaning, example: "5 %")]
    }

    public static var kernelSupport: KernelSupport { .refused }
    public static var referenceSection: ReferenceSection { .datagram }

    public static func expected(for key: String) -> String { ProfileValue.expectedPercentage }

    public static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void {
        setting(try ProfileValue.percentage(value))
    }

    public static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        direction[keyPath: field] == .zero ? [] : [(key, ProfileValue.format(direction[keyPath: field]))]
    }

    public static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String? {
        let down = downlink[keyPath: field]
        let up = uplink[keyPath: field]
        guard down != .zero || up != .zero else { return nil }
        let value = down == up ? ProfileValue.format(down) : "\(ProfileValue.format(down))/\(ProfileValue.format(up))"
        return "\(value) \(summaryWord)"
    }

    /// The kernel backend does not program datagram duplication or reordering yet.
    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        direction[keyPath: field] == .zero ? [] : [key]
    }
}

/// `duplicate`: the probability that a datagram is delivered twice.
public enum DuplicationSetting: PercentageSetting {
    public static let key = "duplicate"
    public static let summaryWord = "duplicated"
    public static let meaning =
        "probability that a datagram is delivered twice; the copy arrives with it; it is made "
        + "after the bottleneck, so it costs no serialisation (netem charges its copy one)"
    public static var field: KeyPath<DirectionProfile, Percentage> { \.duplicate }

    public static func setting(_ probability: Percentage) -> @Sendable (inout DirectionProfile) -> Void {
        { $0.duplicate = probability }
    }
}

/// `reorder`: the probability that a datagram is held back behind later ones.
public enum ReorderSetting: PercentageSetting {
    public static let key = "reorder"
    public static let summaryWord = "reordered"
    public static let meaning =
        "probability that a datagram is held back after its delay by the one-way `delay`, at "
        + "least 10 ms, so later datagrams overtake it"
    public static var field: KeyPath<DirectionProfile, Percentage> { \.reorder }

    public static func setting(_ probability: Percentage) -> @Sendable (inout DirectionProfile) -> Void {
        { $0.reorder = probability }
    }
}
