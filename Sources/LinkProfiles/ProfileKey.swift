/// One key of the profile format, as written left of `=`, and which entry of `ProfileSettings.all` it sets.
///
/// A per-direction key without `uplink.` or `downlink.` sets both directions; a prefixed key sets one and, in a
/// file, wins over the unprefixed key whatever their order. Connection-wide and whole-profile keys take no prefix:
/// a prefixed connection-wide key is refused rather than half applied.
package struct ProfileKey: Hashable, Sendable {
    /// Which directions a per-direction key sets.
    enum Side: String, CaseIterable, Sendable {
        case both, downlink, uplink
    }

    enum Target: Hashable, Sendable {
        /// A key of a `DirectionSetting`, for one or both directions.
        case direction(String, Side)
        /// A key of a `ConnectionSetting`.
        case connection(String)
        /// A key of a `WholeProfileSetting`.
        case wholeProfile(String)
    }

    var target: Target

    package var name: String {
        switch target {
        case .direction(let key, .both): key
        case .direction(let key, let side): "\(side.rawValue).\(key)"
        case .connection(let key), .wholeProfile(let key): key
        }
    }

    /// The key without its prefix, as the owning setting declares it.
    private var unprefixed: String {
        switch target {
        case .direction(let key, _), .connection(let key), .wholeProfile(let key): key
        }
    }

    /// Whether the key sets one direction only, so it applies after the keys that set both.
    var isDirectional: Bool {
        if case .direction(_, let side) = target { side != .both } else { false }
    }

    /// Every key in the table's order, each per-direction key unprefixed, then for the downlink, then for the
    /// uplink; the link's own keys form a block of their own ahead of the other per-direction settings, so
    /// did-you-mean suggestions, which prefer the earlier of two equally close names, stay as they were.
    static let all: [ProfileKey] = {
        func sided(_ settings: [any DirectionSetting.Type]) -> [ProfileKey] {
            let names = settings.flatMap { $0.keys }
            return Side.allCases.flatMap { side in names.map { ProfileKey(target: .direction($0, side)) } }
        }
        var keys: [ProfileKey] = []
        var pending: [any DirectionSetting.Type] = []
        for entry in ProfileSettings.all {
            if case .direction(let setting) = entry {
                pending.append(setting)
                if ObjectIdentifier(setting) == ObjectIdentifier(LinkShapeSetting.self) {
                    keys += sided(pending)
                    pending = []
                }
                continue
            }
            keys += sided(pending)
            pending = []
            switch entry {
            case .connection(let setting): keys += setting.keys.map { ProfileKey(target: .connection($0)) }
            case .wholeProfile(let setting): keys += setting.keys.map { ProfileKey(target: .wholeProfile($0)) }
            case .direction: break
            }
        }
        return keys + sided(pending)
    }()

    static let allNames = all.map(\.name)

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The key named `name`, or the unknown-key problem with a did-you-mean.
    package static func named(_ name: String) throws(ProfileError.Kind) -> ProfileKey {
        if let key = byName[name] { return key }
        for side in [Side.uplink, .downlink] where name.hasPrefix(side.rawValue + ".") {
            let unprefixed = String(name.dropFirst(side.rawValue.count + 1))
            if let key = byName[unprefixed], !key.isDirectional {
                throw .connectionWideKey(name, unprefixed: unprefixed)
            }
        }
        throw .unknownKey(name, suggestion: .closest(to: name, among: allNames))
    }

    /// The entry of `ProfileSettings.all` that owns the key.
    private var setting: any SettingDeclaration.Type {
        guard let owner = ProfileSettings.owner(of: unprefixed) else { preconditionFailure("every key has an owner") }
        return owner.declaration
    }

    /// What the key expects, for a missing value.
    var expected: String { setting.expected(for: unprefixed) }

    /// Validates `value` and returns the change it makes, so that nothing is applied until every line is valid.
    func change(
        for value: ProfileLine.Value, context: SettingContext = SettingContext()
    ) throws(ProfileError.Kind) -> @Sendable (inout Profile) -> Void {
        let key = unprefixed
        if let setting = setting as? any WholeProfileSetting.Type, setting.acceptsQuotedText {
            return try setting.change(for: key, value: value.text, context: context)
        }
        if value.isQuoted { throw .invalidValue(expected: expected) }
        let text = value.text
        if text.isEmpty { throw .missingValue(expected: expected) }
        switch target {
        case .direction(_, let side):
            guard let setting = setting as? any DirectionSetting.Type else { preconditionFailure("a direction key") }
            let directionChange = try setting.change(for: key, value: text, context: context)
            return { profile in
                if side != .uplink { directionChange(&profile.downlink) }
                if side != .downlink { directionChange(&profile.uplink) }
            }
        case .connection:
            guard let setting = setting as? any ConnectionSetting.Type else { preconditionFailure("a connection key") }
            let connectionChange = try setting.change(for: key, value: text, context: context)
            return { connectionChange(&$0.connection) }
        case .wholeProfile:
            guard let setting = setting as? any WholeProfileSetting.Type else { preconditionFailure("a profile key") }
            return try setting.change(for: key, value: text, context: context)
        }
    }
}
