import Foundation

/// The built-in profiles and the `NAME|PATH` loader the command line uses.
extension Profile {
    /// Every built-in profile, parsed, in listing order: `none`, NLC's set, NLC's older presets, browser presets.
    public static let builtIns: [Profile] = BuiltInProfileTexts.all.map { entry in
        do {
            return try Profile(parsing: entry.text, name: entry.name, file: "\(entry.name).profile")
        } catch {
            preconditionFailure("built-in profile does not parse: \(error)")
        }
    }

    /// The built-in profiles as written in `profiles/`, comments included, in listing order.
    public static var builtInTexts: [(name: String, text: String)] { BuiltInProfileTexts.all }

    /// The names of the built-in profiles, in listing order.
    public static var builtInNames: [String] { builtIns.map(\.name) }

    /// The built-in profile called `name`, ignoring case, spaces, hyphens, underscores and `%`.
    ///
    /// So `3G`, `Edge`, `very bad network`, `Wi-Fi` and `100% Loss` all find their profile.
    public static func builtIn(named name: String) -> Profile? {
        let key = lookupKey(name)
        return builtIns.first { lookupKey($0.name) == key }
    }

    /// A profile from a file or a built-in name, as given on the command line.
    ///
    /// The argument is a file if it contains `/`, ends in `.profile` or names an existing file; errors then name that
    /// path. Otherwise it is a built-in name, and an unknown name is an error listing the closest names
    /// (those within a plausible typo, else the three nearest).
    public static func load(_ nameOrPath: String) throws(ProfileError) -> Profile {
        var isDirectory: ObjCBool = false
        let isFile =
            FileManager.default.fileExists(atPath: nameOrPath, isDirectory: &isDirectory) && !isDirectory.boolValue
        if nameOrPath.contains("/") || nameOrPath.hasSuffix(".profile") || isFile {
            return try Profile(contentsOfFile: nameOrPath)
        }
        if let profile = builtIn(named: nameOrPath) { return profile }
        let asked = lookupKey(nameOrPath)
        let ranked = NameSuggestion.ranked(asked, among: builtInNames.map(lookupKey)).prefix(3)
        let near = ranked.filter { NameSuggestion.editDistance(asked, $0) <= max(2, asked.count / 2) }
        let closest = (near.isEmpty ? Array(ranked) : near).compactMap { key in
            builtInNames.first { lookupKey($0) == key }
        }
        throw ProfileError(kind: .unknownProfile(nameOrPath, closest: closest))
    }

    private static func lookupKey(_ name: String) -> String {
        String(name.lowercased().filter { !" -_%".contains($0) })
    }
}
