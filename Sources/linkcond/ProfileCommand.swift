import ArgumentParser
import LinkConditioner

/// `linkcond profile`: shows and checks single profiles.
struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Show or check a profile.",
        discussion: """
            Examples:
              linkcond profile show 3g
              linkcond profile check my.profile
            """,
        subcommands: [Show.self, Check.self]
    )

    /// `linkcond profile show NAME|PATH`: prints the profile fully resolved in the file format.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a profile with every setting spelled out.",
            discussion: """
                The output is itself a valid profile file: save it, edit it, and pass its path to --profile.

                Example:
                  linkcond profile show edge > train.profile
                """
        )

        @Argument(
            help: ArgumentHelp("A built-in profile name or the path to a .profile file.", valueName: "name-or-path"),
            completion: .list(Profile.builtInNames))
        var profile: String

        func run() throws {
            print(try loadProfileOrExit(profile).rendered, terminator: "")
        }
    }

    /// `linkcond profile check PATH…`: validates profile files, for editors and CI.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that profile files are valid.",
            discussion: """
                Prints "ok PATH" for each valid file, and each error of an invalid one as FILE:LINE (up to \
                \(errorsShown) a file, then how many more); exits 2 if any is invalid.

                Example:
                  linkcond profile check profiles/*.profile
                """
        )

        /// The errors printed for one file; a file wrong on every line would bury the first ones.
        static let errorsShown = 20

        @Argument(
            help: ArgumentHelp("Paths to .profile files.", valueName: "path"),
            completion: .file(extensions: ["profile"]))
        var paths: [String]

        func validate() throws {
            if paths.isEmpty { throw ValidationError("give at least one profile file to check.") }
        }

        func run() throws {
            var allValid = true
            for path in paths {
                let problems = Profile.problems(inFile: path)
                if problems.isEmpty {
                    print("ok \(path)")
                    continue
                }
                allValid = false
                for problem in problems.prefix(Self.errorsShown) { printError("linkcond: \(problem)") }
                let more = problems.count - Self.errorsShown
                if more > 0 { printError("linkcond: \(path): and \(more) more error\(more == 1 ? "" : "s")") }
            }
            if !allValid { throw ExitStatus.badInput }
        }
    }
}
