import Foundation
import LinkModel

/// The plain-text profile format: one `key = value` per line, `#` comments, explicit units.
///
/// The keys are those of `ProfileSettings.all` (docs/reference/profiles.md lists them): per-direction keys for both
/// directions or with an `uplink.` or `downlink.` prefix, connection-wide and whole-profile keys without one.
/// What a profile leaves out keeps `Profile`'s default.
extension Profile {
    /// Parses a whole profile, applying nothing unless every line is valid.
    ///
    /// - Parameters:
    ///   - text: The file's contents.
    ///   - name: The profile's name (a built-in's name or the file's base name).
    ///   - file: The file as the user named it, for error messages; `nil` when there is none.
    ///   - readsFiles: Whether a value may name a file to read (a trace); false for text sent to a running linkcond.
    /// - Throws: `ProfileError` for the first bad line, located by `file` and line number.
    public init(parsing text: String, name: String = "", file: String? = nil, readsFiles: Bool = true)
        throws(ProfileError)
    {
        let reading = Self.read(text, file: file, readsFiles: readsFiles, stopsAtFirstError: true)
        if let error = reading.errors.first { throw error }
        var profile = Profile(name: name)
        for (_, change) in reading.changes.filter({ !$0.key.isDirectional }) { change(&profile) }
        for (_, change) in reading.changes.filter({ $0.key.isDirectional }) { change(&profile) }
        self = profile
    }

    /// Every bad line of a profile, in line order, each located by `file` and line number; empty when it is valid.
    ///
    /// Each line is checked on its own (a profile has no setting whose validity depends on another line), so a
    /// file with several mistakes is fixed in one pass rather than one error per run.
    public static func problems(parsing text: String, file: String? = nil, readsFiles: Bool = true) -> [ProfileError] {
        read(text, file: file, readsFiles: readsFiles, stopsAtFirstError: false).errors
    }

    /// Every bad line of a profile file, or the one error saying why it cannot be read; empty when it is valid.
    public static func problems(inFile path: String, readsFiles: Bool = true) -> [ProfileError] {
        switch UserTextFile.read(path) {
        case .success(let contents): problems(parsing: contents, file: path, readsFiles: readsFiles)
        case .failure(let failure):
            [ProfileError(file: path, kind: .unreadable(reason: failure.reason(for: "profile")))]
        }
    }

    /// The changes of a profile's valid lines and the errors of its bad ones, stopping at the first error when asked.
    private static func read(_ text: String, file: String?, readsFiles: Bool, stopsAtFirstError: Bool) -> (
        changes: [(key: ProfileKey, change: @Sendable (inout Profile) -> Void)], errors: [ProfileError]
    ) {
        let context = SettingContext(directory: file.map(Profile.directory(ofFile:)), readsFiles: readsFiles)
        var firstLine: [String: Int] = [:]
        var changes: [(key: ProfileKey, change: @Sendable (inout Profile) -> Void)] = []
        var errors: [ProfileError] = []
        for (offset, rawLine) in ProfileLine.lines(of: text).enumerated() {
            let number = offset + 1
            do throws(ProfileError) {
                guard let line = try ProfileLine.read(rawLine) else { continue }
                do throws(ProfileError.Kind) {
                    let key = try ProfileKey.named(line.key)
                    if let earlier = firstLine[key.name] { throw .duplicateKey(key.name, firstLine: earlier) }
                    firstLine[key.name] = number
                    changes.append((key, try key.change(for: line.value, context: context)))
                } catch {
                    throw ProfileError(text: line.text, kind: error)
                }
            } catch {
                var located = error
                located.file = file
                located.line = number
                errors.append(located)
                if stopsAtFirstError { break }
            }
        }
        return (changes, errors)
    }

    /// Reads and parses a profile file; its name is the file's base name without `.profile`.
    ///
    /// - Parameters:
    ///   - path: The path as the user gave it; error messages repeat it as given.
    ///   - readsFiles: Whether the profile may name other files (traces); false to check it as a running linkcond
    ///     will, which reads no files.
    public init(contentsOfFile path: String, readsFiles: Bool = true) throws(ProfileError) {
        let text: String
        switch UserTextFile.read(path) {
        case .success(let contents): text = contents
        case .failure(let failure):
            throw ProfileError(file: path, kind: .unreadable(reason: failure.reason(for: "profile")))
        }
        try self.init(parsing: text, name: Profile.name(ofFile: path), file: path, readsFiles: readsFiles)
    }

