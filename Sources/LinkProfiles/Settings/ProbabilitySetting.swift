import LinkModel

/// The profile key of a `ProbabilityImpairment`: its `name`, with a percentage, for both directions or with an
/// `uplink.`/`downlink.` prefix. One exists for every such impairment in `ImpairmentKind.all`
/// (`ProfileSettings.probabilitySettings`), so the impairment's registration there is all the settings need.
public enum ProbabilitySetting<Kind: ProbabilityImpairment>: PercentageSetting {
    public static var key: String { Kind.name }
    public static var summaryWord: String { Kind.outcome }
    public static var meaning: String { Kind.effect }
    public static var field: KeyPath<DirectionProfile, Percentage> {
        \.declaredImpairments[DeclaredImpairments.Kind(Kind.self)]
    }

    public static func setting(_ probability: Percentage) -> @Sendable (inout DirectionProfile) -> Void {
        { $0.declaredImpairments[Kind.self] = probability }
    }

    /// Which keys concern datagrams alone: a TCP-only listener is told that it ignores them.
    public static var isDatagramOnly: Bool { true }
}

extension ProfileSettings {
    /// A `ProbabilitySetting` for each probability impairment a datagram link runs, in the order they apply.
    static var probabilitySettings: [any DirectionSetting.Type] {
        ImpairmentKind.all.compactMap { kind in
            (kind.type as? any ProbabilityImpairment.Type).map { setting(for: $0) }
        }
    }

    private static func setting<Kind: ProbabilityImpairment>(for kind: Kind.Type) -> any DirectionSetting.Type {
        ProbabilitySetting<Kind>.self
    }
}
