import ArgumentParser
import Foundation

/// The `linkcond` command line: a thin root whose subcommands live in their own files.
@main
struct Linkcond: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkcond",
        abstract: "A network link conditioner: make apps under test see slow, lossy, far-away networks.",
        subcommands: [
            RunCommand.self, UseCommand.self, SetCommand.self, StatusCommand.self, OfflineCommand.self,
            OnlineCommand.self, ResetCommand.self, ScenarioCommand.self, ProfilesCommand.self, ProfileCommand.self,
            TCCommand.self, TraceCommand.self,
        ]
    )

    /// Parses and runs like ArgumentParser's own `main`, but exits 2 (not 64) on bad usage.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// Exit statuses shared by every subcommand.
enum ExitStatus {
    static let runtimeFailure = ExitCode(1)
    static let badInput = ExitCode(2)
}

/// Writes one line to standard error, where all diagnostics go.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
