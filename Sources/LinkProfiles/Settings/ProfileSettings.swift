/// What the profile-key reference says of one key, and a value other than its default for tests to set.
public struct KeyReference: Sendable {
    /// The key without an `uplink.`/`downlink.` prefix.
    public var key: String
    /// The values it takes, as the reference words them.
    public var value: String
    /// Its default, as the reference words it.
    public var defaultValue: String
    /// One sentence: what it does.
    public var meaning: String
    /// A value other than the default, which `linkcond profile show` renders back unchanged.
    public var example: String

    public init(_ key: String, value: String, default defaultValue: String, meaning: String, example: String) {
        self.key = key
        self.value = value
        self.defaultValue = defaultValue
        self.meaning = meaning
        self.example = example
    }
}

/// What the kernel backend (`linkcond tc`) does with a setting.
public enum KernelSupport: Sendable, Hashable {
    /// It programs the setting.
    case programmed
    /// It programs some values and refuses the others, described in a few words ("fifo only").
    case partly(String)
    /// It refuses a profile that sets it.
    case refused
    /// It has no kernel counterpart and is left out silently.
    case ignored
}

/// What every setting declares, whatever it sets: its keys and what the reference says of them.
public protocol SettingDeclaration: Sendable {
    /// The keys this setting owns, without an `uplink.`/`downlink.` prefix, each with its reference line.
    static var reference: [KeyReference] { get }
    /// What `key` expects, for error messages.
    static func expected(for key: String) -> String
    /// Whether the setting acts on datagrams alone (UDP, DNS, exec's packets), so a TCP-only listener ignores it.
    static var isDatagramOnly: Bool { get }
    /// What the kernel backend does with the setting.
    static var kernelSupport: KernelSupport { get }
    /// The table of the profile-key reference that lists the setting's keys.
    static var referenceSection: ReferenceSection { get }
}

extension SettingDeclaration {
    public static var isDatagramOnly: Bool { false }
    /// The keys, in reference order.
    public static var keys: [String] { reference.map(\.key) }
}

/// A setting of one direction, stored in `DirectionProfile`: a key without a prefix sets both directions, one
/// with `uplink.` or `downlink.` sets that one.
///
/// Adding one is its own file (the type, its storage in `DirectionProfile`, its test) plus one entry in
/// `ProfileSettings.all`: the parser, `linkcond profile show`, `set`, completions, listings, `linkcond tc` and the
/// profile-key reference pick it up from there, so nothing else needs to know it exists.
public protocol DirectionSetting: SettingDeclaration {
    /// Validates `value` for `key` and returns the change it makes; nothing is applied until every line is valid.
    static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout DirectionProfile) -> Void
    /// The `key = value` pairs that describe `direction`'s setting, omitted where it is at its default.
    static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)]
    /// A few words for `linkcond profiles` about both directions, or nil where both are at the default.
    static func summary(downlink: DirectionProfile, uplink: DirectionProfile) -> String?
    /// The keys the kernel backend cannot program for `direction` (empty when it can, or the setting is off).
    static func kernelUnsupported(_ direction: DirectionProfile) -> [String]
}

/// A setting of a whole connection (a connect stall, blocked ports, a captive portal), stored once in
/// `Profile.connection`: its keys take no `uplink.`/`downlink.` prefix.
public protocol ConnectionSetting: SettingDeclaration {
    /// Validates `value` for `key` and returns the change it makes; nothing is applied until every line is valid.
    static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout ConnectionSettings) -> Void
    /// The `key = value` pairs that describe the setting, omitted where it is at its default.
    static func rendered(_ connection: ConnectionSettings) -> [(key: String, value: String)]
    /// A few words for `linkcond profiles`, or nil where the setting is at its default.
    static func summary(_ connection: ConnectionSettings) -> String?
}

extension ConnectionSetting {
    public static var kernelSupport: KernelSupport { .refused }
    public static var referenceSection: ReferenceSection { .faults }
}

/// A setting of the profile as a whole (`description`, `tcp.*`, `dns.delay`, `fault`, `seed`, `exclude`).
public protocol WholeProfileSetting: SettingDeclaration {
    /// Validates `value` for `key` and returns the change it makes. `value` arrives unquoted and not empty
    /// except for keys that `acceptsQuotedText`.
    static func change(
        for key: String, value: String, context: SettingContext
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void
    /// The `key = value` pairs that describe the setting; which of them appear at their default is the setting's.
    static func rendered(_ profile: Profile) -> [(key: String, value: String)]
    /// A few words for `linkcond profiles`, or nil where the setting adds none.
    static func summary(_ profile: Profile) -> String?
    /// Whether the value is free text, taken as written: it may be quoted or empty.
    static var acceptsQuotedText: Bool { get }
}

extension WholeProfileSetting {
    public static var acceptsQuotedText: Bool { false }
    public static var referenceSection: ReferenceSection { .wholeProfile }
}

/// Where a setting's value was written, for values that name files (a trace next to its profile).
public struct SettingContext: Sendable {
    /// The directory of the profile or scenario file, or nil for a setting given on its own (`linkcond set`),
    /// whose relative paths start from the working directory.
    public var directory: String?
    /// Whether a value may name a file to read. False for text that came through the control endpoint, which
    /// opens no file on a caller's behalf: a value naming one is refused where it is written, before any read.
    public var readsFiles: Bool

