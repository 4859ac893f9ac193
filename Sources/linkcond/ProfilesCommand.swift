import ArgumentParser
import LinkConditioner

/// `linkcond profiles`: lists the built-in profiles, one line each, name then summary.
struct ProfilesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profiles",
        abstract: "List the built-in profiles with what each does.",
        discussion: """
            Use a name with "linkcond run --profile NAME"; "linkcond profile show NAME" prints one in full.

            Example:
              linkcond profiles
            """
    )

    func run() throws {
        let width = Profile.builtInNames.map(\.count).max() ?? 0
        for profile in Profile.builtIns {
            let padding = String(repeating: " ", count: width - profile.name.count)
            print("\(profile.name)\(padding)  \(profile.summary)")
        }
    }
}
