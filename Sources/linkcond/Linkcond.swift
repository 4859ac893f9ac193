import ArgumentParser
import Foundation
import LinkConditioner

/// The `linkcond` command line: a thin root whose subcommands live in their own files.
@main
struct Linkcond: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkcond",
        abstract: "A network link conditioner: make apps under test see slow, lossy, far-away networks.",
        discussion: """
            Examples:
              linkcond run --profile 3g            a local SOCKS5 and HTTP proxy on 3G
              linkcond exec --profile 3g -- ./app  one program, whole, on 3G
              linkcond use edge                    switch the running one to Edge
              linkcond ps                          list the running instances
              linkcond profiles                    list the built-in profiles

            Exit status: 0 success, 1 runtime failure (address in use, no running linkcond, kernel refusal), \
            2 bad usage or bad input (an unknown option, a bad profile, scenario or value).
            """,
        version: linkcondVersion,
        subcommands: [
            RunCommand.self, ExecCommand.self, AttachCommand.self, PsCommand.self, UseCommand.self, SetCommand.self,
            StatusCommand.self,
            OfflineCommand.self,
            OnlineCommand.self, ResetCommand.self, ScenarioCommand.self, ProfilesCommand.self, ProfileCommand.self,
            TCCommand.self, TraceCommand.self, DashboardCommand.self, ReportCommand.self,
        ]
    )

    /// The narrowest help text: the argument parser traps when it wraps help into fewer columns.
    static let helpColumns = 40

    /// Parses and runs like ArgumentParser's own `main`, but exits 2 (not 64) on bad usage, and starts usage
    /// errors with "linkcond:" as every other diagnostic does.
    static func main() {
        if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == ExecNamespace.helperCommand {
            ExecNamespace.runHelper(Array(CommandLine.arguments.dropFirst(2)))
        }
        var arguments = Array(CommandLine.arguments.dropFirst())
        if ToxiproxyServerPersonality.isInvoked(as: CommandLine.arguments.first) {
            do {
                arguments = try ToxiproxyServerPersonality.runArguments(for: arguments)
            } catch {
                write((error.isHelp ? "" : "toxiproxy-server: ") + error.description + "\n", to: .standardError)
                Foundation.exit(error.isHelp ? 0 : 2)
            }
        } else if arguments.first == ContainerEntrypoint.command {
            do {
                arguments = try ContainerEntrypoint.runArguments(
                    for: Array(arguments.dropFirst()),
                    environment: ProcessInfo.processInfo.environment)
            } catch {
                write((error.isHelp ? "" : "linkcond container: ") + error.description + "\n", to: .standardError)
                Foundation.exit(error.isHelp ? 0 : 2)
            }
        }
        let options = arguments.prefix { $0 != "--" }
        if options.isEmpty || options.contains(where: { ["--help", "-h", "help"].contains($0) }) {
            Terminal.widenColumnsVariable(toAtLeast: helpColumns)
        }
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure, arguments.first == ExecCommand.configuration.commandName,
                let fixed = ExecCommand.withTerminator(Array(arguments.dropFirst()))
            {
                printError("linkcond: put -- before the program, so that its options stay its own: \(fixed)")
                Foundation.exit(2)
            }
            if code == .validationFailure {
                var message = fullMessage(for: error)
                if message.hasPrefix("Error: ") { message = "linkcond: " + message.dropFirst("Error: ".count) }
                write(message + "\n", to: .standardError)
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

/// Writes one line to standard error, where all diagnostics go. Messages carry paths, names and file contents
/// from others, so its control characters are shown escaped (`TerminalText`): a newline in it cannot start a line.
func printError(_ message: String) {
    write(TerminalText.escaped(message) + "\n", to: .standardError)
}

/// Writes `text` to standard output or error, losing it when nobody reads any more (`linkcond run | true`: EPIPE,
/// since linkcond blocks SIGPIPE for its sockets) or the descriptor is closed, as `print` does. FileHandle's
/// `write(_:)` traps on any error instead.
func write(_ text: String, to handle: FileHandle) {
    try? handle.write(contentsOf: Data(text.utf8))
}
