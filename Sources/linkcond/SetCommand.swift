import ArgumentParser
import LinkConditioner

/// `linkcond set KEY VALUE…`: changes settings of the running profile, all of them or none.
struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change settings of a running linkcond's profile, all of them or none.",
        discussion: """
            Write each setting as KEY=VALUE, KEY = VALUE or KEY VALUE; a value may have spaces ("800 ms"). \
            Several settings change together in one request, and none changes when one is bad. A word that is a \
            key starts the next setting, so a value that contains one is written KEY="VALUE" in one word.

            Examples:
              linkcond set downlink.delay 300 ms
              linkcond set loss 2 %
              linkcond set downlink.delay=800ms uplink.bandwidth=1Mbit/s
            """)

    /// Every word the options leave, so that a negative value such as `-5 ms` reaches the profile format, which says
    /// what is wrong with it (`.remaining` took `-5` for an unknown option). `words` sorts out `--` and mistyped options.
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp(
            "Settings, such as downlink.delay=800ms or \"loss 2 %\".", valueName: "key=value"),
        completion: .list(ProfileSettings.keyNames))
    var settings: [String] = []

    @OptionGroup var control: ControlOptions

    /// The settings' words without the `--` that may end the options. A quoted word without `=` holds a whole
    /// setting ("loss 2 %", as the help writes it) and is split at its spaces; one with `=` is KEY="VALUE", kept.
    private var words: [String] {
        settings.filter { $0 != "--" }.flatMap { word in
            word.contains("=") ? [word] : word.split(whereSeparator: \.isWhitespace).map(String.init)
        }
    }

    func validate() throws {
        if let option = words.first(where: { $0.hasPrefix("--") }) {
            throw ValidationError("unknown option \"\(option)\"; \"linkcond set --help\" lists the options of set.")
        }
        if words.isEmpty { throw ValidationError("give a setting, such as: linkcond set downlink.delay 300 ms") }
        if words.count == 1, !words[0].contains("=") {
            throw ValidationError("give a value after \(words[0]), such as: linkcond set \(words[0]) 300 ms")
        }
    }

    func run() throws {
        let assignments: [SettingAssignment]
        do {
            // Checked here as the running linkcond will check them, so that a bad one is named and none is sent.
            assignments = try SettingAssignment.parse(words: words)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.badInput
        }
        let body = assignments.map { $0.line + "\n" }.joined()
        _ = try control.perform("POST", "/settings", body: body, quiet: true)
        for assignment in assignments { print(assignment.line) }
    }
}
