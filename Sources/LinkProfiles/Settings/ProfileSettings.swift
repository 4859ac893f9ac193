/// A per-direction profile setting declared by the impairment that owns it: its keys, how each is parsed,
/// rendered and summarised, and what the kernel backend cannot do with it.
///
/// Adding one is its own file (the type, its storage in `DirectionProfile`, its test) plus one entry in
/// `DirectionSettings.all`: the parser, `linkcond profile show`, listings and `linkcond tc` pick it up from
/// there, so nothing else needs to know it exists.
public protocol DirectionSetting: Sendable {
    /// The keys this setting owns, without an `uplink.`/`downlink.` prefix (which every key accepts).
    static var keys: [String] { get }
    /// What `key` expects, for error messages.
    static func expected(for key: String) -> String
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
    /// Whether the setting concerns a whole connection rather than one direction (a connect stall, blocked ports,
    /// a captive portal): its keys take no `uplink.`/`downlink.` prefix and are read from the uplink.
    static var isConnectionWide: Bool { get }
    /// Whether the setting acts on datagrams alone (UDP, DNS, exec's packets), so a TCP-only listener ignores it.
    static var isDatagramOnly: Bool { get }
}

extension DirectionSetting {
    public static var isConnectionWide: Bool { false }
    public static var isDatagramOnly: Bool { false }
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

/// The settings that declare themselves, in the order they render.
public enum DirectionSettings {
    public static let all: [any DirectionSetting.Type] = [
        BurstLossSetting.self, DuplicationSetting.self, ReorderSetting.self,
    ] + probabilitySettings + [QueueDisciplineSetting.self, TraceSetting.self] + FaultSettings.directionSettings

    /// The setting that owns unprefixed `key`, if any.
    static func owner(of key: String) -> (any DirectionSetting.Type)? {
        all.first { $0.keys.contains(key) }
    }

    /// The per-direction settings' `key = value` pairs for `direction`, leaving out the connection-wide ones.
    static func rendered(_ direction: DirectionProfile) -> [(key: String, value: String)] {
        all.filter { !$0.isConnectionWide }.flatMap { $0.rendered(direction) }
    }

    /// The connection-wide settings' pairs, read from the uplink, for rendering without a prefix.
    static func renderedConnectionWide(_ uplink: DirectionProfile) -> [(key: String, value: String)] {
        all.filter { $0.isConnectionWide }.flatMap { $0.rendered(uplink) }
    }

    /// One direction's words if both agree, else "X down, Y up" ("default" where one has none); nil if neither.
    public static func pairSummary(
        _ downlink: DirectionProfile, _ uplink: DirectionProfile, _ words: (DirectionProfile) -> String?
    ) -> String? {
        switch (words(downlink), words(uplink)) {
        case (nil, nil): nil
        case let (down?, up?) where down == up: down
        case let (down, up): "\(down ?? "default") down, \(up ?? "default") up"
        }
    }

    /// Every key, across settings, that the kernel backend cannot program for `direction`.
    public static func kernelUnsupported(_ direction: DirectionProfile) -> [String] {
        all.flatMap { $0.kernelUnsupported(direction) }
    }

    /// Every datagram-only key `profile` sets, prefixed by its direction as in `kernelUnsupported`: what a
    /// listener that carries no datagrams ignores.
    public static func datagramOnlyKeys(_ profile: Profile) -> [String] {
        let datagramOnly = all.filter { $0.isDatagramOnly }
        return [("uplink", profile.uplink), ("downlink", profile.downlink)].flatMap { side, direction in
            datagramOnly.flatMap { $0.rendered(direction) }.map { "\(side).\($0.key)" }
        }
    }

    /// Every key `profile` sets that the kernel backend cannot program, as the user would write it: prefixed by
    /// its direction, or bare for a connection-wide key.
    public static func kernelUnsupported(_ profile: Profile) -> [String] {
        let perDirection = all.filter { !$0.isConnectionWide }
        return [("uplink", profile.uplink), ("downlink", profile.downlink)].flatMap { side, direction in
            perDirection.flatMap { $0.kernelUnsupported(direction) }.map { "\(side).\($0)" }
        } + all.filter { $0.isConnectionWide }.flatMap { $0.kernelUnsupported(profile.uplink) }
    }
}