    /// The directory holding `path`, for paths written relative to it (".") when `path` has none.
    static func directory(ofFile path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The profile name a file gives: its last path component without a `.profile` extension.
    static func name(ofFile path: String) -> String {
        let base = path.split(separator: "/").last.map(String.init) ?? path
        return base.hasSuffix(".profile") && base != ".profile" ? String(base.dropLast(".profile".count)) : base
    }

    /// Applies one `key = value` setting, validated exactly as in a file; used for live changes.
    ///
    /// An unprefixed link key such as `delay` sets both directions. With `readsFiles` false a value naming a file
    /// (a trace) is refused unread, as the control endpoint requires.
    /// - Throws: `ProfileError` without file or line; the profile is unchanged.
    public mutating func set(_ key: String, to value: String, readsFiles: Bool = true) throws(ProfileError) {
        let text = "\(key) = \(value)"
        do {
            let parsedKey = try ProfileKey.named(key.trimmingCharacters(in: .whitespaces))
            let trimmedValue = value.trimmingCharacters(in: .whitespaces)
            let change = try parsedKey.change(
                for: ProfileLine.Value(text: trimmedValue, isQuoted: false),
                context: SettingContext(readsFiles: readsFiles))
            change(&self)
        } catch {
            throw ProfileError(text: text, kind: error)
        }
    }

    /// This profile with one `key = value` setting applied; see `set(_:to:)`.
    public func setting(_ key: String, to value: String) throws(ProfileError) -> Profile {
        var profile = self
        try profile.set(key, to: value)
        return profile
    }

    /// The profile in the file format, fully resolved: every key, both directions explicit, readable units.
    ///
    /// Each setting of `ProfileSettings.all` renders its keys in the table's order: the link's own keys always,
    /// the others only where they differ from their defaults, so a profile that never uses them renders as before.
    /// Connection-wide keys render once, unprefixed.
    /// `Profile(parsing: p.rendered, name: p.name) == p` for every profile whose durations are whole nanoseconds.
    public var rendered: String {
        var lines: [String] = []
        var directionSettings: [any DirectionSetting.Type] = []
        func flushDirections() {
            for (side, direction) in [(ProfileKey.Side.downlink, downlink), (.uplink, uplink)] {
                let prefix = side.rawValue + "."
                lines += directionSettings.flatMap { $0.rendered(direction) }.map { prefix + $0.key + " = " + $0.value }
            }
            directionSettings = []
        }
        for entry in ProfileSettings.all {
            if case .direction(let setting) = entry {
                directionSettings.append(setting)
                continue
            }
            flushDirections()
            let pairs =
                switch entry {
                case .connection(let setting): setting.rendered(connection)
                case .wholeProfile(let setting): setting.rendered(self)
                case .direction: [(key: String, value: String)]()
                }
            lines += pairs.map { $0.key + " = " + $0.value }
        }
        flushDirections()
        return lines.joined(separator: "\n") + "\n"
    }

    /// One line for listings, such as `780 kbit/s down, 330 kbit/s up, 100 ms delay, 0 % loss`: each setting's
    /// words in the table's order, where it has any.
    ///
    /// Rates, delay and loss always appear (as `down/up` pairs when the directions differ); the rest only when
    /// they differ from the defaults.
    public var summary: String {
        ProfileSettings.all.compactMap { entry in
            switch entry {
            case .direction(let setting): setting.summary(downlink: downlink, uplink: uplink)
            case .connection(let setting): setting.summary(connection)
            case .wholeProfile(let setting): setting.summary(self)
            }
        }.joined(separator: ", ")
    }
}

extension DirectionProfile {
    /// `p 1 %, r 25 %` (plus the states' loss rates when not 100 % and 0 %), or `off` under random loss.
    var burstLossSummary: String {
        guard lossModel == .gilbertElliott else { return "off" }
        let model = gilbertElliott
        var text = "p \(ProfileValue.format(model.goodToBad)) r \(ProfileValue.format(model.badToGood))"
        if model.lossInBad != Percentage(100) { text += " loss-bad \(ProfileValue.format(model.lossInBad))" }
        if model.lossInGood != .zero { text += " loss-good \(ProfileValue.format(model.lossInGood))" }
        return text
    }
}