    public init(directory: String? = nil, readsFiles: Bool = true) {
        self.directory = directory
        self.readsFiles = readsFiles
    }
}

/// One entry of the settings table: a setting and how far it reaches.
public enum ProfileSetting: Sendable {
    case direction(any DirectionSetting.Type)
    case connection(any ConnectionSetting.Type)
    case wholeProfile(any WholeProfileSetting.Type)

    /// The setting's declaration, whatever its kind.
    public var declaration: any SettingDeclaration.Type {
        switch self {
        case .direction(let setting): setting
        case .connection(let setting): setting
        case .wholeProfile(let setting): setting
        }
    }
}

/// The one table of profile settings, in the order profiles render them and listings summarise them: the profile
/// parser, `linkcond profile show`, `linkcond set`, `POST /settings`, scenario `set` steps, shell completions, the
/// kernel backend's refusals, the TCP-only notice and the profile-key reference all read it.
public enum ProfileSettings {
    public static let all: [ProfileSetting] =
        [
            .wholeProfile(DescriptionSetting.self), .direction(LinkShapeSetting.self),
            .direction(RateAccountingSetting.self),
        ]
        + directionSettings.map(ProfileSetting.direction)
        + [
            .connection(ConnectStallSetting.self), .connection(BlockedPortsSetting.self),
            .connection(CaptivePortalSetting.self),
        ]
        + [
            .wholeProfile(TCPSenderSetting.self), .wholeProfile(DNSDelaySetting.self),
            .wholeProfile(ConnectionFaultSetting.self), .wholeProfile(SeedSetting.self),
            .wholeProfile(ExcludeSetting.self),
        ]

    /// The per-direction settings after the link's own, in rendering order: datagram impairments, the queue and
    /// the trace, then the stream faults in the order their stages see the bytes (the composition's
    /// `StreamFaultSettings.all` keeps this order).
    static var directionSettings: [any DirectionSetting.Type] {
        [BurstLossSetting.self, DuplicationSetting.self, ReorderSetting.self] + probabilitySettings
            + [QueueDisciplineSetting.self, TraceSetting.self]
            + [CutSetting.self, FirstByteDelaySetting.self, SliceSetting.self, SlowCloseSetting.self]
    }

    /// Every per-direction setting, the link's own first.
    public static let perDirection: [any DirectionSetting.Type] = all.compactMap {
        if case .direction(let setting) = $0 { setting } else { nil }
    }

    /// Every connection-wide setting.
    static let connectionWide: [any ConnectionSetting.Type] = all.compactMap {
        if case .connection(let setting) = $0 { setting } else { nil }
    }

    /// The entry that owns unprefixed `key`, if any.
    static func owner(of key: String) -> ProfileSetting? {
        all.first { $0.declaration.keys.contains(key) }
    }

    /// Every key as a user may write it, for shell completion: each unprefixed key, then the prefixed ones.
    public static var keyNames: [String] { ProfileKey.allNames }

    /// One direction's words if both agree, else "X down, Y up" ("default" where one has none); nil if neither.
    public static func pairSummary(
        _ downlink: DirectionProfile, _ uplink: DirectionProfile, _ words: (DirectionProfile) -> String?
    ) -> String? {
        switch (words(downlink), words(uplink)) {
        case (nil, nil): nil
        case (let down?, let up?) where down == up: down
        case (let down, let up): "\(down ?? "default") down, \(up ?? "default") up"
        }
    }

    /// Every key, across settings, that the kernel backend cannot program for `direction`.
    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        perDirection.flatMap { $0.kernelUnsupported(direction) }
    }

    /// Every datagram-only key `profile` sets, prefixed by its direction as in `kernelUnsupported`: what a
    /// listener that carries no datagrams ignores.
    public static func datagramOnlyKeys(_ profile: Profile) -> [String] {
        let datagramOnly = perDirection.filter { $0.isDatagramOnly }
        return [("uplink", profile.uplink), ("downlink", profile.downlink)].flatMap { side, direction in
            datagramOnly.flatMap { $0.rendered(direction) }.map { "\(side).\($0.key)" }
        }
    }

    /// Every key `profile` sets that the kernel backend cannot program, as the user would write it: prefixed by
    /// its direction, or bare for a connection-wide key.
    public static func kernelUnsupported(_ profile: Profile) -> [String] {
        [("uplink", profile.uplink), ("downlink", profile.downlink)].flatMap { side, direction in
            perDirection.flatMap { $0.kernelUnsupported(direction) }.map { "\(side).\($0)" }
        } + connectionWide.flatMap { $0.rendered(profile.connection).prefix(1).map(\.key) }
    }
}
